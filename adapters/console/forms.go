package console

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// consoleForm is a form asked question by question: the missing required
// fields only (the others keep their defaults, as typing the command
// without them does).
type consoleForm struct {
	ev     chatmodel.Event
	form   chatmodel.Form
	ask    []chatmodel.FormField
	next   int
	values map[string]string
}

var _ chatmodel.FormOpener = (*Adapter)(nil)

// OpenForm implements chatmodel.FormOpener: the next lines answer the form's
// missing required fields one by one ("/cancel" stops); then the command
// is handled as if typed in full.
func (a *Adapter) OpenForm(_ context.Context, ev chatmodel.Event, f chatmodel.Form) error {
	cf := &consoleForm{ev: ev, form: f, values: map[string]string{}}
	for _, fd := range f.Fields {
		if fd.Default != "" {
			cf.values[fd.Name] = fd.Default
		}
		if fd.Required && fd.Default == "" {
			cf.ask = append(cf.ask, fd)
		}
	}
	if len(cf.ask) == 0 {
		return fmt.Errorf("form %q has nothing to ask", f.Title)
	}
	a.mu.Lock()
	a.form = cf
	a.mu.Unlock()
	a.say("📝 %s: %d required parameter%s missing; answer each (or /cancel).", f.Title, len(cf.ask), plural(len(cf.ask)))
	if f.Note != "" {
		a.say("⚠️ %s", f.Note)
	}
	a.prompt(cf)
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (a *Adapter) prompt(cf *consoleForm) {
	fd := cf.ask[cf.next]
	q := fd.Name
	if fd.Help != "" {
		q += " — " + fd.Help
	}
	if len(fd.Options) > 0 {
		q += " (one of: " + strings.Join(fd.Options, ", ") + ")"
	}
	a.say("%s?", q)
}

// answerForm takes line as the answer to the open form's question; false
// when no form is open (the line is a command as usual).
func (a *Adapter) answerForm(ctx context.Context, h chatmodel.Handler, line string) bool {
	a.mu.Lock()
	cf := a.form
	a.mu.Unlock()
	if cf == nil {
		return false
	}
	if line == "/cancel" {
		a.mu.Lock()
		a.form = nil
		a.mu.Unlock()
		a.say("form cancelled: nothing was started")
		return true
	}
	if strings.HasPrefix(line, "/") {
		// Another command (no answer starts with "/"): it is what the
		// person wants now, like a command typed next to a Slack modal.
		a.mu.Lock()
		a.form = nil
		a.mu.Unlock()
		a.say("%s: form dropped for the new command (nothing was started)", cf.form.Title)
		return false
	}
	fd := cf.ask[cf.next]
	switch {
	case strings.ContainsAny(line, " \t"):
		a.say("%s: a value cannot contain spaces (as in a typed command); try again", fd.Name)
		a.prompt(cf)
		return true
	case len(fd.Options) > 0 && !slices.Contains(fd.Options, line):
		a.say("%s: %q is not one of %s; try again", fd.Name, line, strings.Join(fd.Options, ", "))
		a.prompt(cf)
		return true
	}
	if msg := a.checkAnswer(ctx, cf, fd.Name, line); msg != "" {
		a.say("%s; try again", strings.TrimSuffix(msg, "."))
		a.prompt(cf)
		return true
	}
	cf.values[fd.Name] = line
	cf.next++
	if fd.Refresh && cf.next < len(cf.ask) {
		a.refreshForm(ctx, cf)
	}
	if cf.next < len(cf.ask) {
		a.prompt(cf)
		return true
	}
	a.mu.Lock()
	a.form = nil
	a.mu.Unlock()
	ev := cf.ev
	ev.ID, ev.Text, ev.Time = "", chatmodel.FormCommand(cf.form, cf.values), a.opts.Now()
	a.say("→ /runbook %s", ev.Text)
	a.handle(ctx, h, ev)
	return true
}

// SetFormChecker makes each answer checked as the command typed in full
// would check it (a pattern, an unknown target), so a wrong value is asked
// again at its question instead of ending the questions with a refusal.
func (a *Adapter) SetFormChecker(c chatmodel.FormChecker) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.formChecker = c
}

// checkAnswer is the checker's message for the field name answered with
// value, given the answers so far; "" when it takes it (or nobody checks).
func (a *Adapter) checkAnswer(ctx context.Context, cf *consoleForm, name, value string) string {
	a.mu.Lock()
	c := a.formChecker
	a.mu.Unlock()
	if c == nil {
		return ""
	}
	values := make(map[string]string, len(cf.values)+1)
	for k, v := range cf.values {
		values[k] = v
	}
	values[name] = value
	return c.CheckForm(ctx, cf.ev.Conversation, cf.form.Command, values)[name]
}

// SetFormRefresher makes the questions after the target offer that
// target's workers, pipelines or teams.
func (a *Adapter) SetFormRefresher(r chatmodel.FormRefresher) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.formRefresher = r
}

// refreshForm gives the questions still to ask the options of the form
// for the answers so far (the target answered), and says its note.
func (a *Adapter) refreshForm(ctx context.Context, cf *consoleForm) {
	a.mu.Lock()
	r := a.formRefresher
	a.mu.Unlock()
	if r == nil {
		return
	}
	f, err := r.RefreshForm(ctx, cf.ev.Conversation, cf.form.Command, cf.values)
	if err != nil {
		return
	}
	for i := cf.next; i < len(cf.ask); i++ {
		for _, fd := range f.Fields {
			if fd.Name == cf.ask[i].Name {
				cf.ask[i].Options = fd.Options
			}
		}
	}
	if f.Note != "" {
		a.say("⚠️ %s", f.Note)
	}
}
