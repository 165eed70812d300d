package scenario_test

import (
	"context"
	"errors"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/scenario"
)

const pruneRunbook = `
name: prune-test
params:
  - {name: worker, required: true}
steps:
  - id: list
    kind: query
    op: concourse.workers
  - id: check
    kind: manual
    text: "ssh {{ .params.worker }}"
  - id: wait
    kind: wait
    op: concourse.worker
    args: {name: "{{ .params.worker }}"}
    until: result.state == "running"
    timeout: 5m
    interval: 1m
    on_timeout: prune
    goto: end
  - id: prune
    kind: action
    op: concourse.prune_worker
    args: {name: "{{ .params.worker }}"}
`

const header = `
runbook: prune-test
world:
  workers:
    - {name: w-0, state: stalled, containers: 12}
    - {name: w-1, containers: 3}
scenarios:
`

func testOptions() scenario.Options {
	return scenario.Options{Runbooks: []runbooks.Source{{Name: "test", FS: fstest.MapFS{"prune.yaml": {Data: []byte(pruneRunbook)}}}}}
}

// run parses one scenario (the text after "scenarios:") and runs it.
func run(t *testing.T, body string) *scenario.Result {
	t.Helper()
	scs, err := scenario.Parse("test.yaml", []byte(header+body), nil)
	require.NoError(t, err)
	require.Len(t, scs, 1)
	return scenario.Run(context.Background(), scs[0], testOptions())
}

func TestRun_Passes(t *testing.T) {
	res := run(t, `
  - name: pruned
    inputs:
      - {as: alice, run: "prune-test worker=w-0"}
      - {as: bob, done: check}
      - {advance: 4m}
      - expect: {state: waiting, at: wait}
      - {advance: 2m}
      - expect: {state: awaiting_approval, at: prune}
      - {as: carol, approve: true}
    expect:
      state: succeeded
      steps: {check: {status: succeeded, by: bob}, wait: {status: failed, error: timed out}, prune: {status: succeeded, approved_by: [carol]}}
      called: [concourse.prune_worker@prune, concourse.workers]
      not_called: [concourse.land_worker]
      thread: ["ssh w-0"]
      world: {workers: {w-0: gone, w-1: running}, api: {"PUT /api/v1/workers/w-0/prune": 1}}
`)
	require.True(t, res.Passed(), res.Report())
	assert.Contains(t, res.Report(), "PASS prune-test/pruned (test.yaml:")
	var applied bool
	for _, c := range res.Calls {
		applied = applied || (c.Op == "concourse.prune_worker" && c.Phase == scenario.PhaseApply && c.Step == "prune")
	}
	assert.True(t, applied, "the calls are recorded with their phase")
}

func TestRun_ReportsEveryDifference(t *testing.T) {
	res := run(t, `
  - name: wrong
    inputs:
      - {as: alice, run: "prune-test worker=w-0"}
      - expect: {state: succeeded}
      - {as: bob, done: check}
    expect:
      state: failed
      at: check
      error: boom
      steps: {list: failed, nope: succeeded, check: {by: carol}}
      called: [concourse.prune_worker]
      not_called: [concourse.workers]
      thread: ["no such text"]
      not_thread: ["ssh w-0"]
      replies: ["refused"]
      world:
        workers: {w-0: gone}
        builds: [{status: pending, count: 3}]
        pipelines: {main/app: {paused: true}}
`)
	require.False(t, res.Passed())
	want := []string{
		"input 2 (line 12): checkpoint: run state: want succeeded, got the run is awaiting_manual at step check (awaiting_manual)",
		"run state: want failed, got the run is waiting at step wait (waiting)",
		"run position: want at step check, got the run is waiting at step wait (waiting)",
		`run error: want it to contain "boom", got ""`,
		"step list: want failed, got succeeded (1 running, 1 stalled)",
		"step nope: the runbook has no such step (steps: list, check, wait, prune)",
		"step check done by: want carol, got bob",
		"operation concourse.prune_worker: want called, got not called (calls: concourse.workers@list, concourse.worker@wait)",
		"operation concourse.workers: want not called, got called",
		`thread: want a message containing "no such text", got none`,
		`thread: want no message containing "ssh w-0", got one`,
		`replies: want one containing "refused", got: none`,
		"worker w-0: want gone, got stalled",
		"builds status=pending: want 3, got 0",
		"pipeline main/app: want it, got no such pipeline",
	}
	report := res.Report()
	for _, w := range want {
		assert.Contains(t, report, w)
	}
	assert.Contains(t, report, "FAIL prune-test/wrong (test.yaml:")
	assert.Contains(t, report, "thread:\n", "the thread is shown to explain the differences")
}

