package bot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/groundcrew/groundcrew/bot/policy"
	"github.com/groundcrew/groundcrew/internal/human"
)

// maxMentions bounds the people one escalation step mentions (a group is
// mentioned member by member, so that it pings on every platform).
const maxMentions = 50

// escalate takes the escalation steps of r's open gate that are due at
// now, each once and in order: it journals the step, then mentions its
// people in the gate's thread (and the channel when the step says so).
// The gate's policy is not touched: an escalated gate needs the same
// approvals as before.
func (e *Engine) escalate(ctx context.Context, r *Run, now time.Time) {
	for {
		g := r.Gate
		if g == nil || g.Decision != GatePending || g.Escalated >= len(g.Policy.Escalate) {
			return
		}
		i := g.Escalated
		step := g.Policy.Escalate[i]
		if now.Before(g.RequestedAt.Add(time.Duration(step.After))) {
			return
		}
		waited := human.Duration(expiresIn(now.Sub(g.RequestedAt))) // seconds under a minute: a 20s step never says "0 s"
		r2, err := e.update(ctx, r.ID, func(r *Run, b *Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != GatePending || r.Gate.Escalated != i {
				return errRunOver
			}
			r.Gate.Escalated = i + 1
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JGateEscalated, PlanHash: g.PlanHash,
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
		text := fmt.Sprintf("🔔 Escalation %d/%d — %s: approval for `%s` (%s) has waited %s with %d of %d approvals. %s · expires in %s (%s UTC). %s",
			i+1, len(ng.Policy.Escalate), policy.DisplayList(step.Notify), r2.ID, what, waited, len(ng.Votes), ng.Policy.WithDefaults().Required,
			ng.Policy.Describe(r2.Requester.Display()), human.Duration(expiresIn(ng.ExpiresAt.Sub(now))), ng.ExpiresAt.UTC().Format("15:04"), e.hints.reminder(r2.ID))
		e.out.thread(ctx, r2, RoleReminder, ng.StepID, Message{Broadcast: step.Channel, Mentions: e.dir.mentions(ctx, step.Notify), Text: text})
		r = r2
	}
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
			if err != nil && !errors.Is(err, ErrNotFound) && d.log != nil {
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
