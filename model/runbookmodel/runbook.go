// Package runbookmodel is the vocabulary of the runbook format: a
// validated runbook, its parameters and steps, the kinds of steps, and what
// the loader needs to know of an operation (OpInfo). A run keeps the
// runbook it was started from (runmodel.Run.Spec) as these types.
//
// Reading, validating and evaluating runbooks (YAML, expressions,
// templates) is package runbooks; this package only names the result and
// imports nothing of groundcrew.
package runbookmodel

import "time"

// Kind is the kind of a step.
type Kind string

// Step kinds.
const (
	KindQuery    Kind = "query"    // read-only operation; result kept under the step id
	KindAction   Kind = "action"   // operation that changes something
	KindApproval Kind = "approval" // explicit approval gate
	KindManual   Kind = "manual"   // instructions for a human; waits for done/skip/fail
	KindWait     Kind = "wait"     // poll an operation until a condition holds or a timeout passes
)

// Special step targets for goto/on_failure/on_timeout.
const (
	TargetFail     = "fail"     // fail the run
	TargetEnd      = "end"      // finish the run successfully
	TargetContinue = "continue" // ignore the failure and go on with the next step
)

// Runbook is a validated runbook.
type Runbook struct {
	Name        string
	Title       string
	Description string
	// Tags are free-form labels ("worker", "builds", "quick") shown in /runbook list.
	Tags   []string
	Params []Param
	Steps  []Step
	// FollowUp suggests what to run next, shown in the run summary: each
	// entry is "<runbook> [key=value …]", a template over params and vars
	// ("worker-rebuild worker={{ .params.worker }}").
	FollowUp []string
	// Source is where the runbook came from ("builtin/worker-stalled.yaml" or a path).
	Source string
}

// Param is a runbook parameter.
type Param struct {
	Name        string
	Description string
	Required    bool
	Default     string
	// Pattern is an anchored regular expression the value must match (optional).
	Pattern string
	// Enum lists the allowed values (optional).
	Enum []string
	// MaxLength is the longest value in characters (0: MaxParamLength).
	MaxLength int
	// Allow lists character classes allowed beyond ordinary printable
	// text (CharsNewline, CharsTab, CharsControl, CharsFormat).
	Allow []string
	// Choices says the value is a worker, pipeline or team of the run's
	// target (ChoicesWorkers, ChoicesPipelines, ChoicesTeams; "": free
	// text): a form lists them, read live from the target.
	Choices string
}

// What Param.Choices may name.
const (
	ChoicesWorkers   = "workers"
	ChoicesPipelines = "pipelines"
	ChoicesTeams     = "teams"
)

// Step is one step of a runbook. Which fields are meaningful depends on Kind.
type Step struct {
	ID    string
	Kind  Kind
	Title string
	// When is an expression over params, vars, target and earlier step results;
	// the step is skipped when it evaluates to false. Empty means always.
	When string
	// Because says in words why the step is skipped when When is false —
	// it completes "skipped: …" ("the worker is running, not stalled") —
	// so a person never reads the expression. A template, rendered when
	// the step is skipped. Written `when: {if: <expr>, because: <text>}`.
	Because string
	// Op names the operation for query, action and wait steps ("concourse.workers").
	Op string
	// Args are the operation arguments. String values are templates.
	Args map[string]any
	// Text is the body shown in chat: instructions for manual steps (a template),
	// an optional note for other kinds.
	Text string
	// Approval configures an approval step, or tightens the gate the engine
	// forces before a destructive action.
	Approval *Approval
	// Until is the condition a wait step polls for (expression; `result` is the
	// latest result of Op).
	Until string
	// Timeout bounds a wait step (and the time a manual step may stay open; 0 = none).
	Timeout time.Duration
	// Interval is the poll interval of a wait step.
	Interval time.Duration
	// OnTimeout is a step id, "fail" (default) or "continue" for wait steps.
	OnTimeout string
	// Goto jumps to a step id (or "end") after this step succeeds.
	Goto string
	// OnFailure is a step id, "fail" (default), "continue" or "end".
	OnFailure string
	// Line and Column locate the step in its source file.
	Line, Column int
}

// Approval is the approval policy written in a runbook. Zero values mean
// "use the configured policy".
type Approval struct {
	// Approvers are user names/ids or "group:<name>".
	Approvers []string
	// Required is how many distinct approvers are needed.
	Required int
	// Expires is how long the request stays open.
	Expires time.Duration
}

// StepByID returns the step with the given id.
func (r *Runbook) StepByID(id string) (int, *Step) {
	for i := range r.Steps {
		if r.Steps[i].ID == id {
			return i, &r.Steps[i]
		}
	}
	return -1, nil
}

// Param returns the parameter with the given name.
func (r *Runbook) Param(name string) (*Param, bool) {
	for i := range r.Params {
		if r.Params[i].Name == name {
			return &r.Params[i], true
		}
	}
	return nil, false
}

// OpInfo is what the loader needs to know about an operation.
type OpInfo struct {
	Name  string
	Class string // "read", "write" or "destructive"
	Args  []ArgInfo
}

// ArgInfo describes an operation argument.
type ArgInfo struct {
	Name     string
	Required bool
}
