package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// TestReload_EveryKeyIsClassified: a new top-level config key must say
// whether a reload applies it or needs a restart (and why).
func TestReload_EveryKeyIsClassified(t *testing.T) {
	typ := reflect.TypeOf(config.Config{})
	seen := 0
	for i := 0; i < typ.NumField(); i++ {
		k := yamlKey(typ.Field(i))
		if k == "" {
			continue
		}
		_, r := reloadable[k]
		_, s := restartOnly[k]
		assert.True(t, r != s, "config key %q must be in exactly one of reloadable and restartOnly (cmd/groundcrew/reload.go)", k)
		seen++
	}
	assert.Equal(t, len(reloadable)+len(restartOnly), seen, "reload.go names a key the config does not have")
}

// greet is a runbook whose version shows in its title and its last step.
func greet(v string) string {
	return fmt.Sprintf(`name: greet
title: Greet %[1]s
description: reload test
steps:
  - id: look
    kind: manual
    title: Look around
    text: look around
  - id: ok
    kind: approval
    title: OK to greet?
  - id: say
    kind: query
    op: core.echo
    args: {message: "greetings from %[1]s"}
`, v)
}

func post(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "text/plain", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestServe_Reload changes a runbook, the approval policy and a watch rule
// under a running serve: the run started before keeps its runbook and
// policy (and says so), a new run gets the new ones; an invalid file and a
// change that needs a restart are refused whole, the running
// configuration kept; SIGHUP reloads too.
func TestServe_Reload(t *testing.T) {
	rbDir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(rbDir, "greet.yaml"), []byte(greet("v1")), 0o600))
	conf := func(approver, every string) string {
		return fmt.Sprintf(`runbooks: [%q]
approvals:
  default: {approvers: [%s], required: 1}
watch:
  - {target: infra-prd, channel: "#ops", every: %s, pending_builds: 100000}
`, rbDir, approver, every)
	}
	a, in, out, _ := servingApp(t, conf("bob", "1m"))
	base := "http://" + *a.httpAddr.Load()
	path := a.cfg.Path
	head, err := os.ReadFile(path)
	require.NoError(t, err)
	start := strings.TrimSuffix(string(head), conf("bob", "1m"))
	write := func(s string) { require.NoError(t, os.WriteFile(path, []byte(start+s), 0o600)) }
	say := func(lines ...string) {
		for _, l := range lines {
			_, err := io.WriteString(in, l+"\n")
			require.NoError(t, err)
		}
	}
	waitFor := func(s string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(out.String(), s) }, 10*time.Second, 20*time.Millisecond, out.String())
	}
	runs := func() []*runmodel.Run {
		rs, err := a.db.ListRuns(t.Context(), runmodel.RunQuery{})
		require.NoError(t, err)
		return rs
	}
	_, metrics := get(t, base+"/metrics")
	assert.Contains(t, metrics, "groundcrew_config_last_reload_successful 1")
	assert.Contains(t, metrics, "groundcrew_config_last_reload_success_timestamp_seconds ")
	require.Equal(t, time.Minute, a.reloads.watch.current().Rules()[0].Every)

	say("/runbook run greet target=infra-prd")
	require.Eventually(t, func() bool { rs := runs(); return len(rs) == 1 && rs[0].State == runmodel.RunAwaitingManual }, 10*time.Second, 20*time.Millisecond, out.String())
	old := runs()[0]

	// The new versions.
	require.NoError(t, os.WriteFile(filepath.Join(rbDir, "greet.yaml"), []byte(greet("v2")), 0o600))
	write(conf("carol", "2m"))
	code, body := post(t, base+ReloadPath)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "configuration reloaded")
	assert.Equal(t, 2*time.Minute, a.reloads.watch.current().Rules()[0].Every, "the watch rule was replaced")
	_, metrics = get(t, base+"/metrics")
	assert.Contains(t, metrics, "groundcrew_config_last_reload_successful 1")

	say("/runbook status " + old.ID)
	waitFor("this run keeps the runbook and approval policy it started with")
	say("/runbook show greet")
	waitFor("Greet v2")

	// The old run: its gate asks for bob (the policy it started with), and
	// it says what v1 says.
	say("/runbook done " + old.ID)
	require.Eventually(t, func() bool { r, _ := a.db.GetRun(t.Context(), old.ID); return r.Gate != nil }, 10*time.Second, 20*time.Millisecond, out.String())
	r, err := a.db.GetRun(t.Context(), old.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"bob"}, r.Gate.Policy.Approvers)
	say("/as bob", "/runbook approve "+old.ID)
	waitFor("greetings from v1")

	// A new run gets v2 and carol.
	say("/as alice", "/runbook run greet target=infra-prd")
	require.Eventually(t, func() bool { return len(runs()) == 2 }, 10*time.Second, 20*time.Millisecond)
	var fresh *runmodel.Run
	for _, r := range runs() {
		if r.ID != old.ID {
			fresh = r
		}
	}
	assert.Equal(t, "Greet v2", fresh.Spec.Title)
	require.Eventually(t, func() bool { r, _ := a.db.GetRun(t.Context(), fresh.ID); return r.State == runmodel.RunAwaitingManual }, 10*time.Second, 20*time.Millisecond, out.String())
	say("/runbook done " + fresh.ID)
	require.Eventually(t, func() bool { r, _ := a.db.GetRun(t.Context(), fresh.ID); return r.Gate != nil }, 10*time.Second, 20*time.Millisecond, out.String())
	r, err = a.db.GetRun(t.Context(), fresh.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"carol"}, r.Gate.Policy.Approvers)

	// An invalid file is refused whole, with every problem.
	_, metrics = get(t, base+"/metrics")
	okAt := metricLine(metrics, "groundcrew_config_last_reload_success_timestamp_seconds")
	write(conf("carol", "3m") + "digests:\n  - {target: nowhere, channel: \"#ops\", schedule: \"0 8 * * *\"}\n  - {target: infra-prd, channel: \"#ops\", schedule: \"at noon\"}\n")
	code, body = post(t, base+ReloadPath)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "running one is kept")
	assert.Contains(t, body, "nowhere")
	assert.Contains(t, body, "at noon")
	write(conf("carol", "3m") + "bogus: 1\n")
	code, body = post(t, base+ReloadPath)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, `unknown key "bogus"`)
	assert.Equal(t, 2*time.Minute, a.reloads.watch.current().Rules()[0].Every, "nothing of the refused file applied")
	_, metrics = get(t, base+"/metrics")
	assert.Contains(t, metrics, "groundcrew_config_last_reload_successful 0")
	assert.Equal(t, okAt, metricLine(metrics, "groundcrew_config_last_reload_success_timestamp_seconds"))

	// A change that needs a restart is refused with the reason.
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(start, "store: gc.db", "store: other.db", 1)+conf("carol", "3m")), 0o600))
	code, body = post(t, base+ReloadPath)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, "store: changed, and that needs a restart (the store file is opened once, at start)")
	assert.Equal(t, 2*time.Minute, a.reloads.watch.current().Rules()[0].Every)

	code, _ = get(t, base+ReloadPath)
	assert.Equal(t, http.StatusMethodNotAllowed, code)

	// SIGHUP reloads.
	write(conf("carol", "3m"))
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	require.Eventually(t, func() bool { return a.reloads.watch.current().Rules()[0].Every == 3*time.Minute }, 10*time.Second, 20*time.Millisecond)
}

func metricLine(text, name string) string {
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, name+" ") {
			return l
		}
	}
	return ""
}
