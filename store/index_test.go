package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func TestActiveIndex_FollowsState(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()
	for i := range 5 {
		r := &runmodel.Run{ID: fmt.Sprintf("r-%d", i), State: runmodel.RunRunning, CreatedAt: t0.Add(time.Duration(i) * time.Minute)}
		require.NoError(t, db.CreateRun(ctx, r, nil))
	}
	for _, id := range []string{"r-1", "r-3"} {
		_, err := db.UpdateRun(ctx, id, func(r *runmodel.Run, _ *runmodel.Batch) error { r.State = runmodel.RunSucceeded; return nil })
		require.NoError(t, err)
	}
	active, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-2", "r-0"}, ids(active), "most recent first")
	limited, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true, Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-2"}, ids(limited))
	var n int
	require.NoError(t, db.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bActive).Stats().KeyN; return nil }))
	assert.Equal(t, 3, n, "finished runs leave the index")
}

func ids(runs []*runmodel.Run) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func TestRunIDs_CaseInsensitive(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()
	require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: "r-5fb1", State: runmodel.RunRunning, CreatedAt: t0}, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}}}))
	r, err := db.GetRun(ctx, "R-5FB1")
	require.NoError(t, err)
	assert.Equal(t, "r-5fb1", r.ID)
	_, err = db.UpdateRun(ctx, "R-5fB1", func(r *runmodel.Run, _ *runmodel.Batch) error { return nil })
	require.NoError(t, err)
	j, err := db.Journal(ctx, "R-5FB1")
	require.NoError(t, err)
	assert.Len(t, j, 1)
	assert.ErrorIs(t, db.CreateRun(ctx, &runmodel.Run{ID: "R-5FB1", CreatedAt: t0}, nil), runmodel.ErrExists)
}

