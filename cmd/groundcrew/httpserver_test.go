package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/config"
)

// syncBuffer is a bytes.Buffer safe for the console and the test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// servingApp starts `serve` (console chat, a simulator target, the HTTP
// server on a free port) and returns it with the writer of its input.
// Closing the input ends it; the returned channel gives run's error.
func servingApp(t *testing.T, extra string) (*app, io.WriteCloser, *syncBuffer, <-chan error) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
store: gc.db
server: {listen: "127.0.0.1:0"}
chat: {platform: console}
targets:
  infra-prd:
    simulator: {}
`+extra), 0o600))
	cfg, err := config.Load(path)
	require.NoError(t, err)
	in, w := io.Pipe()
	out := &syncBuffer{}
	a, err := newApp(cfg, appOptions{In: in, Out: out})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = w.Close()
		<-done
		a.close()
	})
	require.Eventually(t, func() bool { return a.httpAddr.Load() != nil }, 10*time.Second, 10*time.Millisecond)
	return a, w, out, done
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestServe_MetricsCountARun scrapes /metrics from a running serve after a
// run and finds it counted; /healthz and /readyz answer in console mode.
func TestServe_MetricsCountARun(t *testing.T) {
	a, in, out, _ := servingApp(t, "")
	base := "http://" + *a.httpAddr.Load()

	code, body := get(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)

	require.Eventually(t, func() bool {
		code, body := get(t, base+"/readyz")
		var r readyBody
		_ = json.Unmarshal([]byte(body), &r)
		return code == http.StatusOK && r.Ready && r.Targets["infra-prd"].LoginOK
	}, 10*time.Second, 20*time.Millisecond, "ready, with the target reachable and logged in")

	_, err := io.WriteString(in, "/runbook run list-workers target=infra-prd\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "list-workers on `infra-prd` finished") },
		10*time.Second, 20*time.Millisecond, out.String())

	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`groundcrew_runs_started_total{runbook="list-workers"} 1`,
		`groundcrew_runs_finished_total{outcome="succeeded",runbook="list-workers"} 1`,
		`groundcrew_op_calls_total{operation="concourse.workers",outcome="ok",phase="do",target="infra-prd"} 1`,
		`groundcrew_step_duration_seconds_count{kind="query",status="succeeded"} 1`,
		`groundcrew_target_up{target="infra-prd"} 1`,
		`groundcrew_target_login_ok{target="infra-prd"} 1`,
		`groundcrew_chat_connected 1`,
		`groundcrew_ready 1`,
		`groundcrew_outbox_items 0`,
		`groundcrew_build_info{goversion=`,
		`groundcrew_store_size_bytes `,
	} {
		assert.Contains(t, metrics, want)
	}
}

// TestServe_TargetDownIsStillReady: an unreachable target shows in the
// body and the metrics, and the bot stays ready.
func TestServe_TargetDownIsStillReady(t *testing.T) {
	a, _, _, _ := servingApp(t, "  down:\n    url: http://127.0.0.1:1\n    username: u\n    password: p\n")
	base := "http://" + *a.httpAddr.Load()
	var r readyBody
	require.Eventually(t, func() bool {
		code, body := get(t, base+"/readyz")
		r = readyBody{}
		_ = json.Unmarshal([]byte(body), &r)
		return code == http.StatusOK && !r.Targets["down"].Checked.IsZero() && r.Targets["infra-prd"].LoginOK
	}, 10*time.Second, 20*time.Millisecond)
	assert.False(t, r.Targets["down"].Reachable)
	assert.Contains(t, r.Targets["down"].Error, "127.0.0.1:1")
	_, metrics := get(t, base+"/metrics")
	assert.Contains(t, metrics, `groundcrew_target_up{target="down"} 0`)
	assert.Contains(t, metrics, `groundcrew_api_errors_total{api="concourse",reason="transport",target="down"}`)
}

// TestReadyz_NotReadyWithoutStore: without the store /readyz is 503 and
// says why; chat not connected is said too, and does not by itself make
// the bot unready (it must still be sent the Alertmanager webhook).
func TestReadyz_NotReadyWithoutStore(t *testing.T) {
	a := &app{cfg: emptyConfig(), mux: http.NewServeMux()}
	b := a.readiness()
	assert.False(t, b.Ready)
	assert.Equal(t, "not open", b.Checks["store"])
	assert.Equal(t, "not connected", b.Checks["chat"])
}

// TestAdminSocket_CommandsWhileServeRuns: runs list|show and audit
// verify|export work while serve holds the store, through the admin socket
// (0600); a missing run is still "no run".
func TestAdminSocket_CommandsWhileServeRuns(t *testing.T) {
	a, in, out, _ := servingApp(t, "")
	_, err := io.WriteString(in, "/runbook run list-workers target=infra-prd\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "list-workers on `infra-prd` finished") },
		10*time.Second, 20*time.Millisecond, out.String())
	require.Eventually(t, func() bool { _, err := os.Stat(a.cfg.Server.AdminSocket); return err == nil }, 5*time.Second, 10*time.Millisecond)
	st, err := os.Stat(a.cfg.Server.AdminSocket)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	store := a.cfg.Store
	got, err := run(t, "", "runs", "list", "--store", store, "--format", "json")
	require.NoError(t, err, got)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(got), &runs), got)
	require.Len(t, runs, 1)
	assert.Equal(t, "list-workers", runs[0]["runbook"])
	assert.Equal(t, "succeeded", runs[0]["state"])
	id := runs[0]["id"].(string)

	got, err = run(t, "", "runs", "list", "--store", store)
	require.NoError(t, err, got)
	assert.Contains(t, got, id)

	got, err = run(t, "", "runs", "show", id, "--store", store)
	require.NoError(t, err, got)
	assert.Contains(t, got, "list-workers")

	_, err = run(t, "", "runs", "show", "r-nope", "--store", store)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no run "r-nope"`)

	got, err = run(t, "", "audit", "verify", "--store", store)
	require.NoError(t, err, got)
	assert.Contains(t, got, "audit log intact")

	got, err = run(t, "", "audit", "export", "--store", store)
	require.NoError(t, err, got)
	assert.Contains(t, got, `"run_started"`)
}
