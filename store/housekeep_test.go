package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func keyCount(t *testing.T, db *DB, bucket []byte) int {
	t.Helper()
	n := 0
	require.NoError(t, db.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bucket).Stats().KeyN; return nil }))
	return n
}

func finishedRun(id string, at time.Time) (*runmodel.Run, *runmodel.Batch) {
	r := &runmodel.Run{ID: id, State: runmodel.RunSucceeded, CreatedAt: at, UpdatedAt: at, FinishedAt: at,
		Conversation: chatmodel.Conversation{Channel: "C", Thread: "T-" + id}, Root: chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "root-" + id}}
	return r, &runmodel.Batch{
		Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}, {Type: runmodel.JRunFinished}},
		Audit:   []runmodel.AuditEntry{{Action: "run_started", Time: at}},
		Messages: []runmodel.MessageIndex{
			{Ref: chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "root-" + id}, RunID: id, Role: "root"},
			{Ref: chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "gate-" + id}, RunID: id, Role: "gate"},
		},
	}
}

// A pass over more runs than a batch holds deletes them all, in several
// short transactions, skipping the old run still active each time, and
// deletes exactly the deleted runs' message references.
func TestHousekeep_BatchesAndDeletesOnlyTheRunsOwnIndex(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "gc.db"), Options{Retention: 24 * time.Hour, NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	n := batchItems*2 + 7
	for i := range n {
		r, b := finishedRun(fmt.Sprintf("r-%05d", i), t0.Add(time.Duration(i)*time.Second))
		require.NoError(t, db.CreateRun(ctx, r, b))
		if i == 3 {
			require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: "r-active", State: runmodel.RunAwaitingApproval, CreatedAt: t0.Add(3 * time.Second)}, nil))
		}
	}
	// A message first indexed for an old run and then for a recent one
	// stays with the recent one.
	require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: "r-recent", State: runmodel.RunSucceeded, CreatedAt: t0.Add(48 * time.Hour), FinishedAt: t0.Add(48 * time.Hour)},
		&runmodel.Batch{Messages: []runmodel.MessageIndex{{Ref: chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "gate-r-00002"}, RunID: "r-recent"}}}))

	res, err := db.Housekeep(ctx, t0.Add(47*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, n, res.Runs)
	assert.Equal(t, 2*n-1, res.Messages, "the runs' own references, not the one another run took over")
	assert.GreaterOrEqual(t, res.Batches, 4, "an event batch and at least three of runs")
	assert.LessOrEqual(t, res.LongestBatch, res.WriterTime)

	m, err := db.RunByMessage(ctx, chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "gate-r-00002"})
	require.NoError(t, err)
	assert.Equal(t, "r-recent", m.RunID)
	assert.Equal(t, 1, keyCount(t, db, bMessages))
	assert.Equal(t, 1, keyCount(t, db, bRunMessages))
	assert.Equal(t, 2, keyCount(t, db, bRuns), "r-active and r-recent")
	assert.Equal(t, 2, keyCount(t, db, bRunsByTime))
	assert.Equal(t, 0, keyCount(t, db, bByThread), "neither kept run has a thread")
	_, err = db.GetRun(ctx, "r-active")
	assert.NoError(t, err)
	audited, err := db.VerifyAudit(ctx)
	require.NoError(t, err)
	assert.Equal(t, n, audited, "the audit log is kept whole")
}

