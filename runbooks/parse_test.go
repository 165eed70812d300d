package runbooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParse_BadFiles loads one file per mistake from testdata/bad and
// checks every reported error: position (line:col) and message. No other
// errors may be reported, so cascades are caught too.
func TestParse_BadFiles(t *testing.T) {
	tests := []struct {
		file string
		want []string // "line:col: message", file name left out
	}{
		{"approval", []string{
			"7:17: approval of step \"gate\" needs 3 approvals but lists only 2 approvers",
			"8:16: expires: \"forever\" is not a duration; write e.g. 30s, 20m, 1h or 2d",
			"9:7: unknown field \"quorum\" in the approval of step \"gate\"",
			"13:17: approval of step \"gate2\": required must be at least 1",
		}},
		{"bad_duration", []string{
			"7:14: timeout: \"20\" has no unit; write e.g. 20s, 20m or 20h",
			"8:15: interval: \"soon\" is not a duration; write e.g. 30s, 20m, 1h or 2d",
		}},
		{"bad_goto", []string{
			"8:11: goto of step \"check\": no step with id \"prnue\"; did you mean \"prune\"? (use a step id or end)",
		}},
		{"bad_name", []string{
			"1:7: runbook name \"Worker_Stalled\" must be lowercase letters, digits and dashes, starting with a letter (e.g. worker-stalled)",
		}},
		{"bad_on_failure", []string{
			"8:17: on_failure of step \"a\": no step with id \"retry\" (use a step id or fail, continue, end)",
		}},
		{"bad_on_timeout", []string{
			"8:17: on_timeout of step \"wait_back\" cannot be \"end\"; use a step id or fail, continue",
		}},
		{"bad_param_name", []string{
			"3:11: param name \"worker-name\" must be lowercase letters, digits and underscores, starting with a letter (it is used as params.worker_name)",
			"4:5: param 2 has no name",
		}},
		{"bad_pattern", []string{
			"4:14: param \"worker\": pattern is not a valid regular expression: error parsing regexp: missing closing ]: `[a-z`",
		}},
		{"bad_step_id", []string{
			"3:9: step id \"check-workers\" must be lowercase letters, digits and underscores, starting with a letter (it is used as steps.check_workers)",
		}},
		{"cycle_goto", []string{
			"9:11: steps form a cycle: a → b → a (goto of step \"b\" jumps back); a runbook must always move forward, use a wait step to repeat a check",
		}},
		{"cycle_on_failure", []string{
			"13:17: steps form a cycle: check → fix → check (on_failure of step \"fix\" jumps back); a runbook must always move forward, use a wait step to repeat a check",
		}},
		{"cycle_on_timeout", []string{
			"11:17: steps form a cycle: restart → wait_back → restart (on_timeout of step \"wait_back\" jumps back); a runbook must always move forward, use a wait step to repeat a check",
		}},
		{"cycle_self", []string{
			"8:11: steps form a cycle: a → a (goto of step \"a\" jumps back); a runbook must always move forward, use a wait step to repeat a check",
		}},
		{"default_enum", []string{
			"5:14: param \"mode\": default \"medium\" is not one of soft, hard",
		}},
		{"default_pattern", []string{
			"5:14: param \"worker\": default \"worker-x\" does not match pattern worker-[0-9]+",
		}},
		{"param_limits", []string{
			"4:17: max_length must be between 1 and 65536 characters, not \"0\"",
			"6:22: allow: unknown character class \"emoji\"; classes: newline, tab, control, format",
			"8:14: default: parameter \"tag\": character 2 is U+202E RIGHT-TO-LEFT OVERRIDE (format); it is not shown, or changes how the text around it is shown, so approvers could read something else than what runs. A runbook may allow it with allow: [format]",
		}},
		{"duplicate_key", []string{
			"3:1: field \"title\" given twice (first at line 2)",
		}},
		{"duplicate_param", []string{
			"4:11: param \"worker\" declared twice (first at line 3)",
		}},
		{"duplicate_step_id", []string{
			"6:9: duplicate step id \"a\" (first used at line 3)",
		}},
		{"empty", []string{
			"1:1: file is empty; a runbook needs at least name and steps",
		}},
		{"expr_not_bool", []string{
			"7:11: invalid when of step \"a\": expected bool, but got string; when must be true or false, e.g. params.worker != \"\"",
		}},
		{"expr_string_vs_number", []string{
			"7:24: invalid when of step \"a\": invalid operation: > (mismatched types string and int); params and vars are strings, convert them first: int(params.limit) > 3",
		}},
		{"expr_syntax", []string{
			"5:21: invalid when of step \"a\": unexpected token EOF",
		}},
		{"expr_unknown_name", []string{
			"5:11: invalid when of step \"a\": unknown name param; did you mean \"params\"? (expressions see params, vars, target, fly_target, steps, run, and result in until)",
		}},
		{"field_not_for_kind", []string{
			"8:5: query step \"a\" cannot have until (only wait steps can)",
			"9:5: query step \"a\" cannot have approval (only approval and action steps can)",
			"13:5: manual step \"b\" cannot have op (only query and action and wait steps can)",
		}},
		{"interval_not_shorter", []string{
			"8:15: step \"back\": interval 5m0s is not shorter than timeout 1m0s, so the condition would be checked only once",
		}},
		{"missing_arg", []string{
			"6:5: operation \"fake.write\" needs argument \"name\" (step \"a\")",
			"10:9: operation \"core.echo\" needs argument \"message\" (step \"b\")",
		}},
		{"missing_kind", []string{
			"3:5: step \"a\" has no kind; use one of query, action, approval, manual, wait",
		}},
		{"missing_name", []string{
			"1:1: runbook has no name; add e.g. name: worker-stalled",
		}},
		{"missing_op", []string{
			"3:5: query step \"a\" has no op; add e.g. op: concourse.workers",
		}},
		{"missing_step_id", []string{
			"3:5: step 1 has no id; add e.g. id: check_workers",
		}},
		{"missing_steps", []string{
			"1:1: runbook has no steps",
		}},
		{"missing_text", []string{
			"3:5: manual step \"restart\" has no text; write the instructions for the person doing it",
		}},
		{"missing_until", []string{
			"3:5: wait step \"back\" has no until; add the condition to wait for, e.g. until: result.state == \"running\"",
		}},
		{"not_a_mapping", []string{
			"1:1: a runbook must be a mapping (key: value lines), not a list",
		}},
		{"manual_on_timeout", []string{
			"7:5: manual step \"a\" cannot have on_timeout (only wait steps can); when its timeout passes the step fails, so use on_failure",
		}},
		{"param_required_not_bool", []string{
			"4:15: required must be true or false, not \"maybe\"",
		}},
		{"query_write_op", []string{
			"5:9: query step \"a\" uses write operation \"fake.write\"; use kind: action",
		}},
		{"required_default", []string{
			"5:5: param \"worker\" is required and has a default; a default makes it optional, so drop one of them",
		}},
		{"result_outside_wait", []string{
			"5:11: invalid when of step \"a\": unknown name result (expressions see params, vars, target, fly_target, steps, run, and result in until)",
		}},
		{"steps_not_list", []string{
			"3:3: steps must be a list of steps (lines starting with -), not a mapping",
		}},
		{"target_param", []string{
			"3:11: \"target\" cannot be a param: the engine takes target=<concourse target> itself; use {{ .target }} or `target` in expressions",
		}},
		{"template_index_unknown_step", []string{
			"12:18: text of step \"b\" refers to unknown step \"wrokers\"; did you mean \"workers\"?",
		}},
		{"template_later_step", []string{
			"5:24: text of step \"a\" refers to step \"b\", which comes later (line 6); only earlier steps have results",
		}},
		{"template_syntax", []string{
			"7:7: invalid template in text of step \"a\": unexpected \"}\" in operand",
		}},
		{"template_unknown_func", []string{
			"5:12: invalid template in text of step \"a\": function \"shout\" not defined",
		}},
		{"template_unknown_root", []string{
			"5:19: text of step \"a\" uses unknown field .prams; did you mean .params? (templates see .params, .vars, .target, .fly_target, .steps, .run)",
		}},
		{"two_documents", []string{
			"6:1: a file holds one runbook; found a second YAML document (---)",
		}},
		{"undeclared_param_expr", []string{
			"7:11: when of step \"a\" uses undeclared param \"wroker\"; did you mean \"worker\"? (params: worker)",
		}},
		{"undeclared_param_template", []string{
			"10:26: argument \"note\" of step \"a\" uses undeclared param \"requester\" (params: worker)",
		}},
		{"unknown_arg", []string{
			"8:7: unknown argument \"nmae\" for operation \"fake.write\"; did you mean \"name\"? (arguments: name, note)",
			"9:7: unknown argument \"colour\" for operation \"fake.write\" (arguments: name, note)",
		}},
		{"unknown_field_step", []string{
			"5:5: unknown field \"opp\" in step \"prune\"; did you mean \"op\"?",
		}},
		{"unknown_field_top", []string{
			"2:1: unknown field \"stesp\"; did you mean \"steps\"?",
		}},
		{"unknown_kind", []string{
			"4:11: unknown step kind \"qeury\"; did you mean \"query\"? (kinds: query, action, approval, manual, wait)",
		}},
		{"unknown_op", []string{
			"5:9: unknown operation \"fake.stauts\" in step \"a\"; did you mean \"fake.status\"?",
		}},
		{"unquoted_template", []string{
			`8:12: title: put templates in quotes: "{{ .params.worker }}" (unquoted, YAML reads {{ … }} as a mapping)`,
			`10:13: argument "name" in step "a": put templates in quotes: "{{ .params.worker }}" (unquoted, YAML reads {{ … }} as a mapping)`,
			`11:18: argument "note" in step "a": put templates in quotes: "{{ .params.worker }}" (unquoted, YAML reads {{ … }} as a mapping)`,
		}},
		{"unreachable", []string{
			"9:5: step \"b\" can never run: the steps before it jump past it and no goto, on_failure or on_timeout leads to it",
		}},
		{"wait_destructive_op", []string{
			"5:9: wait step \"a\" uses destructive operation \"fake.destroy\"; a wait step can only poll a read operation",
		}},
		{"when_later_step", []string{
			"5:11: when of step \"a\" refers to step \"b\", which comes later (line 7); only earlier steps have results",
		}},
		{"when_because", []string{
			"9:11: when of step \"no_if\" has no if; write the condition as when: {if: <expression>, because: <why it is skipped>}",
			"13:50: unknown field \"becuase\" in the when of step \"typo\"; did you mean \"because\"?",
			"17:16: when of step \"empty_if\": the if is empty; write the condition, or drop the when",
			"23:34: because of step \"bare_result\" shows .steps.find.result.state without a fallback; the step it names may have been skipped too (a dry run, another branch), so its result may not be there: give one, e.g. {{ .steps.find.result.state | default \"unknown\" }}",
			"28:48: invalid when of step \"bad_expr\": unexpected token EOF",
			"33:11: when of step \"list\" must be an expression or {if: <expression>, because: <why it is skipped>}, not a list",
		}},
		{"when_self", []string{
			"8:11: when of step \"a\" refers to its own step \"a\"; only earlier steps have results",
		}},
		{"when_unknown_step", []string{
			"10:11: when of step \"b\" refers to unknown step \"wrokers\"; did you mean \"workers\"?",
		}},
		{"wrong_types", []string{
			"2:7: tags must be a list ([a, b] or lines starting with -), not \"urgent\"",
			"4:3: params must be a list of parameters (lines starting with -), not a mapping",
			"8:11: text must be a single value, not a list",
		}},
		{"yaml_tab", []string{
			"4: invalid YAML: found a tab character that violates indentation (in the block that starts at line 3)",
		}},
		{"yaml_unclosed_quote", []string{
			"5: invalid YAML: found unexpected end of stream",
		}},
		{"yaml_syntax", []string{
			"5: invalid YAML: did not find expected '-' indicator (in the block that starts at line 2)",
		}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			seen[tt.file] = true
			name := tt.file + ".yaml"
			data, err := os.ReadFile(filepath.Join("testdata", "bad", name))
			require.NoError(t, err)
			rb, err := Parse(name, data, testCatalog())
			require.Error(t, err)
			assert.Nil(t, rb)
			var list ErrorList
			require.True(t, errors.As(err, &list), "Parse returns an ErrorList")
			got := make([]string, len(list))
			for i, e := range list {
				assert.Equal(t, name, e.File)
				got[i] = strings.TrimPrefix(e.Error(), name+":")
			}
			assert.Equal(t, tt.want, got)
		})
	}
	// Every fixture has a case.
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	require.NoError(t, err)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		assert.True(t, seen[name], "testdata/bad/%s.yaml has no test case", name)
	}
}

