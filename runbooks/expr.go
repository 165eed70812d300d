package runbooks

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
)

// Env is what expressions and templates see when the engine evaluates a
// step. The engine fills it with these keys:
//
//	params  map[string]string  validated run parameters (all declared params present)
//	vars    map[string]string  variables of the run's target ("zone", "team", …)
//	target  string             the Concourse target the run acts on
//	steps   map[string]any     per finished step id: {"status", "summary", "result"}
//	result  any                wait steps only: the latest result of the polled op
//	run     map[string]any     {"id", "requester", "dry_run", "alert_instance", "now"}
//
// Step results are JSON-decoded (map[string]any, []any, float64, string,
// bool, nil), so expressions see the same shape after a restart.
type Env map[string]any

// Env keys.
const (
	EnvParams = "params"
	EnvVars   = "vars"
	EnvTarget = "target"
	// EnvFlyTarget is the target's name in fly's config, for the fly
	// commands runbooks show: `fly -t '{{ .fly_target }}' …`.
	EnvFlyTarget = "fly_target"
	EnvSteps     = "steps"
	EnvResult    = "result"
	EnvRun       = "run"
)

// programs caches compiled expressions by source text. Compiled programs
// are safe for concurrent use.
var programs sync.Map // string -> *vm.Program

// EvalBool evaluates a `when`/`until` expression against env. A result
// that is not a bool is an error, and so is a runtime error such as
// reading a field of a step that has not run (use `?.` and `??`).
func EvalBool(expression string, env Env) (bool, error) {
	prog, err := program(expression)
	if err != nil {
		return false, err
	}
	out, err := expr.Run(prog, map[string]any(env))
	if err != nil {
		return false, fmt.Errorf("evaluating %q: %w", expression, flatExprError{err})
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("evaluating %q: got %s, want true or false", expression, describe(out))
	}
	return b, nil
}

// program returns the cached compiled form of expression.
func program(expression string) (*vm.Program, error) {
	if p, ok := programs.Load(expression); ok {
		return p.(*vm.Program), nil
	}
	// Runtime programs are compiled without a typed env: the values the
	// engine passes are JSON-decoded and their types vary per run. The
	// load-time check (checkExpr) is the strict one.
	p, err := expr.Compile(expression, expr.AllowUndefinedVariables(), expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("compiling %q: %w", expression, flatExprError{err})
	}
	programs.Store(expression, p)
	return p, nil
}

// flatExprError shows an expr error on one line (expr's own message has a
// source snippet with a caret on extra lines, which reads badly in chat).
type flatExprError struct{ err error }

func (e flatExprError) Error() string {
	var fe *file.Error
	if !errors.As(e.err, &fe) {
		return e.err.Error()
	}
	msg := fmt.Sprintf("%s (at column %d)", fe.Message, fe.Column+1)
	if strings.HasPrefix(fe.Message, "cannot fetch ") && strings.HasSuffix(fe.Message, "<nil>") {
		msg += "; a step that has not run, or a missing field, is nil: use ?. and ?? (steps.x?.result?.count ?? 0)"
	}
	return msg
}

func (e flatExprError) Unwrap() error { return e.err }

// describe names a value's type for error messages.
func describe(v any) string {
	switch t := v.(type) {
	case nil:
		return "nil"
	case string:
		return fmt.Sprintf("string %q", t)
	case float64, int, int64:
		return fmt.Sprintf("number %v", t)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	}
	return fmt.Sprintf("%T %v", v, v)
}

// StepEnv is what expressions and templates see of one step
// (steps.<id>.status, .summary, .result, .by).
type StepEnv struct {
	Status  string
	Summary string
	// Result is the step's JSON-decoded result (nil when none).
	Result any
	// By is who completed a manual step ("" otherwise).
	By string
}

// RunEnv is what expressions and templates see of the run (run.id,
// run.requester, run.dry_run, run.alert_instance, run.now).
type RunEnv struct {
	// Now is when the step is evaluated (run.now: unix seconds on the
	// engine's clock; 0 outside a running step), to compare with times a
	// result gives (auto_remove_at).
	Now       int64
	ID        string
	Requester string
	DryRun    bool
	// AlertInstance is the instance of the alert the run was started
	// from (run.alert_instance), "" otherwise.
	AlertInstance string
}

// NewEnv is the one constructor of the environment expressions and
// templates are evaluated in, with the keys checkEnv types at load time.
func NewEnv(params, vars map[string]string, target, flyTarget string, steps map[string]StepEnv, run RunEnv) Env {
	ps := make(map[string]any, len(params))
	for k, v := range params {
		ps[k] = v
	}
	vs := make(map[string]any, len(vars))
	for k, v := range vars {
		vs[k] = v
	}
	ss := make(map[string]any, len(steps))
	for id, s := range steps {
		ss[id] = map[string]any{"status": s.Status, "summary": s.Summary, "result": s.Result, "by": s.By}
	}
	return Env{
		EnvParams: ps, EnvVars: vs, EnvTarget: target, EnvFlyTarget: flyTarget, EnvSteps: ss,
		EnvRun: map[string]any{"id": run.ID, "requester": run.Requester, "dry_run": run.DryRun, "alert_instance": run.AlertInstance, "now": run.Now},
	}
}
