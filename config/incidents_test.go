package config

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/watch"
)

const incidentsBase = `
chat: {platform: console}
targets:
  infra-prd: {simulator: {}}
`

func TestParse_AlertsAndWatch(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "am-token", "t0ken\n")
	p := write(t, dir, "groundcrew.yaml", incidentsBase+`
alerts:
  alertmanager: {token_file: am-token, url: "http://127.0.0.1:9093"}
  routes:
    - match: {alertname: "FileSystemSpace(FillingUp|AlmostOutOfSpace)", mountpoint: "/opt/concourse/worker.*"}
      target: infra-prd
      channel: "#ci-ops"
      runbook: worker-disk-full
      params: {worker: "{{ .labels.instance | workerID }}"}
      autostart: read_only
watch:
  - target: infra-prd
    channel: "#ci-ops"
    every: 1m
    worker_stalled_for: 5m
    pending_builds: 500
    oldest_pending: 30m
    build_logs_bytes: 20GiB
`)
	c, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, "t0ken", c.Alerts.Alertmanager.Token.Value())
	require.Len(t, c.AlertRoutes(), 1)
	assert.True(t, c.AlertRoutes()[0].Autostart)
	require.Len(t, c.Watch, 1)
	assert.Equal(t, 5*time.Minute, c.Watch[0].WorkerStalledFor)
	assert.Equal(t, watch.ByteSize(20<<30), c.Watch[0].BuildLogsBytes)
}

func TestParse_AlertsAndWatchErrors(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "groundcrew.yaml", incidentsBase+`
alerts:
  alertmanager: {url: "ftp://x"}
  routes:
    - match: {alertname: "("}
      target: infra-stg
      runbook: worker-disk-full
      autostart: always
watch:
  - {target: nope, every: 1s}
`)
	_, err := Load(p)
	require.Error(t, err)
	msg := err.Error()
	for _, want := range []string{
		"alerts.alertmanager: has no token: set token_file (or GROUNDCREW_ALERTMANAGER_TOKEN)",
		"alerts.alertmanager.url: \"ftp://x\" is not an http(s) URL",
		"alerts.routes[0].match.alertname: \"(\" is not a regular expression",
		"alerts.routes[0].channel: is required",
		"alerts.routes[0].autostart: \"always\": the only value is read_only",
		"alerts.routes[0].target: no target \"infra-stg\" is configured; did you mean \"infra-prd\"? (targets: infra-prd)",
		"watch[0].target: no target \"nope\" is configured",
		"watch[0].channel: is required",
		"watch[0].every: 1s is too often",
	} {
		assert.Contains(t, msg, want)
	}
}

func TestParse_UnknownKeyInRouteHasItsLine(t *testing.T) {
	p := write(t, t.TempDir(), "groundcrew.yaml", incidentsBase+`
alerts:
  routes:
    - matches: {alertname: X}
`)
	_, err := Load(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 8: unknown key "matches" in alerts.routes[]; did you mean "match"?`)
}

// A digest or a watch rule posting to a channel bound to other targets
// is refused (it would show what the channel may not act on); one
// written otherwise than its binding (its name, bound by id) too, when
// the platform says they are the same channel.
func TestParse_PostingIntoABoundChannel(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "groundcrew.yaml", incidentsBase+`
channels:
  "#stg-ci": {targets: [infra-stg]}
  C0PAY: {teams: [payments]}
digests:
  - {target: infra-prd, channel: "#stg-ci", schedule: "0 8 * * *"}
watch:
  - {target: infra-prd, channel: "#stg-ci", pending_builds: 10}
`)
	_, err := Load(p)
	require.Error(t, err)
	for _, want := range []string{
		"digests[0].channel: #stg-ci is bound to infra-stg only (`channels.#stg-ci`), not to \"infra-prd\": its digest would show what the channel may not act on",
		"watch[0].channel: #stg-ci is bound to infra-stg only",
	} {
		assert.Contains(t, err.Error(), want)
	}

	p = write(t, dir, "groundcrew.yaml", incidentsBase+`
channels:
  C0PAY: {teams: [payments]}
digests:
  - {target: infra-prd, channel: "#payments-ci", schedule: "0 8 * * *"}
  - {target: infra-prd, channel: C0PAY, schedule: "0 8 * * *"}
`)
	cfg, err := Load(p)
	require.NoError(t, err)
	ids := map[string]string{"#payments-ci": "C0PAY", "C0PAY": "C0PAY"}
	_, err = cfg.Check(context.Background(), policy.Known{Targets: cfg.TargetNames(), Channel: func(_ context.Context, name string) (string, error) { return ids[name], nil }})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "digests[0].channel: #payments-ci is the channel bound as `channels.C0PAY`: write it the same way (\"C0PAY\"), so what is posted there covers only what the binding allows")
	assert.NotContains(t, err.Error(), "digests[1]")
}
