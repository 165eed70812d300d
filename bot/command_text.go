package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// helpText is /runbook help for these targets and the commands subsystems
// declare (specs).
func helpText(targets []string, specs []chatmodel.CommandSpec, h hints) string {
	var b strings.Builder
	b.WriteString("*groundcrew* runs Concourse runbooks step by step, with approval before anything destructive.\n")
	for _, v := range verbs {
		if v.name == VerbHelp { // the declared commands before help, the last line
			for _, s := range specs {
				fmt.Fprintf(&b, "• `/runbook %s` — %s\n", s.Usage, s.Help)
				for _, sub := range s.Subs {
					fmt.Fprintf(&b, "• `/runbook %s` — %s\n", sub.Usage, sub.Help)
				}
			}
		}
		fmt.Fprintf(&b, "• `/runbook %s` — %s\n", v.usage, v.help)
	}
	fmt.Fprintf(&b, "Targets: %s. %s", strings.Join(quoteAll(targets), ", "), h.help())
	return b.String()
}

// listText is /runbook list in a channel offered offer: the runbooks it
// may run, and one line on those it is not offered.
func listText(lib Library, ops *opmodel.Registry, offer offering) string {
	rbs := slices.DeleteFunc(lib.List(), func(rb *runbookmodel.Runbook) bool { h, _ := offer.Hidden(rb.Name); return h })
	var b strings.Builder
	fmt.Fprintf(&b, "*%d runbooks* — `/runbook show <name>` for details\n", len(rbs))
	for _, rb := range rbs {
		gated := ""
		for _, s := range rb.Steps {
			op, ok := ops.Get(s.Op)
			if s.Kind == runbookmodel.KindApproval || ok && op.Class == opmodel.ClassDestructive {
				gated = " 🔒"
				break
			}
		}
		fmt.Fprintf(&b, "• `%s`%s — %s\n", rb.Name, gated, nonEmpty(rb.Title, firstLine(rb.Description)))
	}
	for _, br := range lib.BrokenList() {
		fmt.Fprintf(&b, "• `%s` ⚠️ broken — `%s` does not load; unavailable until it is fixed\n", br.Name, br.File)
	}
	b.WriteString("🔒 = needs an approval (destructive or approval steps)")
	if line := offer.Line(); line != "" {
		b.WriteString("\n" + line)
	}
	return b.String()
}

