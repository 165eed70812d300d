package runbooks

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testEnv is an Env shaped like the engine's: params and vars are strings,
// step results are JSON-decoded.
func testEnv() Env {
	return Env{
		EnvParams: map[string]string{"worker": "worker-3", "limit": "5", "reason": ""},
		EnvVars:   map[string]string{"zone": "eu-1"},
		EnvTarget: "infra-prd",
		EnvSteps: map[string]any{
			"workers": map[string]any{
				"status":  "succeeded",
				"summary": "3 running, 1 stalled",
				"result": map[string]any{
					"stalled": float64(1),
					"names":   []any{"worker-1", "worker-3"},
					"state":   "stalled",
				},
			},
		},
		EnvRun: map[string]any{"id": "r-42", "requester": "alice"},
	}
}

func TestEvalBool(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want bool
	}{
		{"string compare", `params.worker == "worker-3"`, true},
		{"missing param is empty", `params.nope == ""`, true},
		{"number from a string param", `int(params.limit) > 3`, true},
		{"step status", `steps.workers.status == "succeeded"`, true},
		{"result number", `steps.workers.result.stalled > 0`, true},
		{"membership in a result list", `params.worker in steps.workers.result.names`, true},
		{"len of a list", `len(steps.workers.result.names) == 2`, true},
		{"optional chaining on a step that did not run", `steps.later?.status == "succeeded"`, false},
		{"nil coalescing", `(steps.later?.result?.stalled ?? 0) == 0`, true},
		{"missing result field is nil", `steps.workers.result.nope == nil`, true},
		{"target and vars", `target == "infra-prd" && vars.zone startsWith "eu"`, true},
		{"run", `run.requester != "bob"`, true},
		{"not", `!(params.reason != "")`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := EvalBool(tt.expr, testEnv())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestEvalBool_Errors(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		wantErr string
	}{
		{"not a bool", `params.worker`, `evaluating "params.worker": `},
		{"field of a step that did not run", `steps.later.status == "x"`,
			`evaluating "steps.later.status == \"x\"": cannot fetch status from <nil> (at column 13); a step that has not run, or a missing field, is nil: use ?. and ?? (steps.x?.result?.count ?? 0)`},
		{"syntax", `params.worker ==`, `compiling "params.worker ==": unexpected token EOF (at column 16)`},
		{"number result", `1 + 1`, `compiling "1 + 1": expected bool, but got int`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EvalBool(tt.expr, testEnv())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NotContains(t, err.Error(), "\n", "errors are one line, for chat")
		})
	}
}

// TestEvalBool_NonBoolAtRuntime covers values whose type is only known at
// run time (step results).
func TestEvalBool_NonBoolAtRuntime(t *testing.T) {
	_, err := EvalBool(`steps.workers.result.state`, testEnv())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `evaluating "steps.workers.result.state"`)
}

func TestEvalBool_Concurrent(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := testEnv()
			env[EnvParams] = map[string]string{"worker": "w" + string(rune('0'+i))}
			got, err := EvalBool(`params.worker == "w`+string(rune('0'+i))+`" && steps.workers.result.stalled == 1`, env)
			assert.NoError(t, err)
			assert.True(t, got)
		}()
	}
	wg.Wait()
}