// TestParse_Good checks that a runbook using every kind and most fields
// decodes into the expected values.
func TestParse_Good(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "good", "worker-stalled.yaml"))
	require.NoError(t, err)
	rb, err := Parse("worker-stalled.yaml", data, testCatalog())
	require.NoError(t, err)

	assert.Equal(t, "worker-stalled", rb.Name)
	assert.Equal(t, "A worker is stalled", rb.Title)
	assert.Contains(t, rb.Description, "Find stalled workers")
	assert.Equal(t, []string{"worker", "concourse"}, rb.Tags)
	assert.Equal(t, "worker-stalled.yaml", rb.Source)
	require.Len(t, rb.Params, 3)
	assert.Equal(t, runbookmodel.Param{Name: "worker", Description: "name of the stalled worker", Required: true, Pattern: "[a-z0-9-]+"}, rb.Params[0])
	assert.Equal(t, runbookmodel.Param{Name: "mode", Description: "how hard to prune", Default: "soft", Enum: []string{"soft", "hard"}}, rb.Params[1])

	ids := make([]string, len(rb.Steps))
	for i, s := range rb.Steps {
		ids[i] = s.ID
	}
	assert.Equal(t, []string{"workers", "restart", "back", "gate", "prune", "report"}, ids)

	_, workers := rb.StepByID("workers")
	assert.Equal(t, runbookmodel.KindQuery, workers.Kind)
	assert.Equal(t, "fake.status", workers.Op)
	assert.Equal(t, map[string]any{"name": "{{ .params.worker }}"}, workers.Args)
	assert.Equal(t, 20, workers.Line)
	assert.Equal(t, 5, workers.Column)

	_, restart := rb.StepByID("restart")
	assert.Equal(t, runbookmodel.KindManual, restart.Kind)
	assert.Equal(t, `steps.workers.result.state == "stalled"`, restart.When)
	assert.Equal(t, `{{ .params.worker }} is {{ .steps.workers.result.state | default "not stalled" }}`, restart.Because)
	assert.Equal(t, time.Hour, restart.Timeout)
	assert.Equal(t, "prune", restart.OnFailure)
	assert.True(t, strings.HasPrefix(restart.Text, "On the worker host"))

	_, back := rb.StepByID("back")
	assert.Equal(t, runbookmodel.KindWait, back.Kind)
	assert.Equal(t, `result.state == "running"`, back.Until)
	assert.Equal(t, 30*time.Second, back.Interval)
	assert.Equal(t, 20*time.Minute, back.Timeout)
	assert.Equal(t, "gate", back.OnTimeout)
	assert.Equal(t, runbookmodel.TargetEnd, back.Goto)

	_, gate := rb.StepByID("gate")
	assert.Equal(t, &runbookmodel.Approval{Approvers: []string{"alice", "group:oncall"}, Required: 1, Expires: 30 * time.Minute}, gate.Approval)

	_, prune := rb.StepByID("prune")
	assert.Equal(t, `(steps.back?.status ?? "") != "succeeded" && params.mode in ["soft", "hard"]`, prune.When)
	assert.Equal(t, "it came back", prune.Because)
	assert.Equal(t, map[string]any{"name": "{{ .params.worker }}", "force": true}, prune.Args)
	assert.Equal(t, &runbookmodel.Approval{Required: 2}, prune.Approval)
	assert.Equal(t, "report", prune.OnFailure)

	_, report := rb.StepByID("report")
	assert.Equal(t, map[string]any{
		"reason": `{{ .params.reason | default "none given" }}`,
		"steps":  []any{"{{ with .steps.workers }}{{ .summary }}{{ end }}", "{{ $.target }}"},
	}, report.Args["note"])
	assert.Equal(t, runbookmodel.TargetContinue, report.OnFailure)
}

