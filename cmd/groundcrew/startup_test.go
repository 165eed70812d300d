package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/store"
)

// awayStore is the store with its first reads of the open incidents
// failing, as PostgreSQL answers while it restarts.
type awayStore struct {
	appStore
	mu          sync.Mutex
	fails, seen int
}

func (s *awayStore) ListIncidents(ctx context.Context, q incident.Query) ([]*incident.Incident, error) {
	s.mu.Lock()
	s.seen++
	fail := s.fails > 0
	if fail {
		s.fails--
	}
	s.mu.Unlock()
	if fail {
		return nil, errors.New("listing incidents: FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
	}
	return s.appStore.ListIncidents(ctx, q)
}

func (s *awayStore) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

// TestServe_StartWaitsForTheStore: the reads the incidents make as the app
// starts (the messages to watch, the roots not in chat yet) are retried
// while the store is away. They ended the app, and with it a new leader's
// process, when PostgreSQL restarted as it took over.
func TestServe_StartWaitsForTheStore(t *testing.T) {
	cfg := writeConfig(t, "chat: {platform: console}\n")
	db, err := store.Open(cfg.Store, store.Options{})
	require.NoError(t, err)
	away := &awayStore{appStore: db, fails: 2}
	a, err := newApp(cfg, appOptions{In: strings.NewReader(""), Out: io.Discard, Store: away, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer a.close()
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.incidents.run(ctx) }()
	// Two failures, then the read that works (Republish's; the console
	// has no reactions to watch again).
	require.Eventually(t, func() bool { return away.calls() >= 3 }, 10*time.Second, 10*time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the incidents ended while the store was away: %v", err)
	default:
	}
	cancel()
	assert.NoError(t, <-done)
}
