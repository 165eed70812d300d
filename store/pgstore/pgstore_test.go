package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
	"github.com/groundcrew/groundcrew/store/storetest"
)

func TestConformance(t *testing.T) {
	server := pgtest.Server(t)
	storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Store {
		db, err := pgstore.Open(context.Background(), pgtest.NewDatabase(t, server), pgstore.Options{Retention: o.Retention, EventTTL: o.EventTTL})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	})
}

func TestOpen_MigratesOnceAndRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	// Two replicas starting together migrate once, under the lock.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			db, err := pgstore.Open(ctx, dsn, pgstore.Options{})
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	require.NoError(t, <-errs)
	require.NoError(t, <-errs)
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	v, err := db.SchemaVersionOf(ctx)
	require.NoError(t, err)
	assert.Equal(t, pgstore.SchemaVersion, v)
	_, err = db.Pool().Exec(ctx, "update groundcrew_schema_version set version = 99")
	require.NoError(t, err)
	db.Close()

	_, err = pgstore.Open(ctx, dsn, pgstore.Options{})
	require.ErrorIs(t, err, pgstore.ErrTooNew)
	assert.Contains(t, err.Error(), "schema version 99")
	assert.NotContains(t, err.Error(), "password")
}

func TestFence_RefusesWritesWithoutTheLease(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{Fenced: true})
	require.NoError(t, err)
	defer db.Close()
	run := &runmodel.Run{ID: "r-1", State: runmodel.RunRunning, CreatedAt: time.Now()}

	// No epoch: nothing is written.
	require.ErrorIs(t, db.CreateRun(ctx, run, nil), pgstore.ErrFenced)
	_, err = db.GetRun(ctx, "r-1")
	require.ErrorIs(t, err, chatmodel.ErrNotFound)

	// The lease of epoch 7, held: writes go through.
	_, err = db.Pool().Exec(ctx, "update leader set holder = 'a', epoch = 7, expires_at = now() + interval '10 seconds'")
	require.NoError(t, err)
	db.SetEpoch(7)
	require.NoError(t, db.CreateRun(ctx, run, nil))

	// Another process took over (epoch 8): an intent cannot be journaled.
	_, err = db.Pool().Exec(ctx, "update leader set holder = 'b', epoch = 8")
	require.NoError(t, err)
	_, err = db.UpdateRun(ctx, "r-1", func(_ *runmodel.Run, b *runmodel.Batch) error {
		b.Note(runmodel.JournalEntry{Type: runmodel.JIntent, Step: "prune"})
		return nil
	})
	require.ErrorIs(t, err, pgstore.ErrFenced)
	assert.Contains(t, err.Error(), "epoch 8")
	j, err := db.Journal(ctx, "r-1")
	require.NoError(t, err)
	assert.Empty(t, j)
	assert.ErrorIs(t, db.AppendAudit(ctx, runmodel.AuditEntry{Actor: "x"}), pgstore.ErrFenced)
	assert.ErrorIs(t, db.PutOutbox(ctx, runmodel.OutboxItem{ID: "o"}), pgstore.ErrFenced)
	_, err = db.SeenEvent(ctx, "e", time.Now())
	assert.ErrorIs(t, err, pgstore.ErrFenced)

	// Our epoch, but the lease expired (paused past it): refused too.
	_, err = db.Pool().Exec(ctx, "update leader set holder = 'a', epoch = 7, expires_at = now() - interval '1 second'")
	require.NoError(t, err)
	assert.ErrorIs(t, db.PutKV(ctx, "k", []byte("v")), pgstore.ErrFenced)
}

func TestFence_TakeoverWaitsForTheWriteInFlight(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{Fenced: true})
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Pool().Exec(ctx, "update leader set holder = 'a', epoch = 1, expires_at = now() + interval '10 seconds'")
	require.NoError(t, err)
	db.SetEpoch(1)
	require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: "r-1", State: runmodel.RunRunning, CreatedAt: time.Now()}, nil))

	inFn, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := db.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
			close(inFn)
			<-release
			r.Cursor = 1
			return nil
		})
		done <- err
	}()
	<-inFn
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	took := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "update leader set holder = 'b', epoch = 2")
		took <- err
	}()
	select {
	case <-took:
		t.Fatal("the takeover did not wait for the write that passed the fence")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, <-took)
	_, err = db.UpdateRun(ctx, "r-1", func(*runmodel.Run, *runmodel.Batch) error { return nil })
	assert.ErrorIs(t, err, pgstore.ErrFenced, "after the takeover the old leader writes nothing")
}

// TestMigrate3_RunFilterColumns: opening a schema 2 store fills the runs'
// runbook and target columns from their JSON (a NUL in another field
// included), so the filtered listings find the runs stored before.
func TestMigrate3_RunFilterColumns(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t, nil)
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	now := time.Now()
	for i, rb := range []string{"prune", "abort-pending", "prune"} {
		r := &runmodel.Run{ID: fmt.Sprintf("r-%d", i), Runbook: rb, Target: "infra-prd", Title: "a \x00 in the title",
			State: runmodel.RunSucceeded, CreatedAt: now.Add(time.Duration(i) * time.Second), UpdatedAt: now}
		require.NoError(t, db.CreateRun(ctx, r, nil))
	}
	_, err = db.Pool().Exec(ctx, "drop index runs_by_state; alter table runs drop column runbook, drop column target; update groundcrew_schema_version set version = 2")
	require.NoError(t, err)
	db.Close()

	db, err = pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	got, err := db.ListRuns(ctx, runmodel.RunQuery{Runbook: "prune", Target: "infra-prd"})
	require.NoError(t, err)
	var ids []string
	for _, r := range got {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"r-2", "r-0"}, ids)
	assert.Equal(t, "a \x00 in the title", got[0].Title)
}
