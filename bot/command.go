package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// Verb is a "/runbook" command's first word.
type Verb string

// The verbs.
const (
	VerbList    Verb = "list"
	VerbShow    Verb = "show"
	VerbRun     Verb = "run"
	VerbStatus  Verb = "status"
	VerbApprove Verb = "approve"
	VerbReject  Verb = "reject"
	VerbDone    Verb = "done"
	VerbSkip    Verb = "skip"
	VerbFail    Verb = "fail"
	VerbCancel  Verb = "cancel"
	VerbDigest  Verb = "digest"
	VerbSummary Verb = "summary"
	VerbHelp    Verb = "help"
)

// TakesRun reports whether the verb's first argument is a run id.
func (v Verb) TakesRun() bool {
	switch v {
	case VerbStatus, VerbApprove, VerbReject, VerbDone, VerbSkip, VerbFail, VerbCancel, VerbSummary:
		return true
	}
	return false
}

// Command is a parsed "/runbook …" command.
type Command struct {
	Verb   Verb
	Name   string            // runbook name or run id (run ids in lower case)
	Params map[string]string // k=v arguments of run
	DryRun bool
	Rest   string // free text (reason, note)
	// Invocation is set for a command a subsystem declared (Verb is its
	// name): what the subsystem's Commander is handed.
	Invocation *chatmodel.Invocation
}

// Input limits. Texts longer than these are refused with a message that
// says the limit; parameter values have their own (runbooks.MaxParamLength,
// raised per parameter with max_length).
const (
	// MaxCommandBytes is the longest command text (after "/runbook").
	MaxCommandBytes = 16 << 10
	// MaxWords is the most words a command may have.
	MaxWords = 200
)

// verbs lists the commands and their one-line usage.
var verbs = []struct {
	name        Verb
	usage, help string
}{
	{VerbList, "list", "list the runbooks"},
	{VerbShow, "show <runbook>", "describe a runbook: parameters and steps"},
	{VerbRun, "run <runbook> [target=<target>] [key=value …] [--dry-run]", "start a run; --dry-run runs only the read-only steps and shows the plans"},
	{VerbStatus, "status [run]", "show a run, or the active runs"},
	{VerbApprove, "approve <run> [reason | --break-glass <reason>]", "approve the run's open approval request"},
	{VerbReject, "reject <run> [reason]", "reject the run's open approval request"},
	{VerbDone, "done <run> [note]", "mark the run's open manual step done"},
	{VerbSkip, "skip <run> [note]", "skip the run's open manual step"},
	{VerbFail, "fail <run> [note]", "mark the run's open manual step failed"},
	{VerbCancel, "cancel <run> [reason]", "stop a run (a call in flight finishes first)"},
	{VerbDigest, "digest [target]", "post a target's health digest now (workers, builds, paused pipelines, trends, suggested runbooks)"},
	{VerbSummary, "summary [run | thread <run>]", "summarise a run; in a thread (or with `thread <run>`): every run and message of that incident thread"},
	{VerbHelp, "help", "show this help"},
}

// Parse parses the text after "/runbook". It returns a *UserError for
// anything a person should fix.
func Parse(text string) (Command, error) { return ParseWith(text, nil) }

