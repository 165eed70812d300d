package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

// fillRuns writes n finished runs to a new store at path, one a minute
// back from now: runbooks, targets and states cycle.
func fillRuns(t testing.TB, path string, n int) {
	t.Helper()
	db, err := store.Open(path, store.Options{NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	now := time.Now().UTC()
	runbooks, targets := []string{"list-workers", "prune-worker", "abort-builds"}, []string{"infra-prd", "infra-stg"}
	states := []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled, runmodel.RunSucceeded}
	for i := range n {
		at := now.Add(-time.Duration(i) * time.Minute)
		r := &runmodel.Run{ID: fmt.Sprintf("r-%06d", i), Runbook: runbooks[i%3], Target: targets[i%2], State: states[i%4],
			Requester: chatmodel.User{ID: "U1", Name: "ana"}, CreatedAt: at, UpdatedAt: at, FinishedAt: at,
			Conversation: chatmodel.Conversation{Platform: "console", Channel: "ops"},
			Steps: []runmodel.StepState{{ID: "list", Kind: "query", Title: "List workers", Status: runmodel.StepSucceeded,
				Result: json.RawMessage(`{"summary":"` + strings.Repeat("worker w-1 stalled since 02:13; ", 60) + `"}`)}}}
		require.NoError(t, db.CreateRun(context.Background(), r, &runmodel.Batch{
			Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted, Time: at}, {Type: runmodel.JRunFinished, Time: at}},
			Audit:   []runmodel.AuditEntry{{Action: runmodel.ActionRunStarted, Actor: "U1", Time: at}}}))
	}
}

// TestRunsList_LimitFiltersAndAll: runs list shows the 50 most recent and
// says there are more; --limit, --state, --runbook, --target and --since
// narrow it; --all streams every run (JSON lines with --format json);
// wrong flags are refused with what to write.
func TestRunsList_LimitFiltersAndAll(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gc.db")
	fillRuns(t, path, 450)
	lines := func(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

	got, err := run(t, "", "runs", "list", "--store", path)
	require.NoError(t, err, got)
	l := lines(got)
	require.Len(t, l, 1+50+1, "header, 50 runs, the hint")
	assert.Contains(t, l[1], "r-000000", "most recent first")
	assert.Contains(t, l[50], "r-000049")
	assert.Equal(t, "(the 50 most recent shown: --limit N or --all for more)", l[51])

	got, err = run(t, "", "runs", "list", "--store", path, "--limit", "3", "--state", "failed,cancelled", "--runbook", "prune-worker", "--format", "json")
	require.NoError(t, err, got)
	var rs []runmodel.Run
	require.NoError(t, json.Unmarshal([]byte(got[:strings.LastIndex(got, "]")+1]), &rs), got)
	require.Len(t, rs, 3)
	for _, r := range rs {
		assert.Equal(t, "prune-worker", r.Runbook)
		assert.Contains(t, []runmodel.RunState{runmodel.RunFailed, runmodel.RunCancelled}, r.State)
	}
	assert.Equal(t, []string{"r-000001", "r-000010", "r-000013"}, []string{rs[0].ID, rs[1].ID, rs[2].ID})

	got, err = run(t, "", "runs", "list", "--store", path, "--since", "90m", "--target", "infra-stg")
	require.NoError(t, err, got)
	assert.Len(t, lines(got), 1+45, "odd runs of the last 90 minutes, no hint: nothing more")

	got, err = run(t, "", "runs", "list", "--store", path, "--since", "90m", "--runbook", "hello")
	require.NoError(t, err, got)
	assert.Equal(t, "(no runs match --since 90m --runbook hello)", lines(got)[len(lines(got))-1], "an empty table says why")
	empty := filepath.Join(t.TempDir(), "empty.db")
	fillRuns(t, empty, 0)
	got, err = run(t, "", "runs", "list", "--store", empty)
	require.NoError(t, err, got)
	assert.Contains(t, got, "(no runs in the store)")

	got, err = run(t, "", "runs", "list", "--store", path, "--all", "--format", "json")
	require.NoError(t, err)
	l = lines(got)
	require.Len(t, l, 450, "one JSON line per run")
	seen := map[string]bool{}
	for _, line := range l {
		var r runmodel.Run
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		assert.False(t, seen[r.ID], "%s listed twice", r.ID)
		seen[r.ID] = true
	}

	for args, want := range map[string]string{
		"--limit 0":             "--limit 0: use 1 to 10000, or --all (streamed)",
		"--all --limit 5":       "--all and --limit: use one of them",
		"--state finished":      `--state "finished": use one or more of active, running`,
		"--since yesterday":     `--since "yesterday": write a duration back from now (24h, 7d) or a date`,
		"--format yaml":         `--format "yaml": use table or json`,
		"--limit 20000 --all=f": "--limit 20000: use 1 to 10000",
	} {
		_, err := run(t, "", append([]string{"runs", "list", "--store", path}, strings.Fields(args)...)...)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// TestStoreCompact: the command compacts a stopped store and says what it
// gave back; a store serve holds is refused.
func TestStoreCompact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gc.db")
	fillRuns(t, path, 200)
	got, err := run(t, "", "store", "compact", "--store", path)
	require.NoError(t, err, got)
	assert.Regexp(t, `^compacted .*gc\.db: [0-9.]+ MB → [0-9.]+ MB \([0-9.-]+ MB given back\) in `, got)
	assert.Contains(t, got, "audit log verified: 200 entries, head 200:")
	assert.Contains(t, got, "; 200 runs")

	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	_, err = run(t, "", "store", "compact", "--store", path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stop groundcrew serve first")
}
