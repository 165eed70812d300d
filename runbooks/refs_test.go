package runbooks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParse_ReferenceForms checks that every way of naming a step or a
// param in expressions and templates is checked, and that fields read
// inside with/range (where dot is something else) are not.
func TestParse_ReferenceForms(t *testing.T) {
	tests := []struct {
		name  string
		field string // a field of step "b", which follows step "a"
		want  string // "" = valid
	}{
		{"expr dot", `when: steps.a.status == "succeeded"`, ""},
		{"expr later step", `when: steps.c.status == "succeeded"`, `x.yaml:10:11: when of step "b" refers to step "c", which comes later (line 12); only earlier steps have results`},
		{"expr brackets", `when: steps["nope"].status == "x"`, `x.yaml:10:11: when of step "b" refers to unknown step "nope"`},
		{"expr optional chaining", `when: steps?.nope?.status == "x"`, `x.yaml:10:11: when of step "b" refers to unknown step "nope"`},
		{"expr param brackets", `when: params["nope"] == "x"`, `x.yaml:10:11: when of step "b" uses undeclared param "nope" (params: worker)`},
		{"expr target is not a param", `when: params.target == "x"`, `x.yaml:10:11: when of step "b" uses undeclared param "target"; the target is not a param, use target (params: worker)`},
		{"expr vars are free", `when: vars.anything == "x"`, ""},
		{"expr let variable", `when: let s = steps.a; s.status == "succeeded"`, ""},
		{"template dollar", `text: "{{ $.steps.nope.summary }}"`, `x.yaml:10:15: text of step "b" refers to unknown step "nope"`},
		{"template index with path", `text: '{{ index .steps "nope" "result" }}'`, `x.yaml:10:21: text of step "b" refers to unknown step "nope"`},
		{"template parenthesised", `text: "{{ (.steps.nope).summary }}"`, `x.yaml:10:16: text of step "b" refers to unknown step "nope"`},
		{"template inside if", `text: "{{ if .params.nope }}x{{ end }}"`, `x.yaml:10:18: text of step "b" uses undeclared param "nope" (params: worker)`},
		{"template with changes dot", `text: "{{ with .steps.a }}{{ .status }} {{ .anything }}{{ end }}"`, ""},
		{"template range changes dot", `text: "{{ range .steps.a.result }}{{ .name }}{{ end }}"`, ""},
		{"template range else keeps dot", `text: "{{ range .steps.a.result }}x{{ else }}{{ .nope }}{{ end }}"`, `x.yaml:10:53: text of step "b" uses unknown field .nope (templates see .params, .vars, .target, .fly_target, .steps, .run)`},
		{"template variable", `text: "{{ $s := .steps.a }}{{ $s.status }}"`, ""},
		{"template title uses an earlier step", `title: "After {{ .steps.a.summary }}"`, ""},
		{"template title result with default", `title: 'Wait for {{ .steps.a.result.name | default "the worker" }}'`, ""},
		{"template title result guarded by with", `title: "Wait for {{ with .steps.a.result }}{{ .name }}{{ else }}the worker{{ end }}"`, ""},
		{"template title result guarded by if", `title: "Wait{{ if .steps.a.result.name }} for {{ .steps.a.result.name }}{{ end }}"`, ""},
		{"template title result without fallback", `title: "Wait for {{ .steps.a.result.name }}"`, `x.yaml:10:25: title of step "b" shows .steps.a.result.name without a fallback; a title is shown before its step runs (the run's first message, /runbook show), when earlier results are not there yet: give one, e.g. {{ .steps.a.result.name | default "the worker" }}`},
		{"template title later step", `title: 'After {{ .steps.c.result.name | default "x" }}'`, `x.yaml:10:22: title of step "b" refers to step "c", which comes later (line 12); only earlier steps have results`},
		{"template title", `title: "Prune {{ .params.wroker }}"`, `x.yaml:10:22: title of step "b" uses undeclared param "wroker"; did you mean "worker"? (params: worker)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := "\n    text: t"
			if strings.HasPrefix(tt.field, "text:") {
				text = ""
			}
			src := "name: x\nparams:\n  - name: worker\nsteps:\n" +
				"  - id: a\n    kind: query\n    op: fake.status\n" +
				"  - id: b\n    kind: manual\n    " + tt.field + text + "\n" +
				"  - id: c\n    kind: query\n    op: fake.status\n"
			_, err := Parse("x.yaml", []byte(src), testCatalog())
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}