// ParseWith is Parse knowing the commands subsystems declare (specs): the
// one parser of command text. A declared command is returned with its
// Invocation; its usage errors are the parser's, like the verbs'.
func ParseWith(text string, specs []chatmodel.CommandSpec) (Command, error) {
	if len(text) > MaxCommandBytes {
		return Command{}, &chatmodel.UserError{Msg: fmt.Sprintf("That command is %s long; the limit is %s. Give long notes in the thread instead.", byteSize(len(text)), byteSize(MaxCommandBytes))}
	}
	words, err := splitWords(text)
	if err != nil {
		return Command{}, &chatmodel.UserError{Msg: err.Error()}
	}
	if len(words) == 0 {
		return Command{Verb: VerbHelp}, nil
	}
	c := Command{Verb: Verb(strings.ToLower(words[0]))}
	args := words[1:]
	if len(words) > MaxWords && c.Verb == VerbRun {
		return c, &chatmodel.UserError{Msg: fmt.Sprintf("That command has %d words; the limit is %d.", len(words), MaxWords)}
	}
	known := false
	for _, v := range verbs {
		if v.name == c.Verb {
			known = true
		}
	}
	if !known {
		for _, s := range specs {
			if slices.Contains(s.Names(), string(c.Verb)) {
				return parseDeclared(s, args)
			}
		}
		names := make([]string, 0, len(verbs))
		for _, v := range verbs {
			names = append(names, string(v.name))
		}
		for _, s := range specs {
			names = append(names, s.Names()...)
		}
		msg := fmt.Sprintf("Unknown command %q.", textmodel.Sanitize(limitText(words[0], 40)))
		if s := closest(string(c.Verb), names); s != "" {
			msg += fmt.Sprintf(" Did you mean `%s`?", s)
		}
		return c, &chatmodel.UserError{Msg: msg + " Try `/runbook help`."}
	}
	usage := func() error {
		for _, v := range verbs {
			if v.name == c.Verb {
				return &chatmodel.UserError{Msg: "Usage: `/runbook " + v.usage + "`"}
			}
		}
		return nil
	}
	switch c.Verb {
	case VerbList, VerbHelp:
		if len(args) > 0 {
			return c, usage()
		}
	case VerbShow:
		if len(args) != 1 {
			return c, usage()
		}
		c.Name = args[0]
	case VerbSummary:
		switch {
		case len(args) == 2 && strings.EqualFold(args[0], "thread"):
			c.Name, c.Rest = args[1], "thread"
		case len(args) > 1 || len(args) == 1 && strings.EqualFold(args[0], "thread"):
			return c, usage()
		case len(args) == 1:
			c.Name = args[0]
		}
	case VerbStatus, VerbDigest:
		if len(args) > 1 {
			return c, usage()
		}
		if len(args) == 1 {
			c.Name = args[0]
		}
	case VerbRun:
		if len(args) == 0 {
			return c, usage()
		}
		c.Name, c.Params = args[0], map[string]string{}
		for _, a := range args[1:] {
			if a == "--dry-run" || a == "--dryrun" || a == "-n" {
				c.DryRun = true
				continue
			}
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return c, &chatmodel.UserError{Msg: fmt.Sprintf("Cannot read %q: parameters are key=value (e.g. `target=infra-prd`). Usage: `/runbook %s`", textmodel.Sanitize(limitText(a, 60)), verbs[2].usage)}
			}
			if _, dup := c.Params[k]; dup {
				return c, &chatmodel.UserError{Msg: fmt.Sprintf("Parameter %q is given twice.", textmodel.Sanitize(limitText(k, 60)))}
			}
			c.Params[k] = v
		}
	default: // approve, reject, done, skip, fail, cancel
		if len(args) == 0 {
			return c, usage()
		}
		c.Name, c.Rest = args[0], strings.Join(args[1:], " ")
	}
	if c.Verb.TakesRun() && c.Verb != VerbSummary || c.Verb == VerbSummary && c.Name != "" {
		c.Name = strings.ToLower(c.Name)
	}
	return c, nil
}

// parseDeclared reads the words after a declared command's name.
func parseDeclared(s chatmodel.CommandSpec, args []string) (Command, error) {
	c := Command{Verb: Verb(s.Name), Invocation: &chatmodel.Invocation{Command: s.Name}}
	if len(args) > 0 {
		for _, sub := range s.Subs {
			if !strings.EqualFold(args[0], sub.Name) {
				continue
			}
			if len(args)-1 != sub.Args {
				return c, &chatmodel.UserError{Msg: "Usage: `/runbook " + sub.Usage + "`"}
			}
			c.Invocation.Sub, c.Invocation.Args = sub.Name, args[1:]
			return c, nil
		}
	}
	if len(args) > s.MaxArgs {
		return c, &chatmodel.UserError{Msg: "Usage: " + declaredUsage(s)}
	}
	c.Invocation.Args = args
	return c, nil
}

// declaredUsage is every usage of a declared command, for a usage error.
func declaredUsage(s chatmodel.CommandSpec) string {
	us := []string{"`/runbook " + s.Usage + "`"}
	for _, sub := range s.Subs {
		us = append(us, "`/runbook "+sub.Usage+"`")
	}
	return strings.Join(us, " · ")
}

