package runbooks

import (
	"errors"
	"testing"
	"text/template"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRender(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"no template", "plain text, {not a template}", "plain text, {not a template}"},
		{"params vars target", "ssh {{ .params.worker }}.{{ .vars.zone }} on {{ .target }}", "ssh worker-3.eu-1 on infra-prd"},
		{"step summary", "{{ .steps.workers.summary }}", "3 running, 1 stalled"},
		{"index form", `{{ (index .steps "workers").status }}`, "succeeded"},
		{"result list join", `{{ .steps.workers.result.names | join ", " }}`, "worker-1, worker-3"},
		{"default for empty", `{{ .params.reason | default "none given" }}`, "none given"},
		{"default keeps a value", `{{ .params.worker | default "x" }}`, "worker-3"},
		{"upper lower", `{{ upper .target }} {{ lower "ABC" }}`, "INFRA-PRD abc"},
		{"quote plain word", `rm {{ quote .params.worker }}`, "rm worker-3"},
		{"quote needs quotes", `echo {{ quote "it's here" }}`, `echo 'it'\''s here'`},
		{"quote empty", `x {{ quote .params.reason }}`, "x ''"},
		{"duration", `{{ duration 7500 }} {{ duration 90 }} {{ duration 93600 }} {{ duration 0 }} {{ duration 45 }}`, "2h 5m 1m 30s 1d 2h 0s 45s"},
		{"duration from a JSON number and a string", `{{ duration .steps.workers.result.stalled }} {{ duration "3600" }}`, "1s 1h"},
		{"len", `{{ len .steps.workers.result.names }} {{ len .params.worker }}`, "2 8"},
		{"with and range", `{{ with .steps.workers }}{{ .status }}{{ end }}:{{ range .steps.workers.result.names }}[{{ . }}]{{ end }}`, "succeeded:[worker-1][worker-3]"},
		{"run", `{{ .run.id }} by {{ .run.requester }}`, "r-42 by alice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(tt.text, testEnv())
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRender_Errors(t *testing.T) {
	tests := []struct {
		name, text, wantErr string
	}{
		{"typo in a param", "{{ .params.wroker }}", `map has no entry for key "wroker"`},
		{"step that has not run", "{{ .steps.later.summary }}", `map has no entry for key "later"`},
		{"syntax", "{{ .params.worker }", "parsing template"},
		{"join of a non-list", "{{ join \",\" 5 }}", "join: number 5 is not a list"},
		{"duration of text", `{{ duration "soon" }}`, `duration: "soon" is not a number of seconds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Render(tt.text, testEnv())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestRenderArgs(t *testing.T) {
	args := map[string]any{
		"name":  "{{ .params.worker }}",
		"limit": "{{ .params.limit }}",
		"force": true,
		"count": 3,
		"none":  nil,
		"list":  []any{"{{ .target }}", 2, []any{"{{ .vars.zone }}"}},
		"nested": map[string]any{
			"who": "{{ .run.requester }}",
		},
	}
	got, err := RenderArgs(args, testEnv())
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"name":   "worker-3",
		"limit":  "5", // rendered values stay strings
		"force":  true,
		"count":  3,
		"none":   nil,
		"list":   []any{"infra-prd", 2, []any{"eu-1"}},
		"nested": map[string]any{"who": "alice"},
	}, got)
	assert.Equal(t, "{{ .params.worker }}", args["name"], "the input is not modified")

	empty, err := RenderArgs(nil, testEnv())
	require.NoError(t, err)
	assert.Nil(t, empty)
}

func TestRenderArgs_ErrorNamesTheArgument(t *testing.T) {
	_, err := RenderArgs(map[string]any{"note": []any{"ok", map[string]any{"x": "{{ .params.nope }}"}}}, testEnv())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `argument "note": item 2: argument "x": rendering template`)
}

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{59 * time.Second, "59s"},
		{time.Hour + 5*time.Second, "1h"},
		{2*time.Hour + 5*time.Minute, "2h 5m"},
		{-90 * time.Second, "-1m 30s"},
		{50 * time.Hour, "2d 2h"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, humanDuration(tt.in))
		})
	}
}

// TestRender_ErrorText checks the shortened messages, and that the
// text/template error stays reachable with errors.As.
func TestRender_ErrorText(t *testing.T) {
	_, err := Render("ok\n{{ .params.wroker }}", testEnv())
	require.Error(t, err)
	assert.Equal(t, `rendering template: line 2: <.params.wroker>: map has no entry for key "wroker"`, err.Error())
	var execErr template.ExecError
	assert.True(t, errors.As(err, &execErr))

	_, err = Render("{{ .params.worker }", testEnv())
	require.Error(t, err)
	assert.Equal(t, `parsing template: line 1: unexpected "}" in operand`, err.Error())
}
