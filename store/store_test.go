package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func openTemp(t *testing.T) (*DB, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	return db, p
}

func TestOpen_LockedByAnotherProcess(t *testing.T) {
	db, p := openTemp(t)
	defer db.Close()
	_, err := Open(p, Options{Timeout: 100 * time.Millisecond})
	require.Error(t, err)
	assert.ErrorIs(t, err, runmodel.ErrLocked)
	assert.Contains(t, err.Error(), "another groundcrew")
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	db, p := openTemp(t)
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bMeta).Put([]byte("schema_version"), []byte("99"))
	}))
	require.NoError(t, db.Close())
	_, err := Open(p, Options{})
	assert.ErrorIs(t, err, ErrTooNew)
}

func TestRuns_UpdateIsAtomicWithBatch(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	r := &runmodel.Run{ID: "r-1", Runbook: "x", State: runmodel.RunRunning, CreatedAt: now}
	require.NoError(t, db.CreateRun(ctx, r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}}}))
	assert.ErrorIs(t, db.CreateRun(ctx, r, nil), runmodel.ErrExists)

	// A failing update writes nothing: neither the run nor its batch.
	_, err := db.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
		r.State = runmodel.RunFailed
		b.Note(runmodel.JournalEntry{Type: runmodel.JIntent})
		return assert.AnError
	})
	require.ErrorIs(t, err, assert.AnError)
	got, err := db.GetRun(ctx, "r-1")
	require.NoError(t, err)
	assert.Equal(t, runmodel.RunRunning, got.State)
	j, err := db.Journal(ctx, "r-1")
	require.NoError(t, err)
	require.Len(t, j, 1)

	ref := chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "123.456"}
	_, err = db.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
		b.Messages = append(b.Messages, runmodel.MessageIndex{Ref: ref, RunID: "r-1", Step: "s", Role: "gate"})
		b.Note(runmodel.JournalEntry{Type: runmodel.JIntent, Step: "s"})
		return nil
	})
	require.NoError(t, err)
	idx, err := db.RunByMessage(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, chatmodel.RoleGate, idx.Role)
	j, _ = db.Journal(ctx, "r-1")
	require.Len(t, j, 2)
	assert.Equal(t, uint64(2), j[1].Seq)

	_, err = db.GetRun(ctx, "r-404")
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
}

func TestListRuns_Filters(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()
	base := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for i, st := range []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunAwaitingApproval, runmodel.RunRunning} {
		r := &runmodel.Run{ID: "r-" + string(rune('a'+i)), State: st, CreatedAt: base.Add(time.Duration(i) * time.Hour),
			Conversation: chatmodel.Conversation{Thread: map[bool]string{true: "T1", false: ""}[i == 1]}}
		require.NoError(t, db.CreateRun(ctx, r, nil))
	}
	all, err := db.ListRuns(ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	require.Len(t, all, 3)
	assert.Equal(t, "r-c", all[0].ID, "most recent first")
	active, _ := db.ListRuns(ctx, runmodel.RunQuery{Active: true})
	assert.Len(t, active, 2)
	th, _ := db.ListRuns(ctx, runmodel.RunQuery{Thread: "T1"})
	require.Len(t, th, 1)
	assert.Equal(t, "r-b", th[0].ID)
	since, _ := db.ListRuns(ctx, runmodel.RunQuery{Since: base.Add(90 * time.Minute)})
	assert.Len(t, since, 1)
}

func TestAudit_ChainDetectsTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(b *bolt.Bucket)
		want   string
	}{
		{"edited", func(b *bolt.Bucket) {
			var e runmodel.AuditEntry
			_ = json.Unmarshal(b.Get(u64(2)), &e)
			e.Actor = "mallory"
			data, _ := json.Marshal(e)
			_ = b.Put(u64(2), data)
		}, "entry 2 was edited"},
		{"deleted", func(b *bolt.Bucket) { _ = b.Delete(u64(2)) }, "entry 2 missing"},
		{"deleted last then re-chained edit", func(b *bolt.Bucket) {
			var e runmodel.AuditEntry
			_ = json.Unmarshal(b.Get(u64(3)), &e)
			e.Prev = "forged"
			e.Hash = auditHash(e)
			data, _ := json.Marshal(e)
			_ = b.Put(u64(3), data)
		}, "does not follow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, _ := openTemp(t)
			defer db.Close()
			ctx := context.Background()
			for i := range 3 {
				require.NoError(t, db.AppendAudit(ctx, runmodel.AuditEntry{Actor: "alice", Action: "approve", Detail: string(rune('a' + i))}))
			}
			n, err := db.VerifyAudit(ctx)
			require.NoError(t, err)
			assert.Equal(t, 3, n)
			require.NoError(t, db.db.Update(func(tx *bolt.Tx) error { c.tamper(tx.Bucket(bAudit)); return nil }))
			_, err = db.VerifyAudit(ctx)
			require.ErrorIs(t, err, ErrAuditTampered)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	_ = binary.BigEndian
}

func TestSeenEvent_PersistsAcrossReopen(t *testing.T) {
	db, p := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	seen, err := db.SeenEvent(ctx, "Ev1", now)
	require.NoError(t, err)
	assert.False(t, seen)
	require.NoError(t, db.Close())
	db, err = Open(p, Options{EventTTL: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	seen, _ = db.SeenEvent(ctx, "Ev1", now)
	assert.True(t, seen)
	res, err := db.Housekeep(ctx, now.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Events)
	seen, _ = db.SeenEvent(ctx, "Ev1", now.Add(2*time.Hour))
	assert.False(t, seen, "forgotten after the TTL")
}

func TestOutbox(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()
	require.NoError(t, db.PutOutbox(ctx, runmodel.OutboxItem{ID: "p|2", Message: chatmodel.Message{Text: "b"}}))
	require.NoError(t, db.PutOutbox(ctx, runmodel.OutboxItem{ID: "p|1", Message: chatmodel.Message{Text: "a"}}))
	items, err := db.ListOutbox(ctx)
	require.NoError(t, err)
	require.Len(t, items, 2)
	assert.Equal(t, "a", items[0].Message.Text)
	require.NoError(t, db.DeleteOutbox(ctx, "p|1"))
	items, _ = db.ListOutbox(ctx)
	assert.Len(t, items, 1)
}
