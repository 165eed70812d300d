package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/incident"
)

// TestWatchOnTheSimulator: watch rules poll the real digest source of a
// simulated Concourse (a stalled worker, 300 pending builds): after two
// polls the stalled worker and the queue each have their incident, in the
// console's channel, with the runbook command; more polls add none.
func TestWatchOnTheSimulator(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(`store: gc.db
server: {listen: "127.0.0.1:0"}
chat: {platform: console}
targets:
  infra-prd: {simulator: {}}
watch:
  - {target: infra-prd, channel: "#ci-ops", every: 1m, worker_stalled_for: 5m, pending_builds: 100}
`), 0o600))
	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	now := time.Now()
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	out := &syncBuffer{}
	a, err := newApp(cfg, appOptions{In: strings.NewReader(""), Out: out, Now: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer a.close()
	require.NotNil(t, a.reloads.watch.current())
	ctx := context.Background()
	for range 4 {
		require.NoError(t, a.reloads.watch.current().Poll(ctx, 0))
		mu.Lock()
		now = now.Add(3 * time.Minute)
		mu.Unlock()
	}
	open, err := a.incidents.m.Open(ctx)
	require.NoError(t, err)
	keys := map[string]*incident.Incident{}
	for _, in := range open {
		keys[in.Key] = in
	}
	require.Len(t, keys, 2, out.String())
	w := keys["watch:infra-prd:worker_stalled:caascad-ci-workers-infra-infra-prd-0"]
	require.NotNil(t, w, out.String())
	assert.Equal(t, "worker-stalled", w.Runbook)
	assert.Equal(t, "#ops", w.Channel, "the console has one channel")
	q := keys["watch:infra-prd:pending_builds"]
	require.NotNil(t, q)
	assert.Contains(t, out.String(), "🚨 Workers saturated on `infra-prd` — incident `"+q.ID+"`")
	assert.Contains(t, out.String(), "Suggested: `/runbook run worker-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0`")
	assert.Len(t, regexp.MustCompile(`(?m)^#\d+ 🚨 `).FindAllString(out.String(), -1), 2, "two incidents, each posted once")
}

func TestConfigCheckAlertRoutesAgainstTheLibrary(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tok"), []byte("t\n"), 0o600))
	cfgPath := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(`store: gc.db
chat: {platform: console}
targets:
  infra-prd: {simulator: {}}
alerts:
  alertmanager: {token_file: tok}
  routes:
    - {match: {alertname: A}, channel: "#c", runbook: worker-disk-ful}
    - {match: {alertname: B}, channel: "#c", runbook: worker-disk-full, params: {wrker: "0"}}
`), 0o600))
	_, err := run(t, "", "config", "check", "--config", cfgPath)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `alerts.routes[0].runbook: there is no runbook "worker-disk-ful" (did you mean "worker-disk-full"?)`)
	assert.Contains(t, err.Error(), `alerts.routes[1].params.wrker: runbook worker-disk-full has no parameter "wrker" (it has: worker)`)
}

// A simulator world file with no users: the simulator lets admin/admin in,
// so the target logs in as admin (every operation failed "no credentials").
func TestSimulatorWorldWithoutUsersLogsInAsAdmin(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "world.yaml"), []byte("cluster_name: bare\n"), 0o600))
	cfgPath := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("store: gc.db\nserver: {listen: \"127.0.0.1:0\"}\nchat: {platform: console}\ntargets:\n  infra-prd: {simulator: {world: world.yaml}}\n"), 0o600))
	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	a, err := newApp(cfg, appOptions{In: strings.NewReader(""), Out: &syncBuffer{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	defer a.close()
	tc := a.cfg.ConcourseTarget("infra-prd")
	assert.Equal(t, "admin", tc.Username)
	c, err := concourse.New(tc)
	require.NoError(t, err)
	_, err = c.Workers(context.Background())
	require.NoError(t, err, "an operation on the simulator works")
}

// What the bot posts on its own into a channel bound to teams covers only
// theirs: its digests and its watch rules get the binding's teams.
func TestDigestsAndWatchPostedIntoABoundChannelAreOfItsTeams(t *testing.T) {
	cfg := writeConfig(t, `
chat: {platform: console}
channels:
  "#payments-ci": {teams: [payments]}
digests:
  - {target: infra-prd, channel: "#payments-ci", schedule: "0 8 * * *"}
  - {target: infra-prd, channel: "#ci-ops", schedule: "0 8 * * *"}
watch:
  - {target: infra-prd, channel: "#payments-ci", pending_builds: 10}
  - {target: infra-prd, channel: "#ci-ops", pending_builds: 10}
`)
	ds := digestSchedules(cfg)
	require.Len(t, ds, 2)
	assert.Equal(t, []string{"payments"}, ds[0].Teams)
	assert.Nil(t, ds[1].Teams)
	rules := watchRules(cfg)
	require.Len(t, rules, 2)
	assert.Equal(t, []string{"payments"}, rules[0].Teams)
	assert.Nil(t, rules[1].Teams)
}