// brokenText tells why a runbook whose file does not load is unavailable:
// the file, its first error, and how to see them all.
func brokenText(b runbooks.Broken) string {
	first := ""
	if len(b.Errors) > 0 {
		e := *b.Errors[0]
		pos := ""
		switch {
		case e.Line > 0 && e.Column > 0:
			pos = fmt.Sprintf("%d:%d: ", e.Line, e.Column)
		case e.Line > 0:
			pos = fmt.Sprintf("%d: ", e.Line)
		}
		first = fmt.Sprintf("\nFirst error: %s%s", pos, e.Msg)
		if n := len(b.Errors) - 1; n > 0 {
			first += fmt.Sprintf(" (and %d more)", n)
		}
	}
	lint := b.Dir
	if lint == "" {
		lint = b.File
	}
	return fmt.Sprintf("Runbook `%s` is unavailable: its file `%s` does not load, and no other version is used in its place.%s\nSee every error with `groundcrew lint %s`; fix the file and restart the bot.", b.Name, b.File, first, lint)
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// showEnv is what titles see in /runbook show, before any run: the
// params' defaults, no results yet (titles show their fallback).
func showEnv(rb *runbookmodel.Runbook) runbooks.Env {
	params, steps := map[string]string{}, map[string]runbooks.StepEnv{}
	for _, p := range rb.Params {
		params[p.Name] = p.Default
		if p.Required && p.Default == "" {
			params[p.Name] = "<" + p.Name + ">" // "Resources of <pipeline>", not "Resources of"
		}
	}
	for _, s := range rb.Steps {
		steps[s.ID] = runbooks.StepEnv{Status: string(runmodel.StepPending)}
	}
	return runbooks.NewEnv(params, nil, "the target", "the fly target", steps, runbooks.RunEnv{})
}

// noRunbookText answers a runbook name that names nothing, with the
// closest name among the runbooks and the broken ones (said broken: the
// person may well mean it, and should learn why it does not run).
func noRunbookText(lib Library, name string, offer offering) string {
	var names []string
	for _, r := range lib.List() {
		names = append(names, r.Name)
	}
	names = offer.Offered(names) // suggest only what the channel may run
	for _, b := range lib.BrokenList() {
		names = append(names, b.Name)
	}
	msg := fmt.Sprintf("There is no runbook %q.", name)
	if s := closest(name, names); s != "" {
		msg += fmt.Sprintf(" Did you mean `%s`?", s)
		if _, broken := lib.Broken(s); broken {
			msg += fmt.Sprintf(" It is currently broken (its file does not load): `/runbook show %s` says why.", s)
		}
	}
	return msg
}

// showText is /runbook show name in a channel offered offer.
func showText(lib Library, ops *opmodel.Registry, name string, offer offering) string {
	rb, ok := lib.Get(name)
	if br, broken := lib.Broken(name); !ok && broken {
		return "⚠️ " + brokenText(br)
	}
	if !ok {
		return noRunbookText(lib, name, offer)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%s* — %s\n%s\n", rb.Name, rb.Title, strings.TrimSpace(rb.Description))
	if len(rb.Params) > 0 {
		b.WriteString("*Parameters* (plus `target=`):\n")
		for _, p := range rb.Params {
			req := "optional"
			if p.Required {
				req = "required"
			}
			if p.Default != "" {
				req += ", default `" + p.Default + "`"
			}
			if len(p.Enum) > 0 {
				req += ", one of " + strings.Join(quoteAll(p.Enum), "/")
			}
			fmt.Fprintf(&b, "• `%s` (%s) — %s\n", p.Name, req, p.Description)
		}
	}
	b.WriteString("*Steps*:\n")
	env := showEnv(rb)
	for i, s := range rb.Steps {
		mark := ""
		if op, ok := ops.Get(s.Op); ok {
			mark = " · " + string(op.Class)
			if op.Class == opmodel.ClassDestructive {
				mark += " 🔒 approval required"
			}
		}
		fmt.Fprintf(&b, "%d. %s (%s%s)\n", i+1, nonEmpty(runbooks.RenderTitle(s.Title, env), s.ID), s.Kind, mark)
	}
	fmt.Fprintf(&b, "Source: %s", rb.Source)
	if hidden, why := offer.Hidden(rb.Name); hidden {
		fmt.Fprintf(&b, "\n🙈 Not offered in this channel: it %s.", why)
	}
	return b.String()
}

// statusText is /runbook status [id] at time now, in a channel shown the
// runs sees says (a channel bound to teams: its own runs); failedWrites
// names the run's store writes that failed; reloaded says when the
// configuration was reloaded under a run (it keeps its runbook and policy).
func statusText(ctx context.Context, store runmodel.Store, id string, now time.Time, sees func(*runmodel.Run) bool, failedWrites func(runID string) []string, reloaded func(runID string) (time.Time, bool)) string {
	if id == "" {
		all, err := store.ListRuns(ctx, runmodel.RunQuery{Active: true})
		if err != nil {
			return "Could not list runs: " + chatmodel.UserMessage(err)
		}
		runs := slices.DeleteFunc(all, func(r *runmodel.Run) bool { return !sees(r) })
		others := ""
		if n := len(all) - len(runs); n > 0 {
			// Counted, never named: they would name other teams' things.
			others = fmt.Sprintf("%d other active run%s %s not this channel's (other teams or targets).", n, plural(n), map[bool]string{true: "is", false: "are"}[n == 1])
		}
		if len(runs) == 0 {
			return strings.TrimSpace("No active runs. Start one with `/runbook run <runbook>`. " + others)
		}
		sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.Before(runs[j].CreatedAt) })
		var b strings.Builder
		fmt.Fprintf(&b, "*%d active run%s*\n", len(runs), plural(len(runs)))
		for _, r := range runs {
			kept := ""
			if _, ok := reloaded(r.ID); ok {
				kept = " · keeps the runbook and policy it started with (config reloaded since)"
			}
			fmt.Fprintf(&b, "• `%s` %s on `%s` by %s — %s%s%s\n", r.ID, r.Runbook, r.Target, r.Requester.Display(), stateLine(r), kept, nextAction(r))
		}
		b.WriteString(openGatesText(runs, now))
		if others != "" {
			b.WriteString(others)
		}
		return strings.TrimRight(b.String(), "\n")
	}
	r, err := store.GetRun(ctx, id)
	if err != nil {
		if errors.Is(err, chatmodel.ErrNotFound) {
			return fmt.Sprintf("There is no run %q. `/runbook status` lists the active runs.", id)
		}
		return "Could not read the run: " + chatmodel.UserMessage(err)
	}
	if !sees(r) {
		return notThisChannels(id)
	}
	var b strings.Builder
	b.WriteString(renderRoot(r, now).Text + "\n")
	if s := policy.RunScope(r); s != "" {
		b.WriteString("📌 " + s + "\n")
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		line := fmt.Sprintf("%d. %s %s", i+1, stepIcon(st), nonEmpty(st.Title, st.ID))
		if st.Status == runmodel.StepPending && r.State.Terminal() {
			line += " — not run"
		}
		if st.Summary != "" {
			line += " — " + st.Summary
		}
		if st.Error != "" {
			line += " — " + st.Error
		}
		b.WriteString(line + "\n")
	}
	if g := r.Gate; r.State == runmodel.RunAwaitingApproval && g != nil && g.Decision == runmodel.GatePending && g.Plan != nil {
		// what the open request would do, and what may happen meanwhile
		// ("Concourse removes worker-1 by itself before 14:32 UTC")
		b.WriteString("🔒 Plan: " + g.Plan.Summary + "\n")
		for _, n := range g.Plan.Notes {
			if !strings.Contains(g.Plan.Summary, n) {
				b.WriteString("ℹ️ " + n + "\n")
			}
		}
	}
	if at, ok := reloaded(r.ID); ok {
		fmt.Fprintf(&b, "ℹ️ The configuration was reloaded at %s UTC: this run keeps the runbook and approval policy it started with; new runs use the new ones.\n", at.UTC().Format("15:04"))
	}
	if failed := failedWrites(r.ID); len(failed) > 0 {
		fmt.Fprintf(&b, "⚠️ %d store write%s failed (see the log): %s\n", len(failed), plural(len(failed)), strings.Join(failed, "; "))
	}
	b.WriteString(outboxStatus(ctx, store, r.ID))
	if n := nextAction(r); n != "" {
		b.WriteString(strings.TrimPrefix(n, " "))
	}
	return strings.TrimRight(b.String(), "\n")
}

