package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
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
		"Plan: prune 1 worker: caascad-ci-workers-infra-infra-prd-0 (stalled, 236 containers, up 38d)",
		"@alice — not counted: you started this run",
		"Approved by @carol",
		"✅ worker-stalled on `infra-prd` finished",
		"Approval needed — Prune the stalled worker caascad-ci-workers-infra-infra-prd-0",
		"Wait for caascad-ci-workers-infra-infra-prd-0 to be running",
	} {
		assert.Contains(t, out, want)
	}
	// One clock for the story, the bot and the simulated Concourse: the
	// script says 03:12, bob's steps are done then, the clock jumps 21 min,
	// carol approves at 03:33 and the gate expires 30 min later.
	assert.Contains(t, out, "# 03:12. alice is on call.")
	assertStoryTimes(t, out, "03:12", "04:03")
	for _, want := range []string{"done by @bob at 03:12", "approved 03:33", "expires in 30 min (04:03 UTC)", "up 38d", "finished after 21 min — pruned 1 worker"} {
		assert.Contains(t, out, want)
	}
}

var shownTime = regexp.MustCompile(`(?:^|[\s(])([0-2][0-9]:[0-5][0-9])(?:$|[\s)])`)

// assertStoryTimes checks that every time of day the bot shows (not the
// script's comments) is in [from, to] of the story.
func assertStoryTimes(t *testing.T, out, from, to string) {
	t.Helper()
	n := 0
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "groundcrew demo") {
			continue
		}
		for _, m := range shownTime.FindAllStringSubmatch(line, -1) {
			n++
			assert.True(t, m[1] >= from && m[1] <= to, "time %s outside the story (%s–%s): %s", m[1], from, to, strings.TrimSpace(line))
		}
	}
	assert.Positive(t, n, "the demo shows times")
}

// TestDemoAlert: an alert opens an incident, 👀 acknowledges, the button
// starts the runbook in the incident thread, the resolved alert resolves it.
func TestDemoAlert(t *testing.T) {
	out, err := run(t, "", "demo", "--alert", "--delay", "0")
	require.NoError(t, err, out)
	for _, want := range []string{
		"#1 🚨 FileSystemSpaceFillingUp · instance=caascad-ci-workers-infra-infra-prd-0:9100 on `infra-prd` — incident `i-",
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
	assert.Equal(t, 1, strings.Count(out, "🚨 FileSystemSpaceFillingUp · instance=caascad-ci-workers-infra-infra-prd-0:9100 on `infra-prd` — incident"), "one incident however many notifications")
	_, sum, ok := strings.Cut(out, "📋 Incident summary — ✅ incident `i-")
	require.True(t, ok, "the thread's summary is headed by the incident")
	for _, want := range []string{"resolved after 15 min · acknowledged by @bob", "1 run in this thread", "🚨 opened — FileSystemSpaceFillingUp",
		"👀 acknowledged — @bob", "started by @bob", "Destroy every container of caascad-ci-workers-infra-infra-prd-0 and restart it?: approved by @carol", "✅ resolved — resolved after 15 min"} {
		assert.Contains(t, sum, want, "one timeline")
	}
	assert.NotContains(t, sum, "✅ Incident `i-", "no second message with the incident's own timeline")
	// The story's clock: the alert fires at 04:09, is notified at 04:12, and
	// resolves 12 min later (04:24), 15 min after it started.
	assert.Contains(t, out, "# 04:12. For 3 minutes Prometheus")
	assertStoryTimes(t, out, "04:09", "04:43")
	for _, want := range []string{"Status: open since 04:09 UTC", "04:12 🚨 opened — FileSystemSpaceFillingUp · instance=caascad-ci-workers-infra-infra-prd-0:9100 (firing since 04:09)", "04:24 ✅ resolved — resolved after 15 min", "expires in 30 min (04:42 UTC)"} {
		assert.Contains(t, out, want)
	}
}

func TestLint(t *testing.T) {
	out, err := run(t, "", "lint")
	require.NoError(t, err, out)
	assert.Contains(t, out, "runbook(s) OK")
	assert.NotContains(t, out, "warning", "every built-in says why its steps are skipped")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("name: bad\nsteps:\n  - id: a\n    kind: query\n    opp: concourse.workers\n"), 0o600))
	out, err = run(t, "", "lint", dir)
	require.Error(t, err)
	assert.Contains(t, out, "bad.yaml:5:5")
	assert.Contains(t, out, `did you mean "op"`)

	// A when without because is a warning: reported, and lint succeeds.
	warn := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(warn, "w.yaml"), []byte("name: w\nsteps:\n  - id: a\n    kind: manual\n    text: t\n    when: params.x != \"\"\nparams: [{name: x, default: \"\"}]\n"), 0o600))
	out, err = run(t, "", "lint", warn)
	require.NoError(t, err, out)
	assert.Contains(t, out, `w.yaml:6:11: warning: when of step "a" has no because`)
	assert.Contains(t, out, "1 runbook(s) OK, 1 warning(s)")
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
	assert.NotContains(t, out, "web pages", "no web: configured")

	// the pages: how they are opened, a key rotation said
	require.NoError(t, os.WriteFile(filepath.Join(dir, "link-key"), []byte("fedcba9876543210fedcba9876543210\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old-link-key"), []byte("0123456789abcdef0123456789abcdef\n"), 0o600))
	withWeb := filepath.Join(dir, "web.yaml")
	require.NoError(t, os.WriteFile(withWeb, []byte("store: gc.db\nchat: {platform: console}\ntargets:\n  infra-prd: {simulator: {}, vars: {zone: infra-prd, target: infra}}\n"+
		"web: {url: https://gc.example.com, link_key_file: link-key, previous_link_key_file: old-link-key, link_ttl: 3d}\n"), 0o600))
	out, err = run(t, "", "config", "check", "--config", withWeb)
	require.NoError(t, err, out)
	assert.Contains(t, out, "web pages at https://gc.example.com: signed links (valid 3 days); links of web.previous_link_key still open (a key rotation: remove it 3 days after the rotation)")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "old-link-key"), []byte("fedcba9876543210fedcba9876543210\n"), 0o600))
	out, err = run(t, "", "config", "check", "--config", withWeb)
	require.Error(t, err)
	assert.Contains(t, out+err.Error(), "web.previous_link_key: is the same as web.link_key")

	pg := filepath.Join(dir, "pg.yaml")
	require.NoError(t, os.WriteFile(pg, []byte("store: postgres://gc:s3cret@127.0.0.1:1/gc\nchat: {platform: console}\ntargets:\n  infra-prd: {simulator: {}, vars: {zone: infra-prd, target: infra}}\n"), 0o600))
	out, err = run(t, "", "config", "check", "--config", pg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "store PostgreSQL postgres://gc@127.0.0.1:1/gc", "a postgres:// store is PostgreSQL, named without its password")
	assert.NotContains(t, out, "s3cret")

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
