package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func run(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestDemo runs the README's first command the way a newcomer does.
func TestDemo(t *testing.T) {
	out, err := run(t, "", "demo", "--delay", "0")
	require.NoError(t, err, out)
	for _, want := range []string{
		"🛠 worker-stalled on `infra-prd` — started by @alice",
		"3 running, 1 stalled",
		`ssh -t "cloud@bst.infra-prd.caascad.com" ssh "caascad-ci-workers-infra-infra-prd-0.infra-prd.caascad.com"`,
		"timed out after 21 min",
		"Approval needed — Prune the stalled worker",
		"• worker `caascad-ci-workers-infra-infra-prd-0` — stalled, 236 containers",
		"@alice — not counted: you started this run",
		"Approved by @carol",
		"✅ worker-stalled on `infra-prd` finished",
	} {
		assert.Contains(t, out, want)
	}
}

// TestDemoAlert: an alert opens an incident, 👀 acknowledges, the button
// starts the runbook in the incident thread, the resolved alert resolves it.
func TestDemoAlert(t *testing.T) {
	out, err := run(t, "", "demo", "--alert", "--delay", "0")
	require.NoError(t, err, out)
	for _, want := range []string{
		"#1 🚨 FileSystemSpaceFillingUp on `infra-prd` — incident `i-",
		"Suggested: `/runbook run worker-disk-full target=infra-prd worker=0`",
		"[👀 Acknowledge] [▶ Run worker-disk-full]",
		"Alertmanager → POST /alertmanager (firing, 1 alert): 200 ok",
		"👀 @bob acknowledged",
		"Source: Alertmanager (disk-full) · 2 notifications",
		"↳ 🛠 worker-disk-full on `infra-prd` — started by @bob",
		"Approved by @carol",
		"✅ Resolved after 15 min — Alertmanager says the alerts are resolved.",
		"Still open in this thread: `r-",
		"✅ No open incidents.",
	} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, 1, strings.Count(out, "🚨 FileSystemSpaceFillingUp on `infra-prd` — incident"), "one incident however many notifications")
	_, sum, ok := strings.Cut(out, "📋 Incident summary — ✅ incident `i-")
	require.True(t, ok, "the thread's summary is headed by the incident")
	for _, want := range []string{"resolved after 15 min · acknowledged by @bob", "1 run in this thread", "🚨 opened — FileSystemSpaceFillingUp",
		"👀 acknowledged — @bob", "started by @bob", "go_ahead: approved by @carol", "✅ resolved — resolved after 15 min"} {
		assert.Contains(t, sum, want, "one timeline")
	}
	assert.NotContains(t, sum, "✅ Incident `i-", "no second message with the incident's own timeline")
}

func TestLint(t *testing.T) {
	out, err := run(t, "", "lint")
	require.NoError(t, err, out)
	assert.Contains(t, out, "runbook(s) OK")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: bad\nsteps:\n  - id: a\n    kind: query\n    opp: concourse.workers\n"), 0o600))
	out, err = run(t, "", "lint", dir)
	require.Error(t, err)
	assert.Contains(t, out, "bad.yaml:5:5")
	assert.Contains(t, out, `did you mean "op"`)
}

func TestConfigCheckAndServeScripted(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
store: gc.db
chat: {platform: console}
targets:
  infra-prd:
    simulator: {}
    vars: {zone: infra-prd, target: infra}
`), 0o600))
	out, err := run(t, "", "config", "check", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "is valid: 1 target(s) (infra-prd)")

	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("targets:\n  x: {url: ci.example.com, pasword: y}\n"), 0o600))
	_, err = run(t, "", "config", "check", "--config", bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 2: unknown key "pasword" in targets.<name>; did you mean "password"?`)

	// Scripted serve: the run waits for a person at the end of input and
	// resumes from the store on the next start.
	out, err = run(t, "/runbook run hello who=ops\n", "serve", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "Wave back")
	out, err = run(t, "", "runs", "list", "--store", filepath.Join(dir, "gc.db"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "waiting for a person")

	out, err = run(t, "", "audit", "verify", "--store", filepath.Join(dir, "gc.db"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "audit log intact")
}