// notThisChannels answers a run a bound channel is not shown, without
// a word of it.
func notThisChannels(id string) string {
	return fmt.Sprintf("Run `%s` is not this channel's: it acts on another team's things or another target. Follow it where it was started.", id)
}

// openGatesText lists the open approval requests of runs, oldest first,
// with how long each has waited ("" when none).
func openGatesText(runs []*runmodel.Run, now time.Time) string {
	var open []*runmodel.Run
	for _, r := range runs {
		if r.State == runmodel.RunAwaitingApproval && r.Gate != nil && r.Gate.Decision == runmodel.GatePending {
			open = append(open, r)
		}
	}
	if len(open) == 0 {
		return ""
	}
	sort.SliceStable(open, func(i, j int) bool { return open[i].Gate.RequestedAt.Before(open[j].Gate.RequestedAt) })
	var b strings.Builder
	fmt.Fprintf(&b, "*%d open approval request%s, oldest first*\n", len(open), plural(len(open)))
	for _, r := range open {
		g := r.Gate
		what := nonEmpty(g.StepID, "approval")
		if g.Plan != nil && g.Plan.Summary != "" {
			what = g.Plan.Summary
		}
		line := fmt.Sprintf("• `%s` waiting %s — %s: %d of %d approvals", r.ID, human.Duration(now.Sub(g.RequestedAt).Round(time.Minute)), what, len(g.Votes), g.Policy.WithDefaults().Required)
		if n := len(g.Policy.Escalate); n > 0 {
			line += fmt.Sprintf(" · escalated %d of %d", g.Escalated, n)
		}
		if !g.ExpiresAt.IsZero() {
			line += " · expires in " + human.Duration(expiresIn(g.ExpiresAt.Sub(now)))
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// nextAction tells people how to move a waiting run on.
func nextAction(r *runmodel.Run) string {
	switch r.State {
	case runmodel.RunAwaitingApproval:
		return fmt.Sprintf(" → `/runbook approve %s` or `/runbook reject %s <reason>`", r.ID, r.ID)
	case runmodel.RunAwaitingManual:
		return fmt.Sprintf(" → `/runbook done|skip|fail %s`", r.ID)
	}
	return ""
}

// outboxStatus says which of a run's messages could not be posted yet, or
// were given up (#19.5); "" when none.
func outboxStatus(ctx context.Context, store runmodel.Store, runID string) string {
	items, err := store.ListOutbox(ctx)
	if err != nil {
		return "⚠️ Could not read the outbox: " + chatmodel.UserMessage(err) + "\n"
	}
	var pending, gaveUp int
	var last string
	for _, it := range items {
		if it.RunID != runID {
			continue
		}
		if it.GaveUp {
			gaveUp++
		} else {
			pending++
		}
		last = it.LastErr
	}
	var b strings.Builder
	if pending > 0 {
		fmt.Fprintf(&b, "⚠️ %d message%s not posted yet, retrying (last error: %s)\n", pending, plural(pending), last)
	}
	if gaveUp > 0 {
		fmt.Fprintf(&b, "❌ %d message%s could not be posted and %s given up (last error: %s); follow the run here with `/runbook status %s`\n", gaveUp, plural(gaveUp), map[bool]string{true: "was", false: "were"}[gaveUp == 1], last, runID)
	}
	return b.String()
}
