package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// fillFinished writes n finished runs, one a minute from t0, with big
// results (as real runs have).
func fillFinished(t *testing.T, db *DB, n int) {
	t.Helper()
	for i := range n {
		r, b := finishedRun(fmt.Sprintf("r-%05d", i), t0.Add(time.Duration(i)*time.Minute))
		r.Steps = []runmodel.StepState{{ID: "s", Status: runmodel.StepSucceeded, Result: []byte(`{"pad":"` + strings.Repeat("x", 4000) + `"}`)}}
		require.NoError(t, db.CreateRun(context.Background(), r, b))
	}
}

// After retention deleted most runs the file stays as big; compact gives
// the space back, keeps every run and the audit chain (same head), and
// the store opens and works after.
func TestCompact_ShrinksAndKeepsEverything(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{Retention: 24 * time.Hour, NoSync: true})
	require.NoError(t, err)
	ctx := context.Background()
	fillFinished(t, db, 600)
	res, err := db.Housekeep(ctx, t0.Add(24*time.Hour+500*time.Minute))
	require.NoError(t, err)
	require.Equal(t, 500, res.Runs)
	head, err := db.AuditHead(ctx)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	before, err := os.Stat(p)
	require.NoError(t, err)

	cr, err := Compact(ctx, p)
	require.NoError(t, err)
	after, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, before.Size(), cr.Before)
	assert.Equal(t, after.Size(), cr.After)
	assert.Less(t, cr.After, cr.Before/3, "the freed pages are given back")
	assert.Equal(t, head, cr.Head)
	assert.Equal(t, 600, cr.Audit, "every audit entry, the deleted runs' too")
	assert.Equal(t, 100, cr.Runs)
	assert.NoFileExists(t, p+".compacting")

	db, err = Open(p, Options{})
	require.NoError(t, err)
	defer db.Close()
	all, err := db.ListRuns(ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Len(t, all, 100)
	h, err := db.AuditHead(ctx)
	require.NoError(t, err)
	assert.Equal(t, head, h)
	r, b := finishedRun("r-new", t0)
	require.NoError(t, db.CreateRun(ctx, r, b), "the compacted store takes writes")
}

// A store another process holds (serve) is refused, and so is one whose
// audit chain is broken; neither is changed.
func TestCompact_RefusesAHeldOrTamperedStore(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := Open(p, Options{NoSync: true})
	require.NoError(t, err)
	fillFinished(t, db, 5)
	_, err = Compact(context.Background(), p)
	require.ErrorIs(t, err, runmodel.ErrLocked)
	assert.Contains(t, err.Error(), "stop groundcrew serve first")

	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bAudit)
		v := ab.Get(u64(2))
		return ab.Put(u64(2), append(append([]byte(nil), v[:len(v)-2]...), []byte(` }`)...))
	}))
	require.NoError(t, db.Close())
	st, err := os.Stat(p)
	require.NoError(t, err)
	_, err = Compact(context.Background(), p)
	require.ErrorIs(t, err, ErrAuditTampered)
	assert.Contains(t, err.Error(), "not compacting")
	st2, err := os.Stat(p)
	require.NoError(t, err)
	assert.True(t, os.SameFile(st, st2), "the store is left as it was")
	assert.NoFileExists(t, p+".compacting")
}