// byteSize writes a size for people: 1.2 MiB, 16 KiB, 300 bytes.
func byteSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// splitWords splits on spaces, honouring "double" and 'single' quotes.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range strings.TrimSpace(s) {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'' || r == '“' || r == '”':
			if r == '“' || r == '”' {
				r = '”'
			}
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unclosed quote in the command")
	}
	if in {
		out = append(out, cur.String())
	}
	return out, nil
}

// closest returns the candidate nearest to s when it is a likely typo, or "".
func closest(s string, candidates []string) string { return textmodel.Suggest(s, candidates) }

// Handle implements Handler.
func (e *Engine) Handle(ctx context.Context, ev chatmodel.Event) error {
	if ev.ID != "" {
		seen, err := e.opts.Store.SeenEvent(ctx, ev.ID, e.opts.Now())
		if err != nil {
			return fmt.Errorf("recording event %s: %w", ev.ID, err)
		}
		if seen {
			e.log.Debug("duplicate event ignored", "id", ev.ID)
			return nil
		}
	}
	switch ev.Kind {
	case chatmodel.EventCommand:
		return e.command(ctx, ev)
	case chatmodel.EventReaction:
		return e.reaction(ctx, ev)
	case chatmodel.EventButton:
		return e.button(ctx, ev)
	}
	return fmt.Errorf("unknown event kind %q", ev.Kind)
}

