package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/runbooks"
)

// runForm is the form that asks for what `/runbook run` of rb lacks, or
// nil when nothing required is missing. target is the target given ("":
// none), targets the configured ones; given the parameters typed (kept as
// the fields' values).
// choices, when not nil, lists a parameter's live choices on the target
// (nil: a free text field).
func runForm(rb *runbooks.Runbook, target string, targets []string, given map[string]string, choices func(p runbooks.Param, target string) []string, always bool) *Form {
	f := Form{Title: "Run " + rb.Name, Command: "run " + rb.Name}
	missing := false
	if target == "" && len(targets) > 1 {
		f.Fields = append(f.Fields, FormField{Name: "target", Help: "the Concourse target", Required: true, Options: targets})
		missing = true
	} else if target != "" {
		f.Command += " target=" + target
	}
	for _, p := range rb.Params {
		v := strings.TrimSpace(given[p.Name])
		if v == "" {
			v = p.Default
		}
		if p.Required && v == "" {
			missing = true
		}
		f.Fields = append(f.Fields, FormField{Name: p.Name, Help: p.Description, Required: p.Required, Default: v, Options: p.Enum})
	}
	if !missing && !always {
		return nil
	}
	live := target
	if live == "" && len(targets) == 1 {
		live = targets[0]
	}
	for i, p := range rb.Params {
		fd := &f.Fields[len(f.Fields)-len(rb.Params)+i]
		if p.Choices == "" || len(p.Enum) > 0 || live == "" || choices == nil {
			continue
		}
		opts := choices(p, live)
		if fd.Default != "" && len(opts) > 0 && !slices.Contains(opts, fd.Default) {
			opts = append([]string{fd.Default}, opts...)
		}
		if len(opts) > 0 && len(opts) <= maxChoices {
			fd.Options = opts
		}
	}
	return &f
}

// runButton opens the run form of the runbook a ▶ Run button names (on
// `/runbook show`), with every parameter; its submission is the command
// typed in full. Without a form it says what to type.
func runButton(ctx context.Context, e *Engine, ev Event) {
	rb, ok := e.opts.Library.Get(ev.Value)
	forms := e.opts.Capabilities.Forms
	if !ok || forms == nil {
		return
	}
	targets := targetNames(e.opts.Targets)
	f := runForm(rb, "", targets, nil, liveChoices(ctx, e), true)
	if err := forms.OpenForm(ctx, ev, *f); err != nil {
		e.log.Warn("could not open the form of a run button", "runbook", rb.Name, "err", err)
		e.out.reply(ctx, ev.Conversation, ev.User, fmt.Sprintf("Could not open the form; type `/runbook run %s …` (see `/runbook show %s`).", rb.Name, rb.Name))
	}
}

// maxChoices is the most options a form's select shows (Slack's limit);
// with more the field is free text.
const maxChoices = 100

// choicesTimeout bounds reading the choices: a Slack trigger_id expires
// 3 s after the command.
const choicesTimeout = time.Second

// liveChoices reads a parameter's choices from the target with the
// registry's read operations (concourse.workers, concourse.pipelines):
// worker names, pipelines as team/pipeline, teams that have pipelines;
// nil when the target cannot be read in time.
func liveChoices(ctx context.Context, e *Engine) func(p runbooks.Param, target string) []string {
	return func(p runbooks.Param, target string) []string {
		opName, col := "concourse.workers", []string{"name"}
		switch p.Choices {
		case runbooks.ChoicesPipelines:
			opName, col = "concourse.pipelines", []string{"team", "name"}
		case runbooks.ChoicesTeams:
			opName, col = "concourse.pipelines", []string{"team"}
		}
		op, ok := e.opts.Ops.Get(opName)
		if !ok || op.Do == nil {
			return nil
		}
		ctx, cancel := context.WithTimeout(ctx, choicesTimeout)
		defer cancel()
		res, err := op.Do(ctx, Call{Target: target, Args: Args{}})
		if err != nil || res.Table == nil {
			e.log.Info("form: choices not read; the field is free text", "param", p.Name, "target", target, "err", err)
			return nil
		}
		idx := make([]int, len(col))
		for i, c := range col {
			idx[i] = slices.Index(res.Table.Columns, c)
			if idx[i] < 0 {
				return nil
			}
		}
		var out []string
		for _, row := range res.Table.Rows {
			parts := make([]string, len(idx))
			for i, j := range idx {
				if j < len(row) {
					parts[i] = row[j]
				}
			}
			v := strings.Join(parts, "/")
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
			if len(out) > maxChoices {
				return nil
			}
		}
		sort.Strings(out)
		return out
	}
}

// FormCheckerOf is the FormChecker of e's run forms (its own type: the
// engine stays a coordinator).
func FormCheckerOf(e *Engine) FormChecker { return formChecker{e} }

type formChecker struct{ e *Engine }

// CheckForm implements FormChecker for a run form: its values are checked
// by runbooks.ValidateParams, as `/runbook run` checks them, and a target
// must be configured. A problem is returned on its field (keyed by the
// field's name) only for the fields in values; anything else is left to
// the engine's answer to the submitted command.
func (fc formChecker) CheckForm(_ context.Context, command string, values map[string]string) map[string]string {
	e := fc.e
	c, err := Parse(command)
	if err != nil || c.Verb != VerbRun {
		return nil
	}
	rb, ok := e.opts.Library.Get(c.Name)
	if !ok {
		return nil
	}
	params := make(map[string]string, len(c.Params)+len(values))
	for k, v := range c.Params {
		params[k] = v
	}
	for k, v := range values {
		params[k] = v
	}
	errs := map[string]string{}
	if t, given := values["target"]; given && t != "" {
		if _, ok := e.opts.Targets[t]; !ok {
			errs["target"] = fmt.Sprintf("Unknown target %q; configured targets: %s.", t, strings.Join(targetNames(e.opts.Targets), ", "))
		}
	}
	delete(params, "target")
	if _, err := runbooks.ValidateParams(rb, params); err != nil {
		var joined interface{ Unwrap() []error }
		list := []error{err}
		if errors.As(err, &joined) {
			list = joined.Unwrap()
		}
		for _, one := range list {
			var pe *runbooks.ParamError
			if errors.As(one, &pe) {
				if _, onForm := values[pe.Param]; onForm {
					errs[pe.Param] = upperFirst(pe.Msg) + "."
				}
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}