// A store written by schema version 1 (no index) gets its index on open.
func TestMigration_BuildsActiveIndex(t *testing.T) {
	p := filepath.Join(t.TempDir(), "v1.db")
	raw, err := bolt.Open(p, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, raw.Update(func(tx *bolt.Tx) error {
		if err := migrations[0].fn(tx); err != nil {
			return err
		}
		for i, st := range []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunAwaitingApproval, runmodel.RunFailed, runmodel.RunWaiting} {
			data, _ := json.Marshal(runmodel.Run{ID: fmt.Sprintf("r-%04x", i), State: st, CreatedAt: t0.Add(time.Duration(i) * time.Hour),
				Conversation: chatmodel.Conversation{Channel: "C", Thread: map[bool]string{true: "T1"}[i%2 == 0]}, Root: chatmodel.MessageRef{ID: fmt.Sprintf("root-%d", i)}})
			if err := tx.Bucket(bRuns).Put([]byte(fmt.Sprintf("r-%04x", i)), data); err != nil {
				return err
			}
			key := t0.Add(time.Duration(i)*time.Hour).Format(time.RFC3339) + "|" + fmt.Sprintf("r-%04x", i)
			if err := tx.Bucket(bRunsByTime).Put([]byte(key), []byte(fmt.Sprintf("r-%04x", i))); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put([]byte("schema_version"), []byte("1"))
	}))
	require.NoError(t, raw.Close())

	db, err := Open(p, Options{})
	require.NoError(t, err)
	defer db.Close()
	active, err := db.ListRuns(context.Background(), runmodel.RunQuery{Active: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-0003", "r-0001"}, ids(active))
	require.NoError(t, db.db.View(func(tx *bolt.Tx) error {
		assert.Equal(t, fmt.Sprint(SchemaVersion), string(tx.Bucket(bMeta).Get([]byte("schema_version"))))
		return nil
	}))
	inThread, err := db.ListRuns(context.Background(), runmodel.RunQuery{Thread: "T1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-0002", "r-0000"}, ids(inThread), "the thread index is built")
	byRoot, err := db.ListRuns(context.Background(), runmodel.RunQuery{Thread: "root-3"})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-0003"}, ids(byRoot), "a run's own thread is its root message")
	// Old four-hex-digit ids still work, in any case.
	_, err = db.GetRun(context.Background(), "R-0003")
	require.NoError(t, err)
}

func TestHousekeep_RetentionKeepsAuditAndActiveRuns(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{Retention: 30 * 24 * time.Hour, EventTTL: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	now := t0.Add(100 * 24 * time.Hour)
	mk := func(id string, created time.Time, st runmodel.RunState, finished time.Time) {
		r := &runmodel.Run{ID: id, State: st, CreatedAt: created, FinishedAt: finished, UpdatedAt: created, Conversation: chatmodel.Conversation{Channel: "C", Thread: "T"}}
		b := &runmodel.Batch{
			Journal:  []runmodel.JournalEntry{{Type: runmodel.JRunStarted}},
			Audit:    []runmodel.AuditEntry{{Action: "run_started", Time: created}},
			Messages: []runmodel.MessageIndex{{Ref: chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "m-" + id}, RunID: id, Role: "root"}},
		}
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	mk("r-old", t0, runmodel.RunSucceeded, t0.Add(time.Hour))                                    // finished 100 days ago: deleted
	mk("r-oldactive", t0, runmodel.RunAwaitingApproval, time.Time{})                             // old but active: kept
	mk("r-recent", now.Add(-40*24*time.Hour), runmodel.RunFailed, now.Add(-10*24*time.Hour))     // finished 10 days ago: kept
	mk("r-longago", now.Add(-50*24*time.Hour), runmodel.RunCancelled, now.Add(-31*24*time.Hour)) // finished 31 days ago: deleted
	_, err = db.SeenEvent(ctx, "ev-old", now.Add(-2*time.Hour))
	require.NoError(t, err)
	_, err = db.SeenEvent(ctx, "ev-new", now)
	require.NoError(t, err)

	res, err := db.Housekeep(ctx, now)
	require.NoError(t, err)
	assert.Equal(t, [3]int{1, 2, 2}, [3]int{res.Events, res.Runs, res.Messages}, "events, runs, message refs")
	assert.Equal(t, 2, res.Batches, "one batch of event ids, one of runs")
	assert.Positive(t, res.WriterTime)

	all, err := db.ListRuns(ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"r-oldactive", "r-recent"}, ids(all))
	_, err = db.GetRun(ctx, "r-old")
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
	j, err := db.Journal(ctx, "r-old")
	require.NoError(t, err)
	assert.Empty(t, j)
	inThread, err := db.ListRuns(ctx, runmodel.RunQuery{Thread: "T"})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"r-oldactive", "r-recent"}, ids(inThread))
	_, err = db.RunByMessage(ctx, chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "m-r-old"})
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
	_, err = db.RunByMessage(ctx, chatmodel.MessageRef{Platform: "t", Channel: "C", ID: "m-r-recent"})
	assert.NoError(t, err)

	n, err := db.VerifyAudit(ctx)
	require.NoError(t, err, "the audit chain is kept whole")
	assert.Equal(t, 4, n)
	seen, err := db.SeenEvent(ctx, "ev-new", now)
	require.NoError(t, err)
	assert.True(t, seen)

	// A second pass has nothing to do.
	res, err = db.Housekeep(ctx, now)
	require.NoError(t, err)
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{res.Events, res.Runs, res.Messages})
}

// A runbook spec is stored once for all the runs of that version; runs
// written before (spec inline) still read.
func TestSpecs_StoredOnce(t *testing.T) {
	db, p := openTemp(t)
	ctx := context.Background()
	spec := &runbookmodel.Runbook{Name: "prune", Title: "Prune", Steps: []runbookmodel.Step{{ID: "a", Kind: runbookmodel.KindManual, Text: "hi"}}}
	for i := range 3 {
		require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: fmt.Sprintf("r-%d", i), State: runmodel.RunRunning, CreatedAt: t0, Spec: spec}, nil))
	}
	// A run as schema version 2 wrote it: the spec inline.
	legacy, _ := json.Marshal(runmodel.Run{ID: "r-legacy", State: runmodel.RunRunning, CreatedAt: t0, Spec: &runbookmodel.Runbook{Name: "old", Title: "Old"}})
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bRuns).Put([]byte("r-legacy"), legacy) }))

	require.NoError(t, db.Close())
	db, err := Open(p, Options{})
	require.NoError(t, err)
	defer db.Close()
	r, err := db.GetRun(ctx, "r-2")
	require.NoError(t, err)
	assert.Equal(t, spec, r.Spec)
	r, err = db.GetRun(ctx, "r-legacy")
	require.NoError(t, err)
	assert.Equal(t, "Old", r.Spec.Title)
	require.NoError(t, db.db.View(func(tx *bolt.Tx) error {
		assert.Equal(t, 1, tx.Bucket(bSpecs).Stats().KeyN)
		return nil
	}))
}