func (e *Engine) command(ctx context.Context, ev chatmodel.Event) error {
	var specs []chatmodel.CommandSpec
	if e.opts.Commands != nil {
		specs = e.opts.Commands.Commands()
	}
	c, err := ParseWith(ev.Text, specs)
	if err != nil {
		e.out.reply(ctx, ev.Conversation, ev.User, "⚠️ "+err.Error())
		return nil
	}
	if c.Invocation != nil {
		return e.opts.Commands.RunCommand(ctx, ev, *c.Invocation)
	}
	switch c.Verb {
	case VerbHelp, VerbList:
		// A bound channel is told only of what it may act on.
		scope, err := e.chans.scope(ctx, e.set.approvals().Channels, ev.Conversation.Channel)
		if err != nil {
			scope = policy.Scope{Denied: true}
		}
		text := helpText(scope.FilterTargets(targetNames(e.opts.Targets)), specs, e.hints)
		switch {
		case c.Verb == VerbList && scope.Denied:
			text = "" // it may run none
		case c.Verb == VerbList:
			text = listText(e.opts.Library, e.opts.Ops, e.offers.of(ctx, scope, e.opts.Library.List()))
		}
		if line := scopeLine(scope, err); line != "" {
			text = strings.TrimSuffix(line+"\n"+text, "\n")
		}
		e.out.reply(ctx, ev.Conversation, ev.User, text)
	case VerbShow:
		scope, err := e.chans.scope(ctx, e.set.approvals().Channels, ev.Conversation.Channel)
		if err != nil {
			scope = policy.Scope{Denied: true}
		}
		offer := e.offers.of(ctx, scope, e.opts.Library.List())
		m := chatmodel.Message{Text: showText(e.opts.Library, e.opts.Ops, c.Name, offer)}
		if hidden, _ := offer.Hidden(c.Name); !hidden && !scope.Denied {
			if _, ok := e.opts.Library.Get(c.Name); ok && e.opts.Capabilities.Forms != nil {
				m.Buttons = []chatmodel.Button{{Action: chatmodel.IntentRun, Label: "▶ Run", Value: c.Name, Style: "primary"}}
			}
		}
		e.out.replyMessage(ctx, ev.Conversation, ev.User, m)
	case VerbStatus:
		e.out.reply(ctx, ev.Conversation, ev.User, statusText(ctx, e.opts.Store, c.Name, e.opts.Now(), e.chans.sees(ctx, e.set.approvals().Channels, ev.Conversation.Channel), e.writes.failures, e.set.reloadedAt))
	case VerbRun:
		if err := e.start(ctx, ev, c); err != nil {
			return replyStartError(ctx, e.out, ev, err)
		}
	case VerbApprove, VerbReject:
		if reason, ok := strings.CutPrefix(c.Rest, "--break-glass"); ok && c.Verb == VerbApprove {
			e.breakGlass(ctx, c.Name, ev.Conversation, ev.User, strings.TrimSpace(reason))
			return nil
		}
		e.vote(ctx, ballot{RunID: c.Name, Conv: ev.Conversation, User: ev.User, Approve: c.Verb == VerbApprove, Via: runmodel.ViaCommand, Reason: c.Rest})
	case VerbDone:
		e.manualResponse(ctx, c.Name, chatmodel.MessageRef{}, ev.Conversation, ev.User, runmodel.StepSucceeded, c.Rest)
	case VerbSkip:
		e.manualResponse(ctx, c.Name, chatmodel.MessageRef{}, ev.Conversation, ev.User, runmodel.StepSkipped, c.Rest)
	case VerbFail:
		e.manualResponse(ctx, c.Name, chatmodel.MessageRef{}, ev.Conversation, ev.User, runmodel.StepFailed, c.Rest)
	case VerbCancel:
		e.cancel(ctx, c.Name, ev.Conversation, ev.User, c.Rest)
	case VerbSummary:
		e.summaries.command(ctx, ev, c.Name, c.Rest == "thread", e.chans.sees(ctx, e.set.approvals().Channels, ev.Conversation.Channel))
	case VerbDigest:
		if e.opts.Digests == nil {
			e.out.reply(ctx, ev.Conversation, ev.User, "Digests are not available in this setup.")
			return nil
		}
		// A bound channel's digest is of its targets and teams only.
		scope, err := e.chans.scope(ctx, e.set.approvals().Channels, ev.Conversation.Channel)
		target := c.Name
		switch {
		case err != nil:
			e.out.reply(ctx, ev.Conversation, ev.User, "⚠️ "+chatmodel.UserMessage(err))
			return nil
		case scope.Denied || target != "" && !scope.AllowsTarget(target):
			e.out.reply(ctx, ev.Conversation, ev.User, "⚠️ "+scope.Refusal(target, nil))
			return nil
		case target == "" && scope.Bound():
			if ts := scope.FilterTargets(targetNames(e.opts.Targets)); len(ts) == 1 {
				target = ts[0]
			} else if len(ts) > 1 {
				e.out.reply(ctx, ev.Conversation, ev.User, fmt.Sprintf("Usage: `/runbook digest <target>` (targets: %s)", strings.Join(ts, ", ")))
				return nil
			}
		}
		e.out.reply(ctx, ev.Conversation, ev.User, "⏳ Collecting the digest…")
		e.work.background(func() {
			// Collecting takes seconds: do it outside the event.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Minute)
			defer cancel()
			if err := e.opts.Digests.DigestNow(dctx, target, scope.CallTeams(), ev.Conversation); err != nil {
				var ue *chatmodel.UserError
				if errors.As(err, &ue) {
					e.out.reply(dctx, ev.Conversation, ev.User, "⚠️ "+ue.Msg)
					return
				}
				e.out.reply(dctx, ev.Conversation, ev.User, "❌ Could not post the digest: "+chatmodel.UserMessage(err))
			}
		})
	}
	return nil
}

// replyStartError tells the person why their run did not start. A
// refusal (*UserError) is answered and not an error of the handler.
func replyStartError(ctx context.Context, out *poster, ev chatmodel.Event, err error) error {
	var ue *chatmodel.UserError
	if errors.As(err, &ue) {
		out.reply(ctx, ev.Conversation, ev.User, "⚠️ "+ue.Msg)
		return nil
	}
	out.reply(ctx, ev.Conversation, ev.User, "❌ Could not start the run: "+chatmodel.UserMessage(err))
	return err
}

