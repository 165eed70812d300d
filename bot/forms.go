package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/runbooks"
)

// runForm is the form that asks for what `/runbook run` of rb lacks, or
// nil when nothing required is missing. target is the target given ("":
// none), targets the configured ones; given the parameters typed (kept as
// the fields' values).
func runForm(rb *runbooks.Runbook, target string, targets []string, given map[string]string) *Form {
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
	if !missing {
		return nil
	}
	return &f
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
