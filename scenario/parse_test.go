package scenario_test

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/scenario"
)

func TestParse_Valid(t *testing.T) {
	src := `
runbook: hello
world: empty
tick: 1m
policy: {approvers: [carol], required: 1}
scenarios:
  - name: first
    tags: [main]
    inputs:
      - {as: alice, run: "hello"}
      - {advance: 2d}
      - {world: {resume_heartbeat: [w-0]}}
      - {as: bob, react: "✅", step: wave}
    expect: {state: succeeded, steps: {wave: succeeded, greet: {status: succeeded, summary: Hello}}}
  - name: second
    runbook: other
    target: ocb-example
    vars: {zone: ocb-example, target: client}
    database: demo
    inputs: [{as: alice, run: "other"}]
    expect: {state: failed}
`
	scs, err := scenario.Parse("x.yaml", []byte(src), nil)
	require.NoError(t, err)
	require.Len(t, scs, 2)
	a, b := scs[0], scs[1]
	assert.Equal(t, "hello/first", a.ID())
	assert.Equal(t, 7, a.Line)
	assert.Equal(t, []int{10, 11, 12, 13}, []int{a.Inputs[0].Line, a.Inputs[1].Line, a.Inputs[2].Line, a.Inputs[3].Line})
	assert.Equal(t, 48*time.Hour, a.Inputs[1].Advance.D())
	assert.Equal(t, time.Minute, a.Tick)
	assert.Equal(t, scenario.DefaultTarget, a.Target)
	assert.Equal(t, map[string]string{"zone": "infra-prd", "target": "infra"}, a.Vars, "the demo's vars by default")
	assert.Equal(t, []string{"carol"}, a.Approvals.Default.Approvers)
	assert.Equal(t, "empty", a.World.Preset)
	assert.Nil(t, a.Database)
	assert.True(t, a.HasTag("main"))
	assert.Equal(t, "succeeded", a.Expect.Steps["wave"].Status)
	assert.Equal(t, "Hello", a.Expect.Steps["greet"].Summary)

	assert.Equal(t, "other/second", b.ID())
	assert.Equal(t, "ocb-example", b.Target)
	assert.Equal(t, "client", b.Vars["target"])
	require.NotNil(t, b.Database)
	assert.NotEmpty(t, b.Database.Tables)
}

func TestParse_Errors(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"unknown field", "runbook: x\nscenarios:\n  - name: a\n    inptus: []\n    expect: {state: succeeded}\n", "field inptus not found"},
		{"no scenarios", "runbook: x\n", "no scenarios"},
		{"no runbook", "scenarios:\n  - name: a\n    expect: {state: none}\n", "no runbook"},
		{"no expect", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{as: a, run: x}]\n", "has no `expect:`"},
		{"two actions", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{as: a, run: x, advance: 1m}]\n    expect: {state: none}\n", "several actions (run, advance)"},
		{"no action", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{as: a}]\n    expect: {state: none}\n", "input does nothing"},
		{"missing as", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{run: x}]\n    expect: {state: none}\n", "say who does it with `as: <user>`"},
		{"as on advance", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{as: bob, advance: 1m}]\n    expect: {state: none}\n", "`as` does not apply"},
		{"bad emoji", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{as: bob, react: tada}]\n    expect: {state: none}\n", `react "tada"`},
		{"bad state", "runbook: x\nscenarios:\n  - name: a\n    expect: {state: done}\n", `expect.state "done"`},
		{"bad step status", "runbook: x\nscenarios:\n  - name: a\n    expect: {steps: {s: ok}}\n", `status "ok"`},
		{"bad step field", "runbook: x\nscenarios:\n  - name: a\n    expect: {steps: {s: {stauts: failed}}}\n", `did you mean "status"?`},
		{"bad worker state", "runbook: x\nscenarios:\n  - name: a\n    expect: {world: {workers: {w: dead}}}\n", `"dead": use gone`},
		{"builds without count", "runbook: x\nscenarios:\n  - name: a\n    expect: {world: {builds: [{status: aborted}]}}\n", "count is required"},
		{"bad world preset", "runbook: x\nworld: prod\nscenarios:\n  - name: a\n    expect: {state: none}\n", `world "prod"`},
		{"world and world_file", "runbook: x\nworld: demo\nworld_file: w.yaml\nscenarios:\n  - name: a\n    expect: {state: none}\n", "either world or world_file"},
		{"bad duration", "runbook: x\nscenarios:\n  - name: a\n    inputs: [{advance: soon}]\n    expect: {state: none}\n", `"soon" is not a duration`},
		{"bad size", "runbook: x\ndatabase: {tables: [{team: t, pipeline: p, size: huge}]}\nscenarios:\n  - name: a\n    expect: {state: none}\n", `"HUGE" is not a size`},
		{"duplicate", "runbook: x\nscenarios:\n  - name: a\n    expect: {state: none}\n  - name: a\n    expect: {state: none}\n", `scenario "a" is already defined on line 3`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := scenario.Parse("x.yaml", []byte(c.src), nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "x.yaml")
		})
	}
}

func TestLoadFS_WorldFileAndErrorsOfEveryFile(t *testing.T) {
	fsys := fstest.MapFS{
		"ok/a.yaml":              {Data: []byte("runbook: x\nworld_file: worlds/w.world.yaml\nscenarios:\n  - name: a\n    expect: {state: none}\n")},
		"ok/worlds/w.world.yaml": {Data: []byte("workers: [{name: w-0}]\n")},
		"bad1.yaml":              {Data: []byte("runbook: x\n")},
		"bad2.yml":               {Data: []byte("scenarios: [{name: a, expect: {state: none}}]\n")},
		".hidden/c.yaml":         {Data: []byte("nonsense")},
		"notes.txt":              {Data: []byte("nonsense")},
	}
	scs, err := scenario.LoadFS(fsys)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad1.yaml:1: no scenarios")
	assert.Contains(t, err.Error(), "bad2.yml:1: scenario \"a\": no runbook")
	assert.NotContains(t, err.Error(), ".hidden")
	require.Len(t, scs, 1, "the valid file's scenario is returned; the world file is not read as a scenario file")
	assert.Contains(t, string(scs[0].World.Inline), "w-0")
}