// StartRun implements runmodel.RunStarter: the typed `/runbook run`,
// for subsystems (an incident's Run button). No text is composed or
// parsed; the checks are those of the command. A refusal is answered
// privately to the person and returned as a *UserError.
func (e *Engine) StartRun(ctx context.Context, req runmodel.StartRequest) error {
	ev := chatmodel.Event{Kind: chatmodel.EventCommand, ID: req.EventID, User: req.User, Conversation: req.Thread, Time: req.Time, AlertInstance: req.AlertInstance}
	if ev.ID != "" {
		seen, err := e.opts.Store.SeenEvent(ctx, ev.ID, e.opts.Now())
		if err != nil {
			return fmt.Errorf("recording event %s: %w", ev.ID, err)
		}
		if seen {
			return nil
		}
	}
	params := make(map[string]string, len(req.Params)+1)
	for k, v := range req.Params {
		params[k] = v
	}
	if req.Target != "" {
		params["target"] = req.Target
	}
	if err := e.start(ctx, ev, Command{Verb: VerbRun, Name: req.Runbook, Params: params, DryRun: req.DryRun}); err != nil {
		_ = replyStartError(ctx, e.out, ev, err) // answered; the caller learns it too
		return err
	}
	return nil
}

// start validates and starts a run.
func (e *Engine) start(ctx context.Context, ev chatmodel.Event, c Command) error {
	rb, ok := e.opts.Library.Get(c.Name)
	if br, broken := e.opts.Library.Broken(c.Name); !ok && broken {
		return &chatmodel.UserError{Msg: brokenText(br)}
	}
	if !ok {
		// Suggested: only what the channel may run.
		scope, _ := e.chans.scope(ctx, e.set.approvals().Channels, ev.Conversation.Channel)
		return &chatmodel.UserError{Msg: noRunbookText(e.opts.Library, c.Name, e.offers.of(ctx, scope, e.opts.Library.List())) + " See `/runbook list`."}
	}
	target := c.Params["target"]
	delete(c.Params, "target")
	// What the channel may act on (channels:): its targets only are offered.
	scope, err := e.chans.scope(ctx, e.set.approvals().Channels, ev.Conversation.Channel)
	if err != nil {
		return err
	}
	if scope.Denied {
		e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Detail: rb.Name + ": channel not bound (channels.default: deny)"})
		return &chatmodel.UserError{Msg: scope.Refusal(target, nil)}
	}
	all := targetNames(e.opts.Targets)
	targets := scope.FilterTargets(all)
	if target != "" && slices.Contains(all, target) && !scope.AllowsTarget(target) {
		e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Detail: rb.Name + ": channels." + scope.Key + " does not bind this target"})
		return &chatmodel.UserError{Msg: scope.Refusal(target, nil)}
	}
	if _, known := e.opts.Targets[target]; !c.DryRun && (target == "" || known) {
		// A runbook every change of which the channel would be refused
		// (its teams own no worker there) is not started: a dry run is.
		on := scope
		if target != "" {
			on.Targets = []string{target}
		}
		if hidden, why := e.offers.of(ctx, on, []*runbookmodel.Runbook{rb}).Hidden(rb.Name); hidden {
			e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Detail: rb.Name + ": not offered in channels." + scope.Key})
			return &chatmodel.UserError{Msg: fmt.Sprintf("`%s` does not run in this channel: it %s. `/runbook run %s --dry-run` shows what it would do.", rb.Name, why, rb.Name)}
		}
	}
	if forms := e.opts.Capabilities.Forms; forms != nil && !c.DryRun && ev.Kind == chatmodel.EventCommand {
		// Required parameters missing: ask for them with a form; its
		// submission is this command typed in full.
		if f := runForm(rb, target, targets, c.Params, liveChoices(ctx, e, scope, changesWorkers(rb, e.opts.Ops)), false); f != nil {
			err := forms.OpenForm(ctx, ev, *f)
			if err == nil {
				return nil
			}
			e.log.Warn("could not open the form; answering with what is missing", "runbook", rb.Name, "err", err)
		}
	}
	if target == "" {
		if len(targets) != 1 {
			return &chatmodel.UserError{Msg: fmt.Sprintf("Which target? Add `target=<name>`; configured targets: %s.", strings.Join(quoteAll(targets), ", "))}
		}
		target = targets[0]
	}
	ti, ok := e.opts.Targets[target]
	if !ok {
		msg := fmt.Sprintf("Unknown target %q.", target)
		if s := closest(target, targets); s != "" {
			msg += fmt.Sprintf(" Did you mean `%s`?", s)
		}
		return &chatmodel.UserError{Msg: msg + " Configured targets: " + strings.Join(quoteAll(targets), ", ") + "."}
	}
	if why := ev.User.NotAPerson(); why != "" {
		e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Detail: rb.Name + ": " + why})
		return &chatmodel.UserError{Msg: fmt.Sprintf("You may not run `%s` on `%s`: %s.", rb.Name, target, why)}
	}
	start := policy.Start{Target: target, Runbook: rb.Name, Teams: paramTeams(rb, c.Params)}
	if why := scope.Refusal(target, start.Teams); why != "" {
		// Said without the team named: the channel is not told of others.
		e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Teams: start.Teams, Detail: rb.Name + ": channels." + scope.Key + " does not bind the team"})
		return &chatmodel.UserError{Msg: why}
	}
	for _, s := range rb.Steps {
		op, ok := e.opts.Ops.Get(s.Op)
		if !ok {
			continue
		}
		start.Ops = append(start.Ops, op.Name)
		if op.Class != opmodel.ClassRead && s.Kind != runbookmodel.KindWait {
			start.Changing = true
		}
	}
	refusal, err := e.set.approvals().MayStart(ctx, start, ev.User.ID, &e.dir)
	if err != nil {
		return err
	}
	if refusal != nil {
		e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Teams: start.Teams, Detail: rb.Name + ": " + refusal.Source})
		return &chatmodel.UserError{Msg: refusal.Message(rb.Name, target)}
	}
	if ti.Authority == AuthorityConcourse && len(start.Teams) > 0 {
		// Concourse's own roles: a viewer may read a team's things; to
		// change them, at least pipeline-operator (each change asks its own
		// role again when it is made).
		need := policy.RoleViewer
		if start.Changing {
			need = policy.RolePipelineOperator
		}
		why, err := policy.NeedRole(ctx, runmodel.RoleCheck{Target: target, Role: need, Teams: start.Teams}, ev.User, e.opts.Roles)
		if err != nil {
			return err
		}
		if why != "" {
			e.writes.audit(ctx, runmodel.AuditEntry{Actor: ev.User.ID, Action: runmodel.ActionRunRefused, Target: target, Teams: start.Teams, Detail: rb.Name + ": " + why})
			return &chatmodel.UserError{Msg: fmt.Sprintf("You may not run `%s` on `%s`: %s.", rb.Name, target, why)}
		}
	}
	params, err := runbooks.ValidateParams(rb, c.Params)
	if err != nil {
		return &chatmodel.UserError{Msg: err.Error() + fmt.Sprintf(". See `/runbook show %s`.", rb.Name)}
	}
	if err := e.out.canPost(ctx, ev.Conversation); err != nil {
		return err
	}
	now := e.opts.Now()
	r := &runmodel.Run{
		Runbook: rb.Name, Title: rb.Title, Target: target, FlyTarget: cmp.Or(ti.FlyTarget, target), Team: ti.Team, Scope: scope.Data(), Params: params, Vars: ti.Vars,
		Requester: ev.User, Conversation: ev.Conversation, State: runmodel.RunRunning, DryRun: c.DryRun,
		Spec: rb, CreatedAt: now, UpdatedAt: now, AlertInstance: ev.AlertInstance,
	}
	for _, s := range rb.Steps {
		r.Steps = append(r.Steps, runmodel.StepState{ID: s.ID, Kind: s.Kind, Op: s.Op, Status: runmodel.StepPending})
	}
	env := runEnv(r)
	for i, s := range rb.Steps {
		// Until its step starts (resolveTitles), a title that names an
		// earlier step's result shows its fallback.
		r.Steps[i].Title = runbooks.RenderTitle(s.Title, env)
	}
	var b runmodel.Batch
	b.Note(runmodel.JournalEntry{Time: now, Type: runmodel.JRunStarted, Actor: ev.User.ID, ActorName: ev.User.Name, Message: strings.TrimSpace(fmt.Sprintf("%s on %s %s", rb.Name, target, FormatParams(params)))})
	b.AuditLog(runmodel.AuditEntry{Time: now, Actor: ev.User.ID, Action: runmodel.ActionRunStarted, Target: target, Teams: paramTeams(rb, params), Detail: strings.TrimSpace(fmt.Sprintf("%s %s", rb.Name, FormatParams(params))) + map[bool]string{true: " (dry run)"}[c.DryRun]})
	for range 20 {
		r.ID = newRunID()
		err = e.opts.Store.CreateRun(ctx, r, &b)
		if !errors.Is(err, runmodel.ErrExists) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("saving the run: %w", err)
	}
	e.opts.Observer.RunCommitted(r, &b)
	for i := range b.Audit {
		b.Audit[i].RunID = r.ID
	}
	e.out.post(ctx, ev.Conversation, r.ID, chatmodel.RoleRoot, "", e.out.rootMessage(r))
	e.work.kick(r.ID)
	return nil
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return out
}

