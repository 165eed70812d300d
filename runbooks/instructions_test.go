package runbooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command that cannot be filled is not shown with a placeholder nobody
// can paste: it says which setting is missing (issue 39: `terraform taint
// '…instance["<WORKER_ID>"]'` and a cloud defaulting to fe).
func TestRenderInstructions_SaysWhichSettingIsMissing(t *testing.T) {
	text := "Enter the shell:\n```\ncd ~/git\ntrackbone shell -z {{ .vars.zone }} -c {{ .vars.cloud }}_concourse_workers\n" +
		"terraform taint 'instance[\"{{ .steps.worker.result.id | default (unset \"workers.name\" \"WORKER_ID\") }}\"]'\n./apply.sh\n```\n" +
		"Then restart {{ .vars.cloud }}."
	env := NewEnv(nil, map[string]string{"zone": "infra-prd"}, "infra-prd", "infra-prd",
		map[string]StepEnv{"worker": {Status: "succeeded", Result: map[string]any{"id": ""}}}, RunEnv{})
	out, err := RenderInstructions(text, env)
	require.NoError(t, err)
	assert.Equal(t, "Enter the shell:\n```\ncd ~/git\n"+
		"# not shown: this command needs targets.infra-prd.vars.cloud (not set)\n"+
		"# not shown: this command needs targets.infra-prd.workers.name (not set)\n"+
		"./apply.sh\n```\n"+
		"Then restart <cloud: set targets.infra-prd.vars.cloud>.\n"+
		"⚠️ A command that needs `targets.infra-prd.vars.cloud`, `targets.infra-prd.workers.name` is not shown: set it in groundcrew.yaml (`groundcrew config check` says what each target lacks).", out)
	assert.NotContains(t, out, "WORKER_ID")

	t.Run("everything set: the text as rendered", func(t *testing.T) {
		env := NewEnv(nil, map[string]string{"zone": "infra-prd", "cloud": "fe"}, "infra-prd", "infra-prd",
			map[string]StepEnv{"worker": {Status: "succeeded", Result: map[string]any{"id": "0"}}}, RunEnv{})
		out, err := RenderInstructions(text, env)
		require.NoError(t, err)
		assert.Contains(t, out, "trackbone shell -z infra-prd -c fe_concourse_workers\nterraform taint 'instance[\"0\"]'")
		assert.NotContains(t, out, "⚠️")
	})
}
