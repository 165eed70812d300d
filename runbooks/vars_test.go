package runbooks

import (
	"io/fs"
	"testing"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A step whose instructions use a target var the target does not set says
// so in plain words instead of failing with a template error (issue 26:
// "rendering template: line 6: <.vars.zone>: map has no entry for key zone").
func TestRender_MissingTargetVarSaysSo(t *testing.T) {
	env := Env{EnvVars: map[string]any{"target": "infra"}, EnvTarget: "infra-prd"}
	out, err := Render(`trackbone shell -z {{ .vars.zone }} -c {{ index .vars "cloud" | default "fe" }}_concourse_workers_{{ .vars.target }}`, env)
	require.NoError(t, err)
	assert.Equal(t, "trackbone shell -z <zone: not set in the target's vars> -c fe_concourse_workers_infra", out)
	_, err = Render(`{{ .params.nope }}`, Env{EnvParams: map[string]any{}})
	assert.Error(t, err, "other missing keys are still errors")
	out, err = Render(`{{ .vars.zone }}`, Env{})
	require.NoError(t, err, "no vars at all")
	assert.Equal(t, MissingVar("zone"), out)
}

func TestVarsUsed_BuiltinRunbooks(t *testing.T) {
	rbs, err := LoadFS(Builtin(), nil)
	require.NoError(t, err)
	byName := map[string]*runbookmodel.Runbook{}
	for _, rb := range rbs {
		byName[rb.Name] = rb
	}
	assert.Equal(t, []string{"cloud", "target", "zone"}, VarsUsed(byName["worker-stalled"]), "cloud has no default: a guessed cloud gives commands that cannot work")
	assert.Equal(t, []string{"zone"}, VarsUsed(byName["web-restart"]))
	assert.Empty(t, VarsUsed(byName["abort-pending"]))
	_, err = fs.Stat(Builtin(), "worker-stalled.yaml")
	require.NoError(t, err)
}

// The VM-restart step names the Flexible Engine console only with cloud: fe.
func TestWorkerStalled_ConsoleFollowsTheCloud(t *testing.T) {
	rbs, err := LoadFS(Builtin(), nil)
	require.NoError(t, err)
	var text string
	for _, rb := range rbs {
		if rb.Name == "worker-stalled" {
			for _, s := range rb.Steps {
				if s.ID == "restart_vm" {
					text = s.Text
				}
			}
		}
	}
	require.NotEmpty(t, text)
	env := func(vars map[string]any) Env {
		return Env{EnvVars: vars, EnvTarget: "lab", EnvSteps: map[string]any{"worker": map[string]any{"result": map[string]any{"name": "worker-0"}}}}
	}
	fe, err := Render(text, env(map[string]any{"cloud": "fe"}))
	require.NoError(t, err)
	assert.Contains(t, fe, "Flexible Engine console")
	aws, err := Render(text, env(map[string]any{"cloud": "aws"}))
	require.NoError(t, err)
	assert.Contains(t, aws, "AWS console")
	none, err := Render(text, env(map[string]any{}))
	require.NoError(t, err)
	assert.NotContains(t, none, "Flexible Engine")
	assert.Contains(t, none, "your cloud provider's console")
}
