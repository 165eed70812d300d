package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// choiceReader reads a parameter's live choices on a target (nil: none
// offered). errTooManyChoices: more than a select shows.
type choiceReader func(p runbookmodel.Param, target string) ([]string, error)

var errTooManyChoices = fmt.Errorf("more than %d", maxChoices)

// runForm is the form that asks for what `/runbook run` of rb lacks, or
// nil when nothing required is missing (always: the form anyway). target
// is the target given in the command ("": none; then, with more than one
// configured, the target is a field), targets the configured ones; given
// the values known (typed in the command, or entered in the form:
// given["target"] is the target picked in it), kept as the fields'
// values. choices, when not nil, lists a parameter's live choices on the
// target; what it cannot read is said in the form's Note and the field is
// free text.
func runForm(rb *runbookmodel.Runbook, target string, targets []string, given map[string]string, choices choiceReader, always bool) *chatmodel.Form {
	f := chatmodel.Form{Title: "Run " + rb.Name, Command: "run " + rb.Name}
	missing := false
	live := target
	if target == "" && len(targets) > 1 {
		fd := chatmodel.FormField{Name: "target", Help: "the Concourse target", Required: true, Options: targets, Refresh: choices != nil && hasLiveChoices(rb)}
		if picked := given["target"]; slices.Contains(targets, picked) {
			fd.Default, live = picked, picked
		} else {
			missing = true
		}
		f.Fields = append(f.Fields, fd)
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
		f.Fields = append(f.Fields, chatmodel.FormField{Name: p.Name, Help: p.Description, Required: p.Required, Default: v, Options: p.Enum})
	}
	if !missing && !always {
		return nil
	}
	if live == "" && len(targets) == 1 {
		live = targets[0]
	}
	var unread []unreadChoice
	for i, p := range rb.Params {
		fd := &f.Fields[len(f.Fields)-len(rb.Params)+i]
		if p.Choices == "" || len(p.Enum) > 0 || live == "" || choices == nil {
			continue
		}
		opts, err := choices(p, live)
		if err == nil && len(opts) > maxChoices {
			err = errTooManyChoices
		}
		if err != nil {
			unread = append(unread, unreadChoice{p, err})
			continue
		}
		switch {
		case len(opts) == 0:
		case slices.Contains(opts, fd.Default):
		case fd.Default != "" && fd.Default == p.Default:
			// The runbook's default stays a choice.
			opts = append([]string{fd.Default}, opts...)
		default:
			// A value that is none of this target's (picked for another
			// target) is not kept.
			fd.Default = p.Default
		}
		if len(opts) > 0 {
			fd.Options = opts
		}
	}
	f.Note = unreadNote(live, unread)
	return &f
}

// hasLiveChoices reports whether a parameter of rb offers the target's
// workers, pipelines or teams (so the target decides a field's options).
func hasLiveChoices(rb *runbookmodel.Runbook) bool {
	for _, p := range rb.Params {
		if p.Choices != "" && len(p.Enum) == 0 {
			return true
		}
	}
	return false
}

// unreadChoice is a parameter whose choices could not be read.
type unreadChoice struct {
	p   runbookmodel.Param
	err error
}

// unreadNote says which choices the form could not offer and why, one
// sentence per cause: "Could not read the workers of infra-dev (connection
// refused): type worker."
func unreadNote(target string, unread []unreadChoice) string {
	var sentences []string
	done := map[int]bool{}
	for i, u := range unread {
		if done[i] {
			continue
		}
		cause := choiceCause(u.err)
		var kinds, fields []string
		for j := i; j < len(unread); j++ {
			if choiceCause(unread[j].err) != cause {
				continue
			}
			done[j] = true
			if !slices.Contains(kinds, unread[j].p.Choices) {
				kinds = append(kinds, unread[j].p.Choices)
			}
			fields = append(fields, unread[j].p.Name)
		}
		if errors.Is(u.err, errTooManyChoices) {
			sentences = append(sentences, fmt.Sprintf("%s has more than %d %s: type %s.", target, maxChoices, andJoin(kinds), andJoin(fields)))
			continue
		}
		sentences = append(sentences, fmt.Sprintf("Could not read the %s of %s (%s): type %s.", andJoin(kinds), target, cause, andJoin(fields)))
	}
	return strings.Join(sentences, " ")
}

// choiceCause is why choices could not be read, short enough for a form:
// the innermost error ("dial tcp 10.0.0.7:443: connect: connection
// refused"), or "no answer within 1s".
func choiceCause(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", choicesTimeout)
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	return limitText(err.Error(), 200)
}

