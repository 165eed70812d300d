package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// voided is a counted approval found no longer to qualify, with why.
type voided struct {
	vote runmodel.Vote
	why  string
}

// recheckVotes counts every counted approval of g again, by the rule that
// counted it when it was cast (policy.Count), with the voter's account and
// the policy's names and groups asked afresh (no cache, no stale
// fallback). It returns the approvals that no longer count, and the
// required groups each remaining voter belongs to now (by user id).
func (e *Engine) recheckVotes(ctx context.Context, r *runmodel.Run, g *runmodel.Gate) ([]voided, map[string][]string, error) {
	fresh := chatmodel.Fresh(ctx)
	var out []voided
	groups := map[string][]string{}
	for _, v := range g.Votes {
		if !v.Approve {
			continue // a rejection needs no rights; it cannot approve anything
		}
		voter, err := e.accountNow(fresh, v.User)
		if err != nil {
			return nil, nil, err
		}
		st, err := policy.Count(fresh, g.Policy, r.Requester.ID, policy.Approval{Voter: voter, BreakGlass: v.BreakGlass}, &e.dir)
		if err != nil {
			return nil, nil, err
		}
		if !st.Counts() {
			out = append(out, voided{vote: v, why: st.Why.NoLonger()})
			continue
		}
		groups[v.User.ID] = st.Groups
	}
	return out, groups, nil
}

// accountNow is the voter's account as the platform says now, looked up
// by id as the chat adapter looked it up when the vote was cast, under the
// name it had then (a policy's handles are matched against that name).
// Without an identity resolver (the console), accounts do not change.
func (e *Engine) accountNow(ctx context.Context, u chatmodel.User) (chatmodel.User, error) {
	if e.dir.users == nil {
		return u, nil
	}
	now, err := e.dir.users.UserByID(ctx, u.ID)
	if errors.Is(err, chatmodel.ErrNotFound) {
		now, err = chatmodel.User{Kind: chatmodel.UserUnknown}, nil
	}
	if err != nil {
		return chatmodel.User{}, fmt.Errorf("looking up %s: %w", u.Display(), err)
	}
	now.ID, now.Name = u.ID, u.Name
	return now, nil
}

// voidLine is the gate's line for an approval that no longer counts.
func voidLine(u chatmodel.User, why string) string {
	return u.Display() + "'s approval no longer counts: " + why
}

// approvalsStand re-checks the approved gate's votes right before the call
// they approve. Approvals that no longer qualify are voided (journal,
// audit, a line on the gate). It returns true when the remaining votes
// still approve; otherwise the gate is open again and asks for what is
// missing (with a fresh expiry), or, when the directory cannot be asked,
// the step fails closed: nothing is ever done on a quorum not checked.
func (e *Engine) approvalsStand(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step) ([]chatmodel.User, bool) {
	g := r.Gate
	gone, groups, err := e.recheckVotes(ctx, r, g)
	if err != nil {
		if ctx.Err() == nil {
			e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("checking the approvals again before executing: %w; nothing was changed, start the run again when the chat platform answers", err), nil)
		}
		return nil, false
	}
	if len(gone) == 0 && !groupsChanged(g, groups) {
		return voters(g), true
	}
	now := e.opts.Now()
	var reopened bool
	r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		g2 := r.Gate
		if g2 == nil || g2.ID != g.ID || g2.Decision != runmodel.GateApproved {
			return errRunOver
		}
		for _, x := range gone {
			for i := range g2.Votes {
				if g2.Votes[i].User.ID == x.vote.User.ID {
					g2.Votes = append(g2.Votes[:i], g2.Votes[i+1:]...)
					break
				}
			}
			g2.Voided = append(g2.Voided, runmodel.Refusal{User: x.vote.User, Reason: x.why, At: now, Action: "approval"})
			b.Note(runmodel.JournalEntry{Time: now, Step: g2.StepID, Type: runmodel.JVoteVoided, Actor: x.vote.User.ID, ActorName: x.vote.User.Name, PlanHash: g2.PlanHash,
				Message: "approval no longer counts: " + x.why})
			b.AuditLog(runmodel.AuditEntry{Time: now, Actor: x.vote.User.ID, Action: runmodel.ActionVoteVoided, Step: g2.StepID, Target: r.Target, PlanHash: g2.PlanHash,
				Via: string(x.vote.Via), Detail: "approval checked again before executing: " + x.why})
		}
		for i := range g2.Votes {
			if gs, ok := groups[g2.Votes[i].User.ID]; ok {
				g2.Votes[i].Groups = gs
			}
		}
		if policy.Decide(g2.Policy, ballots(g2), time.Time{}, now) == runmodel.GateApproved {
			return nil
		}
		// The quorum is gone: ask again, with the full time to answer.
		reopened = true
		g2.Decision = runmodel.GatePending
		g2.ExpiresAt = now.Add(time.Duration(g2.Policy.WithDefaults().Expires))
		g2.Reminded = false
		// Escalation starts over too: it counts from the request asked again.
		g2.RequestedAt, g2.Escalated = now, 0
		b.Note(runmodel.JournalEntry{Time: now, Step: g2.StepID, Type: runmodel.JGateDecided, PlanHash: g2.PlanHash,
			Message: "asked again before executing: the approvals that still count are not enough (" + Missing(g2) + " needed)"})
		return r.SetState(runmodel.RunAwaitingApproval)
	})
	if err != nil {
		return nil, false
	}
	e.out.refreshGate(ctx, r2, r2.Gate)
	if !reopened {
		return voters(r2.Gate), true
	}
	lines := make([]string, 0, len(gone))
	for _, x := range gone {
		lines = append(lines, voidLine(x.vote.User, x.why))
	}
	g2 := r2.Gate
	e.out.thread(ctx, r2, chatmodel.RoleReminder, g2.StepID, chatmodel.Message{Broadcast: true,
		Text: fmt.Sprintf("⚠️ Nothing was done: approval of `%s` (%s) is asked again. %s. Still needed: %s · expires in %s.",
			r2.ID, planSummary(g2), strings.Join(lines, "; "), Missing(g2), human.Duration(time.Duration(g2.Policy.WithDefaults().Expires)))})
	e.out.refreshRoot(ctx, r2)
	return nil, false
}

// groupsChanged reports whether a remaining voter's required groups differ
// from what was recorded when they voted.
func groupsChanged(g *runmodel.Gate, now map[string][]string) bool {
	if len(g.Policy.RequireGroups) == 0 {
		return false
	}
	for _, v := range g.Votes {
		gs, ok := now[v.User.ID]
		if ok && strings.Join(gs, ",") != strings.Join(v.Groups, ",") {
			return true
		}
	}
	return false
}

func planSummary(g *runmodel.Gate) string {
	if g.Plan == nil {
		return g.StepID
	}
	return g.Plan.Summary
}