// TestParse_NilCatalog checks format-only validation: operations are not
// looked up, everything else is still checked.
func TestParse_NilCatalog(t *testing.T) {
	src := "name: x\nsteps:\n  - id: a\n    kind: query\n    op: nowhere.to_be_found\n    args: {anything: 1}\n  - id: b\n    kind: manual\n"
	_, err := Parse("x.yaml", []byte(src), nil)
	require.Error(t, err)
	assert.Equal(t, `x.yaml:7:5: manual step "b" has no text; write the instructions for the person doing it`, err.Error())
}

// TestParse_UnknownOpWithoutNames checks that a catalog without Names
// still reports unknown operations, only without a hint.
func TestParse_UnknownOpWithoutNames(t *testing.T) {
	src := "name: x\nsteps:\n  - id: a\n    kind: query\n    op: fake.stauts\n"
	_, err := Parse("x.yaml", []byte(src), lookupOnly{testCatalog()})
	require.Error(t, err)
	assert.Equal(t, `x.yaml:5:9: unknown operation "fake.stauts" in step "a"`, err.Error())
}

// TestParse_Positions checks line:col mapping inside templates and
// expressions written in the different YAML scalar styles.
func TestParse_Positions(t *testing.T) {
	tests := []struct {
		name, field, want string
	}{
		{"plain", `when: steps.nope.status == "x"`, "5:11"},
		{"double quoted", `when: "params.nope == 'x'"`, "5:12"},
		{"escapes fall back to the scalar", `when: "target == \"x\" || steps.nope.x"`, "5:11"},
		{"single quoted", `text: 'hi {{ .params.nope }}'`, "5:18"},
		{"literal block", "text: |\n      line one\n        {{ .steps.nope }}", "7:12"},
		{"folded block falls back to the scalar", "text: >\n      line one\n      {{ .steps.nope }}", "5:11"},
		{"multi-line plain falls back to the scalar", "text: line one\n      {{ .steps.nope }}", "5:11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: x\nsteps:\n  - id: a\n    kind: manual\n    " + tt.field + "\n    title: t\n"
			if !strings.HasPrefix(tt.field, "text") {
				src += "    text: t\n"
			}
			_, err := Parse("x.yaml", []byte(src), testCatalog())
			require.Error(t, err)
			var list ErrorList
			require.True(t, errors.As(err, &list))
			require.Len(t, list, 1, err.Error())
			assert.Equal(t, tt.want, strings.Join(strings.SplitN(strings.TrimPrefix(list[0].Error(), "x.yaml:"), ":", 3)[:2], ":"), err.Error())
		})
	}
}
