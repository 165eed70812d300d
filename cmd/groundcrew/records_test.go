package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

const brokenWorkerStalled = "name: worker-stalled\ntitle: Ours\nsteps:\n  - id: a\n    kind: query\n    opp: concourse.workers\n"

func TestLint_AcceptsFiles(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	good := filepath.Join(dir, "good.yml")
	require.NoError(t, os.WriteFile(bad, []byte(brokenWorkerStalled), 0o600))
	require.NoError(t, os.WriteFile(good, []byte("name: ok\nsteps:\n  - id: a\n    kind: manual\n    text: t\n"), 0o600))

	out, err := run(t, "", "lint", good)
	require.NoError(t, err, out)
	assert.Contains(t, out, "1 runbook(s) OK")

	out, err = run(t, "", "lint", good, bad)
	require.Error(t, err)
	assert.Contains(t, out, bad+":6:5: unknown field \"opp\"")

	_, err = run(t, "", "lint", filepath.Join(dir, "missing.yaml"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.yaml: no such file or directory")
}

// A broken override: serve starts, logs the file with its errors, and
// refuses to run the built-in of that name; config check fails.
func TestServe_BrokenOverrideIsUnavailable(t *testing.T) {
	dir := t.TempDir()
	rbDir := filepath.Join(dir, "runbooks")
	require.NoError(t, os.MkdirAll(rbDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(rbDir, "worker-stalled.yaml"), []byte(brokenWorkerStalled), 0o600))
	cfgPath := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("store: gc.db\nchat: {platform: console}\ntargets:\n  infra-prd:\n    simulator: {}\n    vars: {zone: infra-prd, target: infra}\nrunbooks: ["+rbDir+"]\n"), 0o600))

	_, err := run(t, "", "config", "check", "--config", cfgPath)
	require.Error(t, err, "config check keeps failing on a broken file")
	assert.Contains(t, err.Error(), "worker-stalled.yaml:6:5")

	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	var logs, out bytes.Buffer
	a, err := newApp(cfg, appOptions{
		In:     strings.NewReader("/runbook run worker-stalled worker=0\n/runbook list\n"),
		Out:    &out,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err, "serve still starts")
	defer a.close()
	require.NoError(t, a.run(context.Background()))

	assert.Contains(t, logs.String(), `msg="audit head" component=audit head=0: when=start`, "the audit head is logged at start")
	assert.Contains(t, logs.String(), "runbook file does not load")
	assert.Contains(t, logs.String(), "runbook=worker-stalled")
	assert.Contains(t, logs.String(), "worker-stalled.yaml:6:5: unknown field")
	assert.Contains(t, out.String(), "Runbook `worker-stalled` is unavailable")
	assert.Contains(t, out.String(), "groundcrew lint "+rbDir)
	assert.Contains(t, out.String(), "`worker-stalled` ⚠️ broken")
	assert.NotContains(t, out.String(), "started by", "the built-in must not run")
}

func TestAuditVerify_ExpectDetectsCutTail(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db, err := store.Open(p, store.Options{})
	require.NoError(t, err)
	for range 4 {
		require.NoError(t, db.AppendAudit(context.Background(), runmodel.AuditEntry{Actor: "alice", Action: "approve"}))
	}
	head, err := db.AuditHead(context.Background())
	require.NoError(t, err)
	require.NoError(t, db.Close())

	out, err := run(t, "", "audit", "verify", "--store", p)
	require.NoError(t, err, out)
	assert.Contains(t, out, "head: "+head.String()+"\n")
	out, err = run(t, "", "audit", "verify", "--store", p, "--expect", head.String())
	require.NoError(t, err, out)
	assert.Contains(t, out, "contains the expected head "+head.String())

	// Cut the last entry: the chain alone still verifies.
	bdb, err := bolt.Open(p, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, bdb.Update(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket([]byte("audit")).Cursor().Last()
		return tx.Bucket([]byte("audit")).Delete(k)
	}))
	require.NoError(t, bdb.Close())
	out, err = run(t, "", "audit", "verify", "--store", p)
	require.NoError(t, err, out)
	assert.Contains(t, out, "head: 3:")

	out, err = run(t, "", "audit", "verify", "--store", p, "--expect", head.String())
	require.Error(t, err)
	var exit *exitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 1, exit.code)
	assert.Contains(t, err.Error(), "audit log NOT intact: audit log does not contain the expected head: the log ends at entry 3 but the checkpoint "+head.String()+" has entry 4")
	assert.Contains(t, out, "head: 3:")

	_, err = run(t, "", "audit", "verify", "--store", p, "--expect", "four")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `--expect: "four" is not an audit head`)
}

func TestRunsShow_ListsChanges(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("store: gc.db\nchat: {platform: console}\ntargets:\n  infra-prd:\n    simulator: {}\n    vars: {zone: infra-prd, target: infra}\n"), 0o600))
	out, err := run(t, "/runbook run hello who=ops\n", "serve", "--config", cfg)
	require.NoError(t, err, out)
	db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
	require.NoError(t, err)
	runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.Len(t, runs, 1)

	out, err = run(t, "", "runs", "show", runs[0].ID, "--format", "json", "--store", filepath.Join(dir, "gc.db"))
	require.NoError(t, err, out)
	assert.Contains(t, out, `"changes": []`, "the JSON export has the changes, empty for a read-only run")
	out, err = run(t, "", "runs", "show", runs[0].ID, "--store", filepath.Join(dir, "gc.db"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "- **Changes made:** none")
}

func TestServe_PostsAuditCheckpoint(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("store: gc.db\nchat: {platform: console}\ntargets:\n  infra-prd:\n    simulator: {}\naudit: {checkpoint_channel: \"#ci-audit\", every: 1h}\n"), 0o600))
	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	var logs, out bytes.Buffer
	a, err := newApp(cfg, appOptions{In: strings.NewReader("/runbook list\n"), Out: &out, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer a.close()
	require.NoError(t, a.run(context.Background()))
	assert.Contains(t, out.String(), "Audit checkpoint")
	assert.Contains(t, out.String(), "groundcrew audit verify --expect 0:")
	assert.Contains(t, logs.String(), `msg="audit head posted" component=audit head=0: channel=#ci-audit`)
}

// /runbook list marks every runbook that needs an approval, explicit
// approval steps included (issue 26: web-restart, worker-disk-full and
// worker-disk-resize showed no 🔒).
func TestRunbookList_MarksApprovalSteps(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("store: gc.db\nchat: {platform: console}\ntargets:\n  infra-prd:\n    simulator: {}\n"), 0o600))
	cfg, err := config.Load(cfgPath)
	require.NoError(t, err)
	var out bytes.Buffer
	a, err := newApp(cfg, appOptions{In: strings.NewReader("/runbook list\n"), Out: &out, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer a.close()
	require.NoError(t, a.run(context.Background()))
	for _, name := range []string{"web-restart", "worker-disk-full", "worker-disk-resize", "prune-stalled"} {
		assert.Contains(t, out.String(), "• `"+name+"` 🔒 — ", name)
	}
	assert.NotContains(t, out.String(), "• `list-workers` 🔒")
}
