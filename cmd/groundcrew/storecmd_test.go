package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

func TestStoreCopy_CopiesEverythingAndVerifies(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	path := filepath.Join(t.TempDir(), "gc.db")
	src, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	t0 := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	spec := &runbookmodel.Runbook{Name: "worker-stalled", Title: "Worker stalled"}
	for i := range 5 {
		id := fmt.Sprintf("r-%d", i)
		r := &runmodel.Run{ID: id, Runbook: "worker-stalled", State: runmodel.RunRunning, Spec: spec, CreatedAt: t0.Add(time.Duration(i) * time.Minute),
			Conversation: chatmodel.Conversation{Platform: "slack", Channel: "C1", Thread: "T" + id}}
		require.NoError(t, src.CreateRun(ctx, r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}},
			Audit:    []runmodel.AuditEntry{{Time: r.CreatedAt, Actor: "ana", Action: runmodel.ActionRunStarted}},
			Messages: []runmodel.MessageIndex{{Ref: chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "m" + id}, RunID: id, Role: chatmodel.RoleRoot}}}))
		if i%2 == 0 {
			_, err := src.UpdateRun(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error {
				r.State, r.FinishedAt = runmodel.RunSucceeded, r.CreatedAt.Add(time.Minute)
				b.Note(runmodel.JournalEntry{Type: runmodel.JIntent, Step: "prune"})
				b.Note(runmodel.JournalEntry{Type: runmodel.JOutcome, Step: "prune", Outcome: "ok"})
				return nil
			})
			require.NoError(t, err)
		}
	}
	require.NoError(t, src.AppendAudit(ctx, runmodel.AuditEntry{Time: t0, Actor: "bob", Action: runmodel.ActionRunRefused}))
	_, err = src.SeenEvent(ctx, "ev-1", t0)
	require.NoError(t, err)
	require.NoError(t, src.PutOutbox(ctx, runmodel.OutboxItem{ID: "o1", Message: chatmodel.Message{Text: "hi"}, NextTry: t0}))
	require.NoError(t, src.SaveDigest(ctx, "daily", digest.Record{Fire: t0}))
	require.NoError(t, src.PutKV(ctx, "k", []byte("v")))
	_, err = src.UpsertIncident(ctx, "k1", func(*incident.Incident) (*incident.Incident, error) {
		return &incident.Incident{ID: "i-1", Key: "k1", State: incident.StateOpen, OpenedAt: t0,
			Root: chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "inc"}}, nil
	})
	require.NoError(t, err)
	head, err := src.AuditHead(ctx)
	require.NoError(t, err)
	require.NoError(t, src.Close())

	var out []string
	say := func(f string, a ...any) { out = append(out, fmt.Sprintf(f, a...)) }
	require.NoError(t, storeCopy(ctx, path, dsn, say))
	assert.Contains(t, out[len(out)-2], "audit chain verified: 6 entries")

	dst, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	defer dst.Close()
	c, err := dst.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, pgstore.Counts{Runs: 5, Journal: 11, Audit: 6, Messages: 5, Events: 1, Outbox: 1, Digests: 1, KV: 1, Incidents: 1}, c)
	require.NoError(t, dst.VerifyAuditHead(ctx, head), "a checkpoint published before the copy verifies after it")
	r, err := dst.GetRun(ctx, "r-2")
	require.NoError(t, err)
	assert.Equal(t, runmodel.RunSucceeded, r.State)
	require.NotNil(t, r.Spec)
	assert.Equal(t, "Worker stalled", r.Spec.Title)
	act, err := dst.ListRuns(ctx, runmodel.RunQuery{Active: true})
	require.NoError(t, err)
	assert.Len(t, act, 2)
	idx, err := dst.RunByMessage(ctx, chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "mr-3"})
	require.NoError(t, err)
	assert.Equal(t, "r-3", idx.RunID)
	in, err := dst.IncidentByMessage(ctx, chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "inc"})
	require.NoError(t, err)
	assert.Equal(t, "i-1", in.ID)
	_, err = dst.UpsertIncident(ctx, "k1", func(cur *incident.Incident) (*incident.Incident, error) {
		require.NotNil(t, cur, "the key index was copied")
		return nil, nil
	})
	require.NoError(t, err)
	seen, err := dst.SeenEvent(ctx, "ev-1", t0)
	require.NoError(t, err)
	assert.True(t, seen)

	// The copied store goes on: journals and the chain continue.
	_, err = dst.UpdateRun(ctx, "r-2", func(_ *runmodel.Run, b *runmodel.Batch) error {
		b.Note(runmodel.JournalEntry{Type: runmodel.JStepDone})
		b.Audit = append(b.Audit, runmodel.AuditEntry{Time: t0, Actor: "ana", Action: runmodel.ActionCancel})
		return nil
	})
	require.NoError(t, err)
	j, err := dst.Journal(ctx, "r-2")
	require.NoError(t, err)
	require.Len(t, j, 4)
	assert.Equal(t, uint64(4), j[3].Seq)
	n, err := dst.VerifyAudit(ctx)
	require.NoError(t, err)
	assert.Equal(t, 7, n)

	// A second copy is refused: the target is not empty.
	err = storeCopy(ctx, path, dsn, say)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not empty")
	c2, err := dst.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(5), c2.Runs)
}

func TestStoreCopy_RefusesAStoreServeHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gc.db")
	held, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer held.Close()
	err = storeCopy(context.Background(), path, "postgres://nobody@127.0.0.1:1/x", func(string, ...any) {})
	require.ErrorIs(t, err, runmodel.ErrLocked)
	assert.Contains(t, err.Error(), "stop groundcrew serve")
}

// --store takes a postgres:// URL too (as store: does): runs and audit read
// that database, compact says PostgreSQL needs none, instead of
// "stat postgres://…: no such file or directory".
func TestStoreFlag_TakesAPostgresURL(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	r := &runmodel.Run{ID: "r-7f3a9kq2xm", Runbook: "worker-stalled", Target: "infra-prd", State: runmodel.RunSucceeded, CreatedAt: time.Now()}
	require.NoError(t, db.CreateRun(ctx, r, &runmodel.Batch{Audit: []runmodel.AuditEntry{{Time: r.CreatedAt, Actor: "ana", Action: runmodel.ActionRunStarted, RunID: r.ID}}}))
	require.NoError(t, db.Close())

	out, err := run(t, "", "runs", "list", "--store", dsn)
	require.NoError(t, err, out)
	assert.Contains(t, out, "r-7f3a9kq2xm")
	out, err = run(t, "", "runs", "show", "r-7f3a9kq2xm", "--store", dsn)
	require.NoError(t, err, out)
	assert.Contains(t, out, "worker-stalled")
	out, err = run(t, "", "audit", "verify", "--store", dsn)
	require.NoError(t, err, out)
	assert.Contains(t, out, "audit log intact: 1 entries")
	_, err = run(t, "", "store", "compact", "--store", dsn)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the store is PostgreSQL")
}