// The filter indexes (runbook, target, state) hold one entry per run: a
// state change moves the run's state entry, an update that changes none
// of them writes none, and a run deleted by retention leaves none behind.
func TestFilterIndexes_OneEntryPerRunThroughChangesAndRetention(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "gc.db"), Options{Retention: time.Hour, NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	for i := range 6 {
		r := &runmodel.Run{ID: fmt.Sprintf("R-%d", i), Runbook: "prune", Target: "infra-prd", State: runmodel.RunRunning,
			CreatedAt: t0.Add(time.Duration(i) * time.Minute), UpdatedAt: t0}
		require.NoError(t, db.CreateRun(ctx, r, nil))
	}
	for i := range 6 {
		_, err := db.UpdateRun(ctx, fmt.Sprintf("r-%d", i), func(r *runmodel.Run, _ *runmodel.Batch) error {
			r.State = runmodel.RunAwaitingApproval
			return nil
		})
		require.NoError(t, err)
		_, err = db.UpdateRun(ctx, fmt.Sprintf("r-%d", i), func(r *runmodel.Run, _ *runmodel.Batch) error {
			r.State, r.FinishedAt, r.UpdatedAt = runmodel.RunFailed, t0, t0
			if i%2 == 0 {
				r.FinishedAt, r.UpdatedAt = t0.Add(48*time.Hour), t0.Add(48*time.Hour)
			}
			return nil
		})
		require.NoError(t, err)
	}
	for _, b := range [][]byte{bRunsByRunbook, bRunsByTarget, bRunsByState} {
		assert.Equal(t, 6, keyCount(t, db, b), "%s: one entry per run", b)
	}
	failed, err := db.ListRuns(ctx, runmodel.RunQuery{States: []runmodel.RunState{runmodel.RunFailed}})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-5", "r-4", "r-3", "r-2", "r-1", "r-0"}, ids(failed))

	res, err := db.Housekeep(ctx, t0.Add(47*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 3, res.Runs)
	for _, b := range [][]byte{bRunsByRunbook, bRunsByTarget, bRunsByState} {
		assert.Equal(t, 3, keyCount(t, db, b), "%s: the deleted runs' entries are gone", b)
	}
	rest, err := db.ListRuns(ctx, runmodel.RunQuery{Runbook: "prune", Target: "infra-prd", States: []runmodel.RunState{runmodel.RunFailed}})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-2", "r-0"}, ids(rest))
}

// Opening a schema 6 store builds the filter indexes of the runs stored.
func TestMigrate7_FilterIndexes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for i := range 4 {
		r, b := finishedRun(fmt.Sprintf("r-%d", i), t0.Add(time.Duration(i)*time.Minute))
		if i%2 == 1 {
			r.Runbook = "abort-pending"
		}
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bRunsByRunbook, bRunsByTarget, bRunsByState} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return tx.Bucket(bMeta).Put([]byte("schema_version"), []byte("6"))
	}))
	require.NoError(t, db.Close())

	db, err = Open(p, Options{})
	require.NoError(t, err)
	defer db.Close()
	for _, b := range [][]byte{bRunsByRunbook, bRunsByTarget, bRunsByState} {
		assert.Equal(t, 4, keyCount(t, db, b), "%s", b)
	}
	got, err := db.ListRuns(ctx, runmodel.RunQuery{Runbook: "abort-pending"})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-3", "r-1"}, ids(got))
}

func TestLeadFields_ReadsTheFieldsBeforeTheSteps(t *testing.T) {
	r := &runmodel.Run{ID: "r-1", Runbook: "prune", Target: "infra-prd", State: runmodel.RunFailed, Title: "x",
		Params: map[string]string{"worker": "w-0"}, Steps: []runmodel.StepState{{ID: "s", Summary: "{\"state\": \"fake\"}"}}}
	raw, err := json.Marshal(storedRun{Run: r, SpecRef: "abc"})
	require.NoError(t, err)
	f, err := leadFields(raw)
	require.NoError(t, err)
	assert.Equal(t, runLead{Runbook: "prune", Target: "infra-prd", State: runmodel.RunFailed}, f)
	f, err = leadFields([]byte(`{"id":"r-2","runbook":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, runLead{Runbook: "x"}, f, "a run stored without some of them")
	_, err = leadFields([]byte(`[]`))
	assert.Error(t, err)
}
