package bot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// maxMentions bounds the people one escalation step mentions (a group is
// mentioned member by member, so that it pings on every platform).
const maxMentions = 50

// escalate takes the escalation steps of r's open gate that are due at
// now, each once and in order: it journals the step, then mentions its
// people in the gate's thread (and the channel when the step says so).
// The gate's policy is not touched: an escalated gate needs the same
// approvals as before.
func (e *Engine) escalate(ctx context.Context, r *runmodel.Run, now time.Time) {
	for {
		g := r.Gate
		if g == nil || g.Decision != runmodel.GatePending || g.Escalated >= len(g.Policy.Escalate) {
			return
		}
		i := g.Escalated
		step := g.Policy.Escalate[i]
		if now.Before(g.RequestedAt.Add(time.Duration(step.After))) {
			return
		}
		waited := human.Duration(expiresIn(now.Sub(g.RequestedAt))) // seconds under a minute: a 20s step never says "0 s"
		r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != runmodel.GatePending || r.Gate.Escalated != i {
				return errRunOver
			}
			r.Gate.Escalated = i + 1
			b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JGateEscalated, PlanHash: g.PlanHash,
				Message: fmt.Sprintf("escalated after %s without a decision: notified %s", waited, policy.DisplayList(step.Notify))})
			return nil
		})
		if err != nil {
			return
		}
		ng := r2.Gate
		what := "approval"
		if ng.Plan != nil && ng.Plan.Summary != "" {
			what = ng.Plan.Summary
		}
		mentions := e.dir.mentions(ctx, step.Notify)
		head := fmt.Sprintf("🔔 Escalation %d/%d", i+1, len(ng.Policy.Escalate))
		if named := e.dir.unmentioned(ctx, step.Notify, mentions); len(named) > 0 {
			head += " — " + policy.DisplayList(named)
		}
		text := fmt.Sprintf("%s: approval for `%s` (%s) has waited %s with %d of %d approvals. %s · expires in %s (%s UTC). %s",
			head, r2.ID, what, waited, len(ng.Votes), ng.Policy.WithDefaults().Required,
			policy.Describe(ng.Policy, r2.Requester.Display()), human.Duration(expiresIn(ng.ExpiresAt.Sub(now))), ng.ExpiresAt.UTC().Format("15:04"), e.hints.reminder(r2.ID))
		e.out.thread(ctx, r2, chatmodel.RoleReminder, ng.StepID, chatmodel.Message{Broadcast: step.Channel, Mentions: mentions, Text: text})
		r = r2
	}
}

// unmentioned returns the entries the message text must name: groups
// (their members are mentioned one by one, the text says why) and users
// who are not among the mentions (a look-up failed). A user who is
// mentioned is not named again: the adapters put the mention before the
// text ("@bob 🔔 Escalation 1/2: …", not "@bob 🔔 Escalation 1/2 — @bob: …").
func (d *directory) unmentioned(ctx context.Context, entries, mentions []string) []string {
	var out []string
	for _, a := range entries {
		if _, ok := policy.Group(a); ok {
			out = append(out, a)
			continue
		}
		if id, err := d.UserID(ctx, a); err != nil || id == "" || !slices.Contains(mentions, id) {
			out = append(out, a)
		}
	}
	return out
}

// mentions returns the user ids of the entries: users by name, groups
// member by member; at most maxMentions. Who cannot be looked up is
// logged and left out (the message still names the entry).
func (d *directory) mentions(ctx context.Context, entries []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] && len(out) < maxMentions {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, a := range entries {
		if g, ok := policy.Group(a); ok {
			if d.groups == nil {
				continue
			}
			ids, err := d.groups.GroupMembers(ctx, g)
			if err != nil && !errors.Is(err, chatmodel.ErrNotFound) && d.log != nil {
				d.log.Warn("escalation: could not list the group to mention", "group", g, "err", err)
			}
			for _, id := range ids {
				add(id)
			}
			continue
		}
		id, err := d.UserID(ctx, a)
		if err != nil && d.log != nil {
			d.log.Warn("escalation: could not look up the user to mention", "user", a, "err", err)
		}
		add(id)
	}
	return out
}
