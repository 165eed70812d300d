package pgstore_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

// TestListen_EveryReplicaHearsTheCommits: a second store on the same
// database (a standby) hears each committed run and incident write of the
// first (the leader), a new run's thread (an incident's page lists the
// runs of its thread), and nothing of a write that rolled back.
func TestListen_EveryReplicaHearsTheCommits(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dsn := pgtest.NewDatabase(t, nil)
	leader, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	defer leader.Close()
	standby, err := pgstore.Open(ctx, dsn, pgstore.Options{})
	require.NoError(t, err)
	defer standby.Close()

	var mu sync.Mutex
	var got []string
	resynced := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = standby.Listen(ctx, func(kind, id string) {
			mu.Lock()
			got = append(got, kind+":"+id)
			mu.Unlock()
		}, func() { resynced <- struct{}{} }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	select {
	case <-resynced: // listening
	case <-time.After(10 * time.Second):
		t.Fatal("the listener did not connect")
	}
	now := time.Now()
	r := &runmodel.Run{ID: "r-listen0001", Runbook: "x", Target: "t", State: runmodel.RunRunning, CreatedAt: now, UpdatedAt: now}
	require.NoError(t, leader.CreateRun(ctx, r, nil))
	_, err = leader.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error { r.Error = "x"; return nil })
	require.NoError(t, err)
	_, err = leader.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error { return assert.AnError })
	require.ErrorIs(t, err, assert.AnError)
	in := &incident.Incident{ID: "i-listen", Key: "k", State: incident.StateOpen, OpenedAt: now}
	_, err = leader.UpsertIncident(ctx, "k", func(*incident.Incident) (*incident.Incident, error) { return in, nil })
	require.NoError(t, err)
	inThread := &runmodel.Run{ID: "r-listen0002", Runbook: "x", Target: "t", State: runmodel.RunRunning, CreatedAt: now, UpdatedAt: now,
		Conversation: chatmodel.Conversation{Platform: "slack", Channel: "C1", Thread: "1700000000.000100"}}
	require.NoError(t, leader.CreateRun(ctx, inThread, nil))
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 5
	}, 10*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"run:r-listen0001", "run:r-listen0001", "incident:i-listen", "run:r-listen0002", "thread:1700000000.000100"}, got,
		"one per commit, none for the rollback")
	mu.Unlock()
	cancel()
	<-done
}
