package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

// TestServe_EngineGetsEveryCapability builds the app as serve does, for
// each chat platform, and checks the engine was handed every optional part
// the store and the adapter have (the store is wrapped by the audit
// checkpointer: a type assertion on it found no housekeeping, issue 28).
func TestServe_EngineGetsEveryCapability(t *testing.T) {
	for _, tc := range []struct {
		platform, chat string
		missing        []string // what the platform cannot do
	}{
		{"console", `{platform: console}`, []string{"PostChecker", "Identities", "Rewatch", "Channels"}},
		{"slack", `{platform: slack, slack: {bot_token: xoxb-1, app_token: xapp-1}}`, []string{"Rewatch"}},
		{"mattermost", `{platform: mattermost, mattermost: {url: "http://127.0.0.1:1", bot_token: t, command_token: c}}`, nil},
	} {
		t.Run(tc.platform, func(t *testing.T) {
			cfg := writeConfig(t, "chat: "+tc.chat+"\n")
			a, err := newApp(cfg, appOptions{In: strings.NewReader(""), Out: io.Discard, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)
			defer a.close()
			assert.Equal(t, tc.missing, bot.MissingCapabilities(a.caps))
			assert.NotNil(t, a.caps.Housekeeper, "retention and the dedupe TTL are applied")
			want := bot.CapabilitiesOf(a.db, a.chat)
			assert.Equal(t, bot.MissingCapabilities(want), bot.MissingCapabilities(a.caps),
				"every capability of the store and the adapter reaches the engine")
		})
	}
}

// TestServe_RetentionDeletesOldRunsAndEventIDs runs serve on a store with
// runs finished 10 and 60 days ago and event ids seen 1 and 10 days ago,
// with retention: 30d: the first housekeeping pass (the first tick) deletes
// the old run and the old event id, keeps the rest, logs the pass and
// counts it in the metrics.
func TestServe_RetentionDeletesOldRunsAndEventIDs(t *testing.T) {
	cfg := writeConfig(t, "chat: {platform: console}\nretention: 30d\n")
	now := time.Now()
	db, err := store.Open(cfg.Store, store.Options{})
	require.NoError(t, err)
	ctx := context.Background()
	for id, age := range map[string]time.Duration{"r-old": 60 * 24 * time.Hour, "r-new": 10 * 24 * time.Hour} {
		at := now.Add(-age)
		require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: id, Runbook: "list-workers", Target: "infra-prd", State: runmodel.RunSucceeded,
			CreatedAt: at, UpdatedAt: at, FinishedAt: at}, &runmodel.Batch{
			Messages: []runmodel.MessageIndex{{Ref: chatmodel.MessageRef{Platform: "console", Channel: "c", ID: "m-" + id}, RunID: id}}}))
	}
	for id, age := range map[string]time.Duration{"ev-old": 10 * 24 * time.Hour, "ev-new": 24 * time.Hour} {
		_, err := db.SeenEvent(ctx, id, now.Add(-age))
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())

	logs := &syncBuffer{}
	in, w := io.Pipe()
	a, err := newApp(cfg, appOptions{In: in, Out: io.Discard, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.run(rctx) }()
	stopped := sync.OnceFunc(func() { cancel(); _ = w.Close(); <-done; a.close() })
	defer stopped()

	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "msg=\"store housekeeping\"") }, 10*time.Second, 10*time.Millisecond)
	assert.Contains(t, logs.String(), "deleted_runs=1 forgotten_event_ids=1 deleted_message_refs=1")
	assert.Equal(t, 1.0, gathered(t, a, "groundcrew_store_housekeeping_deleted_runs_total"))
	assert.Equal(t, 1.0, gathered(t, a, "groundcrew_store_housekeeping_forgotten_events_total"))
	assert.Equal(t, 1.0, gathered(t, a, "groundcrew_store_housekeeping_passes_total", "outcome", "ok"))
	stopped()

	db, err = store.Open(cfg.Store, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	_, err = db.GetRun(ctx, "r-old")
	assert.True(t, errors.Is(err, chatmodel.ErrNotFound), "the run past the retention is deleted: %v", err)
	_, err = db.GetRun(ctx, "r-new")
	assert.NoError(t, err)
	_, err = db.RunByMessage(ctx, chatmodel.MessageRef{Platform: "console", Channel: "c", ID: "m-r-old"})
	assert.True(t, errors.Is(err, chatmodel.ErrNotFound), "its message index is deleted with it")
	for id, wantSeen := range map[string]bool{"ev-old": false, "ev-new": true} {
		seen, err := db.SeenEvent(ctx, id, now)
		require.NoError(t, err)
		assert.Equal(t, wantSeen, seen, id)
	}
}

// gathered is the value of a counter of the app's metrics (with the label
// name=value when given).
func gathered(t *testing.T, a *app, name string, label ...string) float64 {
	t.Helper()
	mfs, err := a.metrics.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			ok := len(label) == 0
			for _, l := range m.GetLabel() {
				if len(label) == 2 && l.GetName() == label[0] && l.GetValue() == label[1] {
					ok = true
				}
			}
			if ok {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s%v", name, label)
	return 0
}

// writeConfig writes a groundcrew.yaml with a simulated target and extra,
// and loads it.
func writeConfig(t *testing.T, extra string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
store: gc.db
server: {listen: "127.0.0.1:0"}
targets:
  infra-prd:
    simulator: {}
`+extra), 0o600))
	cfg, err := config.Load(path)
	require.NoError(t, err)
	return cfg
}