func (e *Engine) reaction(ctx context.Context, ev chatmodel.Event) error {
	if ev.Intent == "" {
		return nil // a reaction that means nothing to groundcrew
	}
	idx, err := e.out.messageTarget(ctx, ev.Message)
	if errors.Is(err, chatmodel.ErrNotFound) {
		return nil // a reaction on some other message
	}
	if err != nil {
		return err
	}
	switch idx.Role {
	case chatmodel.RoleGate:
		var approve bool
		switch ev.Intent {
		case chatmodel.IntentApprove:
			approve = true
		case chatmodel.IntentReject:
		default:
			return nil
		}
		e.vote(ctx, ballot{RunID: idx.RunID, Ref: ev.Message, Conv: threadConv(ev), User: ev.User, Approve: approve, Removed: ev.Removed, Via: runmodel.ViaReaction})
	case chatmodel.RoleStep:
		if ev.Removed {
			return nil // a manual step once done stays done
		}
		var status runmodel.StepStatus
		switch ev.Intent {
		case chatmodel.IntentApprove, chatmodel.IntentDone:
			status = runmodel.StepSucceeded
		case chatmodel.IntentReject, chatmodel.IntentFail:
			status = runmodel.StepFailed
		case chatmodel.IntentSkip:
			status = runmodel.StepSkipped
		default:
			return nil
		}
		r, err := e.opts.Store.GetRun(ctx, idx.RunID)
		if err != nil || r.Current() == nil || r.Current().ID != idx.Step || r.Current().Status != runmodel.StepManual {
			return nil // reactions on finished steps are just reactions
		}
		e.manualResponse(ctx, idx.RunID, ev.Message, threadConv(ev), ev.User, status, "")
	}
	return nil
}