func andJoin(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// runButton opens the run form of the runbook a ▶ Run button names (on
// `/runbook show`), with every parameter; its submission is the command
// typed in full. Without a form it says what to type.
func runButton(ctx context.Context, e *Engine, ev chatmodel.Event) {
	rb, ok := e.opts.Library.Get(ev.Value)
	forms := e.opts.Capabilities.Forms
	if !ok || forms == nil {
		return
	}
	scope, err := e.chans.scope(ctx, e.set.approvals().Channels, ev.Conversation.Channel)
	if err != nil || scope.Denied {
		e.out.reply(ctx, ev.Conversation, ev.User, fmt.Sprintf("Could not open the form: %s", cmpErr(err, scope.Refusal("", nil))))
		return
	}
	if hidden, why := e.offers.of(ctx, scope, []*runbookmodel.Runbook{rb}).Hidden(rb.Name); hidden {
		e.out.reply(ctx, ev.Conversation, ev.User, fmt.Sprintf("`%s` does not run in this channel: it %s.", rb.Name, why))
		return
	}
	targets := scope.FilterTargets(targetNames(e.opts.Targets))
	f := runForm(rb, "", targets, nil, liveChoices(ctx, e, scope, changesWorkers(rb, e.opts.Ops)), true)
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
// an error when the target cannot be read in time. Each operation is
// called once per target for one form. Only what the form's channel may
// act on is read and offered (scope): its teams' pipelines, its teams,
// the workers of no team or of its teams — only its teams' own for a
// runbook that changes workers (ownWorkers): a global worker is no team's,
// and the run would be refused it.
func liveChoices(ctx context.Context, e *Engine, scope policy.Scope, ownWorkers bool) choiceReader {
	type read struct {
		res opmodel.Result
		err error
	}
	memo := map[string]read{}
	return func(p runbookmodel.Param, target string) ([]string, error) {
		opName, col := "concourse.workers", []string{"name"}
		switch p.Choices {
		case runbookmodel.ChoicesPipelines:
			opName, col = "concourse.pipelines", []string{"team", "name"}
		case runbookmodel.ChoicesTeams:
			opName, col = "concourse.pipelines", []string{"team"}
		}
		op, ok := e.opts.Ops.Get(opName)
		if !ok || op.Do == nil {
			return nil, nil
		}
		r, seen := memo[opName+"\x00"+target]
		if !seen {
			ctx, cancel := context.WithTimeout(ctx, choicesTimeout)
			args := opmodel.Args{}
			if ownWorkers && opName == "concourse.workers" && len(scope.Teams) > 0 {
				args["team"] = scope.CallTeams()
			}
			r.res, r.err = op.Do(ctx, opmodel.Call{Target: target, Args: args, Teams: scope.CallTeams()})
			cancel()
			memo[opName+"\x00"+target] = r
		}
		if r.err != nil {
			e.log.Info("form: choices not read; the field is free text", "param", p.Name, "target", target, "err", r.err)
			return nil, r.err
		}
		if r.res.Table == nil {
			return nil, nil
		}
		res := r.res
		idx := make([]int, len(col))
		for i, c := range col {
			idx[i] = slices.Index(res.Table.Columns, c)
			if idx[i] < 0 {
				return nil, nil
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
				return nil, errTooManyChoices
			}
		}
		if p.Choices != runbookmodel.ChoicesWorkers {
			out = scope.FilterTeams(out) // the operation did; never offer another team's
		}
		sort.Strings(out)
		return out, nil
	}
}

// cmpErr is err's message for people, or else msg.
func cmpErr(err error, msg string) string {
	if err != nil {
		return chatmodel.UserMessage(err)
	}
	return msg
}

// FormCheckerOf is the FormChecker of e's run forms (its own type: the
// engine stays a coordinator).
func FormCheckerOf(e *Engine) chatmodel.FormChecker { return formChecker{e} }

// FormRefresherOf is the FormRefresher of e's run forms: a target picked
// in the form gives that target's choices.
func FormRefresherOf(e *Engine) chatmodel.FormRefresher { return formChecker{e} }

// RefreshForm implements FormRefresher for a run form: the form of the
// command's runbook for the values entered (values["target"] the target
// picked), its choices read live from that target, the values still
// valid kept, what cannot be read said in its Note.
func (fc formChecker) RefreshForm(ctx context.Context, in chatmodel.Conversation, command string, values map[string]string) (chatmodel.Form, error) {
	e := fc.e
	c, err := Parse(command)
	if err != nil || c.Verb != VerbRun {
		return chatmodel.Form{}, fmt.Errorf("not a run form: %q", command)
	}
	rb, ok := e.opts.Library.Get(c.Name)
	if !ok {
		return chatmodel.Form{}, fmt.Errorf("no runbook %q", c.Name)
	}
	scope, err := e.chans.scope(ctx, e.set.approvals().Channels, in.Channel)
	if err != nil {
		return chatmodel.Form{}, err
	}
	if scope.Denied {
		return chatmodel.Form{}, errors.New(scope.Refusal("", nil))
	}
	target := c.Params["target"]
	given := make(map[string]string, len(values))
	for k, v := range values {
		given[k] = strings.TrimSpace(v)
	}
	if !scope.AllowsTarget(given["target"]) {
		delete(given, "target") // never read another channel's target
	}
	return *runForm(rb, target, scope.FilterTargets(targetNames(e.opts.Targets)), given, liveChoices(ctx, e, scope, changesWorkers(rb, e.opts.Ops)), true), nil
}

type formChecker struct{ e *Engine }

// CheckForm implements FormChecker for a run form: its values are checked
// by runbooks.ValidateParams, as `/runbook run` checks them, and a target
// must be configured. A problem is returned on its field (keyed by the
// field's name) only for the fields in values; anything else is left to
// the engine's answer to the submitted command.
func (fc formChecker) CheckForm(ctx context.Context, in chatmodel.Conversation, command string, values map[string]string) map[string]string {
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
	scope, err := e.chans.scope(ctx, e.set.approvals().Channels, in.Channel)
	if err != nil {
		return nil // the command's answer says it
	}
	targets := scope.FilterTargets(targetNames(e.opts.Targets))
	if t, given := values["target"]; given && t != "" {
		if _, ok := e.opts.Targets[t]; !ok || !scope.AllowsTarget(t) {
			errs["target"] = fmt.Sprintf("Unknown target %q; targets: %s.", t, strings.Join(targets, ", "))
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
