package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

// A connection the server ended (pg_terminate_backend, a failover of a
// managed database, an idle timeout) is replaced, not reported: reads and
// the start of a write transaction are tried again on a new connection, so
// an approval typed just after does not answer "Could not read run …:
// FATAL: terminating connection due to administrator command".
func TestConnectionsEndedByTheServerAreReplaced(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	run := &runmodel.Run{ID: "r-1", State: runmodel.RunRunning, CreatedAt: time.Now()}
	require.NoError(t, db.CreateRun(ctx, run, nil))
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer admin.Close(ctx)
	terminate := func() {
		t.Helper()
		// Warm several pooled connections, then end them all.
		for range 4 {
			_, err := db.GetRun(ctx, "r-1")
			require.NoError(t, err)
		}
		_, err := admin.Exec(ctx, "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()")
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond) // the backends exit
	}
	require.NoError(t, db.PutKV(ctx, "k", []byte("v")))
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"GetRun", func() error { _, err := db.GetRun(ctx, "r-1"); return err }},
		{"ListRuns", func() error { _, err := db.ListRuns(ctx, runmodel.RunQuery{}); return err }},
		{"Journal", func() error { _, err := db.Journal(ctx, "r-1"); return err }},
		{"GetKV", func() error { _, err := db.GetKV(ctx, "k"); return err }},
		{"ListOutbox", func() error { _, err := db.ListOutbox(ctx); return err }},
		{"UpdateRun", func() error {
			_, err := db.UpdateRun(ctx, "r-1", func(r *runmodel.Run, _ *runmodel.Batch) error { r.Cursor++; return nil })
			return err
		}},
		{"PutKV", func() error { return db.PutKV(ctx, "k", []byte("w")) }},
	} {
		terminate()
		assert.NoError(t, c.call(), "%s after the server ended the pool's connections", c.name)
	}
}