// Opening a schema 4 store builds the indexes by run and by time: the
// message references of runs deleted before (by the old sweep-less
// retention) are dropped, and the next pass forgets old event ids.
func TestMigrate5_IndexesByRunAndTime(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{EventTTL: time.Hour})
	require.NoError(t, err)
	ctx := context.Background()
	for _, id := range []string{"r-1", "r-2"} {
		r, b := finishedRun(id, t0)
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	_, err = db.SeenEvent(ctx, "ev-old", t0)
	require.NoError(t, err)
	_, err = db.SeenEvent(ctx, "ev-new", t0.Add(2*time.Hour))
	require.NoError(t, err)
	// As schema 4 left it: no new indexes, and r-2 deleted with its
	// message references left behind.
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bRunMessages, bEventsByTime} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bRuns).Delete([]byte("r-2")); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("schema_version"), []byte("4"))
	}))
	require.NoError(t, db.Close())

	db, err = Open(p, Options{EventTTL: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, 2, keyCount(t, db, bMessages), "r-2's references are dropped")
	assert.Equal(t, 2, keyCount(t, db, bRunMessages))
	assert.Equal(t, 2, keyCount(t, db, bEventsByTime))
	res, err := db.Housekeep(ctx, t0.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Events)
	for id, want := range map[string]bool{"ev-old": false, "ev-new": true} {
		seen, err := db.SeenEvent(ctx, id, t0.Add(2*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, want, seen, id)
	}
}

// Opening a schema 5 store indexes the audit log by run; a run's entries
// are then read through the index, in order.
func TestMigrate6_AuditByRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 3 {
		r, b := finishedRun(fmt.Sprintf("r-%d", i), t0)
		b.Audit = append(b.Audit, runmodel.AuditEntry{Action: "run_finished", Time: t0})
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	require.NoError(t, db.AppendAudit(ctx, runmodel.AuditEntry{Action: "config_loaded", Time: t0}))
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bAuditByRun); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put([]byte("schema_version"), []byte("5"))
	}))
	require.NoError(t, db.Close())

	db, err = Open(p, Options{})
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, 6, keyCount(t, db, bAuditByRun), "two entries for each of three runs")
	es, err := db.AuditEntries(ctx, "R-1")
	require.NoError(t, err)
	require.Len(t, es, 2)
	assert.Equal(t, []uint64{3, 4}, []uint64{es[0].Seq, es[1].Seq})
	assert.Equal(t, "r-1", es[0].RunID)
	all, err := db.AuditEntries(ctx, "")
	require.NoError(t, err)
	assert.Len(t, all, 7)
}

// A run listed for deletion and changed before its batch is decided again
// from what it is now: one that is running again is kept, one still past
// the retention is deleted like the unchanged ones.
func TestHousekeep_RunChangedSinceListedIsDecidedAgain(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "gc.db"), Options{Retention: time.Hour, NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	for _, id := range []string{"r-1", "r-2", "r-3"} {
		r, b := finishedRun(id, t0)
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	cutoff := t0.Add(time.Hour)
	var cands []candidate
	require.NoError(t, db.db.View(func(tx *bolt.Tx) (err error) {
		cands, _, err = expired(tx, cutoff, nil)
		return err
	}))
	require.Len(t, cands, 3)
	_, err = db.UpdateRun(ctx, "r-1", func(r *runmodel.Run, _ *runmodel.Batch) error {
		r.State, r.FinishedAt = runmodel.RunRunning, time.Time{} // resumed
		return nil
	})
	require.NoError(t, err)
	_, err = db.UpdateRun(ctx, "r-2", func(r *runmodel.Run, _ *runmodel.Batch) error {
		r.Error = "changed, still finished long ago"
		return nil
	})
	require.NoError(t, err)

	var runs int
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) (err error) {
		runs, _, _, err = pruneRuns(tx, cands, cutoff, func() bool { return false })
		return err
	}))
	assert.Equal(t, 2, runs)
	_, err = db.GetRun(ctx, "r-1")
	assert.NoError(t, err, "running again: kept")
	for _, id := range []string{"r-2", "r-3"} {
		_, err = db.GetRun(ctx, id)
		assert.ErrorIs(t, err, chatmodel.ErrNotFound, id)
	}
}

// A batch ends as soon as another write waits for the writer: with one
// always waiting, each batch deletes one run and commits. The count of
// waiting writes goes back to zero, also for a write that failed.
func TestHousekeep_BatchEndsForAWaitingWrite(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{Retention: time.Hour, NoSync: true})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 20 {
		r, b := finishedRun(fmt.Sprintf("r-%02d", i), t0)
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	assert.Zero(t, db.waiting.Load())
	res, err := db.Housekeep(ctx, t0.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 20, res.Runs)
	assert.Less(t, res.Batches, 20, "nobody waiting: batches of several runs")

	for i := range 20 {
		r, b := finishedRun(fmt.Sprintf("r-%02d", i), t0)
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	db.waiting.Add(1) // a vote waiting
	res, err = db.Housekeep(ctx, t0.Add(2*time.Hour))
	db.waiting.Add(-1)
	require.NoError(t, err)
	assert.Equal(t, 20, res.Runs)
	assert.Equal(t, 20, res.Batches, "a batch per run")

	require.NoError(t, db.Close())
	assert.Error(t, db.PutKV(ctx, "k", []byte("v")))
	assert.Zero(t, db.waiting.Load())
}