func TestRun_InputErrorsStopTheScenario(t *testing.T) {
	cases := []struct{ name, inputs, want string }{
		{"manual step not waiting", `[{as: alice, run: "prune-test worker=w-0"}, {as: bob, done: prune}]`,
			"input 2 (line 9): step prune is not waiting for a person (it is pending); the run is awaiting_manual at step check (awaiting_manual)"},
		{"no gate open", `[{as: alice, run: "prune-test worker=w-0"}, {as: carol, approve: true}]`,
			"no approval request is open: the run is awaiting_manual at step check"},
		{"unknown step", `[{as: alice, run: "prune-test worker=w-0"}, {as: bob, react: "✅", step: chek}]`,
			`the runbook has no step "chek"`},
		{"no run yet", `[{as: carol, command: "approve {run}"}]`,
			"{run} names the latest run, but no run was started"},
		{"run refused", `[{as: alice, run: "prune-test"}, {as: bob, done: check}]`,
			`no run was started (replies: ⚠️ missing required parameter "worker"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := run(t, "  - name: x\n    inputs: "+c.inputs+"\n    expect: {state: succeeded}\n")
			require.False(t, res.Passed())
			require.NotEmpty(t, res.Failures)
			assert.Contains(t, res.Failures[0].Where+": "+res.Failures[0].Msg, c.want)
			assert.Len(t, res.Failures, 1, "inputs after a failed one are not applied: %s", res.Report())
		})
	}
}

func TestRun_SetupErrors(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"runbook not in the library", "runbook: nope\nscenarios:\n  - name: x\n    expect: {state: none}\n", `runbook "nope" is not in the library`},
		{"bad world", "runbook: prune-test\nworld: {builds: [{pipeline: ghost, job: j}]}\nscenarios:\n  - name: x\n    expect: {state: none}\n", `pipeline "ghost"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scs, err := scenario.Parse("test.yaml", []byte(c.src), nil)
			require.NoError(t, err)
			res := scenario.Run(context.Background(), scs[0], testOptions())
			require.Error(t, res.Err)
			assert.True(t, errors.Is(res.Err, scenario.ErrSetup))
			assert.Contains(t, res.Err.Error(), c.want)
			assert.Contains(t, res.Report(), "FAIL")
		})
	}
}

func TestRun_LibraryErrorsAreShown(t *testing.T) {
	bad := runbooks.Source{Name: "mine", FS: fstest.MapFS{"bad.yaml": {Data: []byte("name: bad\nsteps:\n  - id: a\n    kind: query\n    op: concourse.wrokers\n")}}}
	scs, err := scenario.Parse("test.yaml", []byte(header+"  - name: x\n    expect: {state: none}\n"), nil)
	require.NoError(t, err)
	o := testOptions()
	o.Runbooks = append(o.Runbooks, bad)
	res := scenario.Run(context.Background(), scs[0], o)
	require.Error(t, res.Err)
	assert.Contains(t, res.Err.Error(), "mine/bad.yaml:5")
	assert.Contains(t, res.Err.Error(), "concourse.workers")
}