func threadConv(ev chatmodel.Event) chatmodel.Conversation {
	c := ev.Conversation
	if c.Channel == "" {
		c.Channel = ev.Message.Channel
	}
	if c.Thread == "" {
		c.Thread = ev.Message.Thread
	}
	return c
}

func (e *Engine) button(ctx context.Context, ev chatmodel.Event) error {
	if ev.Intent == chatmodel.IntentRun {
		runButton(ctx, e, ev)
		return nil
	}
	runID, _, _ := strings.Cut(ev.Value, "|")
	if runID == "" {
		return nil
	}
	if !ev.Message.IsZero() {
		// A button pressed the moment its message appeared: wait for the
		// message's reference to be stored, so the press is matched to it.
		if _, err := e.out.messageTarget(ctx, ev.Message); err != nil && !errors.Is(err, chatmodel.ErrNotFound) {
			return err
		}
	}
	switch ev.Intent {
	case chatmodel.IntentApprove, chatmodel.IntentReject:
		e.vote(ctx, ballot{RunID: runID, Ref: ev.Message, Conv: threadConv(ev), User: ev.User, Approve: ev.Intent == chatmodel.IntentApprove, Via: runmodel.ViaButton})
	case chatmodel.IntentDone:
		e.manualResponse(ctx, runID, ev.Message, threadConv(ev), ev.User, runmodel.StepSucceeded, "")
	case chatmodel.IntentSkip:
		e.manualResponse(ctx, runID, ev.Message, threadConv(ev), ev.User, runmodel.StepSkipped, "")
	case chatmodel.IntentFail:
		e.manualResponse(ctx, runID, ev.Message, threadConv(ev), ev.User, runmodel.StepFailed, "")
	}
	return nil
}
