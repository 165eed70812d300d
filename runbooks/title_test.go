package runbooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRenderTitle checks that a title shows its fallback until the result
// it names is there, and never "<no value>" or an error.
func TestRenderTitle(t *testing.T) {
	pending := Env{
		EnvParams: map[string]any{"worker": ""}, EnvTarget: "infra-prd", EnvVars: map[string]any{},
		EnvSteps: map[string]any{"worker": map[string]any{"status": "pending", "summary": "", "result": nil, "by": ""}},
	}
	found := Env{
		EnvParams: map[string]any{"worker": ""}, EnvTarget: "infra-prd", EnvVars: map[string]any{},
		EnvSteps: map[string]any{"worker": map[string]any{"status": "succeeded", "summary": "stalled",
			"result": map[string]any{"name": "infra-prd-0", "found": true}, "by": ""}},
	}
	tests := []struct {
		name, title, pending, found string
	}{
		{"plain", "Restart concourse-worker", "Restart concourse-worker", "Restart concourse-worker"},
		{"default", `Wait for {{ .steps.worker.result.name | default "the worker" }} to be running`,
			"Wait for the worker to be running", "Wait for infra-prd-0 to be running"},
		{"with else", `Prune {{ with .steps.worker.result }}{{ .name }}{{ else }}the stalled worker{{ end }}`,
			"Prune the stalled worker", "Prune infra-prd-0"},
		{"missing key gets the default", `Restart {{ .steps.worker.result.host | default "the VM" }}`, "Restart the VM", "Restart the VM"},
		{"param and target", `Workers of {{ .target }}{{ with .params.worker }} ({{ . }}){{ end }}`, "Workers of infra-prd", "Workers of infra-prd"},
		{"bare result: no <no value>", `Wait for {{ .steps.worker.result.name }}`, "Wait for …", "Wait for infra-prd-0"},
		{"unknown var: no <no value>", `Zone {{ .vars.zone }}`, "Zone …", "Zone …"},
		{"execution error", `Zone {{ .steps.nope.result.name }}`, "Zone …", "Zone …"},
		{"parse error", `Zone {{ .params.worker `, "Zone {{ .params.worker", "Zone {{ .params.worker"},
		{"index of a result not there yet", `Pause {{ (index .steps.worker.result.pipelines 0).name | default "the heaviest pipeline" }}`,
			"Pause the heaviest pipeline", "Pause the heaviest pipeline"},
		{"lines joined", "Wait\n  for {{ .target }}", "Wait for infra-prd", "Wait for infra-prd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.pending, RenderTitle(tt.title, pending), "before the worker step ran")
			assert.Equal(t, tt.found, RenderTitle(tt.title, found), "after")
		})
	}
}

// TestRenderTitle_ValuesReadAsThemselves: a value with Markdown in it is
// shown as a code span wherever the title goes (chat, pages), so that
// `pipeline=.*` or `*prod*` is not read as emphasis; plain names and a
// value the author put between backticks stay as they are.
func TestRenderTitle_ValuesReadAsThemselves(t *testing.T) {
	env := func(pipeline string) Env {
		return Env{EnvParams: map[string]any{"pipeline": pipeline, "team": "main", "since": "24h"}, EnvTarget: "infra-prd", EnvVars: map[string]any{},
			EnvSteps: map[string]any{"pending": map[string]any{"status": "succeeded", "result": map[string]any{"by_pipeline": []any{map[string]any{"team": "main", "pipeline": "_tmp_"}}}}}}
	}
	abort := "Abort the pending builds of {{ if .params.team }}{{ .params.team }}/{{ end }}{{ .params.pipeline }} (last {{ .params.since }})"
	assert.Equal(t, "Abort the pending builds of main/`.*` (last 24h)", RenderTitle(abort, env(".*")))
	assert.Equal(t, "Abort the pending builds of main/`*prod*` (last 24h)", RenderTitle(abort, env("*prod*")))
	assert.Equal(t, "Abort the pending builds of main/deploy_prod (last 24h)", RenderTitle(abort, env("deploy_prod")))
	assert.Equal(t, "Clear `.*` now", RenderTitle("Clear `{{ .params.pipeline }}` now", env(".*")), "the author's code span")
	assert.Equal(t, "Pause `_tmp_` then `.*`", RenderTitle("Pause {{ with index .steps.pending.result.by_pipeline 0 }}{{ .pipeline }}{{ end }} then {{ .params.pipeline }}", env(".*")))
	assert.Equal(t, "Pause the heaviest", RenderTitle(`Pause {{ .steps.pending.result.name | default "the heaviest" }}`, env(".*")))
}
