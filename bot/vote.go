package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// vote records an approve/reject from user on the run's open gate. ref is
// the message voted on (zero for a typed command).
func (e *Engine) vote(ctx context.Context, runID string, ref MessageRef, conv Conversation, user User, approve, removed bool, via, reason string) {
	r, ok := e.runFor(ctx, runID, conv, user)
	if !ok {
		return
	}
	g := r.Gate
	if r.State.Terminal() || g == nil || g.Decision != GatePending {
		if !removed {
			e.reply(ctx, conv, user, fmt.Sprintf("Run `%s` has no open approval request (it is %s).", r.ID, strings.ReplaceAll(string(r.State), "_", " ")))
		}
		return
	}
	if !ref.IsZero() && ref.ID != g.Message.ID {
		if !removed {
			e.reply(ctx, conv, user, "That approval request was replaced (the plan changed or it was re-opened); vote on the latest request in the thread.")
		}
		return
	}
	why, err := CheckVoter(ctx, g.Policy, r.Requester, user, e.groups.member)
	var groups []string
	if err == nil && why == "" {
		groups, err = voterGroups(ctx, g.Policy, user, e.groups.member)
	}
	if err != nil {
		e.reply(ctx, conv, user, "⚠️ Could not check your approval rights: "+userMessage(err)+". Try again in a minute.")
		return
	}
	now := e.o.Now()
	var decision GateDecision
	r, err = e.update(ctx, runID, func(r *Run, b *Batch) error {
		if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != GatePending {
			return errRunOver
		}
		g := r.Gate
		verb := map[bool]string{true: "approve", false: "reject"}[approve]
		if why != "" {
			if removed {
				return errRunOver
			}
			g.Refusals = append(g.Refusals, Refusal{User: user, Reason: why, At: now})
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JVoteRefused, Actor: user.ID, PlanHash: g.PlanHash, Message: verb + " not counted: " + why})
			b.AuditLog(AuditEntry{Time: now, Actor: user.ID, Action: "vote_refused", Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: via, Detail: verb + ": " + why})
			return nil
		}
		if removed {
			if !g.withdraw(user.ID, approve) {
				return errRunOver
			}
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JVote, Actor: user.ID, PlanHash: g.PlanHash, Message: "withdrew " + verb})
			b.AuditLog(AuditEntry{Time: now, Actor: user.ID, Action: "vote_withdrawn", Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: via})
		} else {
			g.castVote(Vote{User: user, Approve: approve, Reason: reason, At: now, Via: via, PlanHash: g.PlanHash, Groups: groups})
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JVote, Actor: user.ID, PlanHash: g.PlanHash, Message: verb + optional(reason)})
			b.AuditLog(AuditEntry{Time: now, Actor: user.ID, Action: verb, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: via, Detail: reason})
		}
		decision = Decide(g, now)
		switch decision {
		case GateApproved:
			g.Decision = GateApproved
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JGateDecided, PlanHash: g.PlanHash, Message: "approved by " + userList(voters(g))})
			b.AuditLog(AuditEntry{Time: now, Actor: e.o.BotName, Action: "approval_granted", Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Detail: "approved by " + userList(voters(g))})
			return r.setState(RunRunning)
		case GateRejected:
			g.Decision = GateRejected
			st := r.current()
			st.Status, st.FinishedAt = StepFailed, now
			st.Error = "rejected by " + user.Display() + optional(reason)
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JGateDecided, PlanHash: g.PlanHash, Message: st.Error})
			b.AuditLog(AuditEntry{Time: now, Actor: e.o.BotName, Action: "approval_rejected", Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Detail: st.Error})
			return e.endRun(r, b, RunFailed, st.Error)
		}
		return nil
	})
	if err != nil {
		return
	}
	e.hook("voted:" + user.ID)
	e.updateGateMessage(ctx, r, r.Gate)
	if why != "" {
		e.reply(ctx, conv, user, fmt.Sprintf("🚫 Your %s on `%s` was not counted: %s.", map[bool]string{true: "approval", false: "rejection"}[approve], r.ID, why))
		return
	}
	switch decision {
	case GateApproved:
		e.refreshRoot(ctx, r)
		e.kick(runID)
	case GateRejected:
		e.announceEnd(ctx, r)
	}
}

// breakGlass lets a break-glass user approve a gate alone, with a reason.
func (e *Engine) breakGlass(ctx context.Context, runID string, conv Conversation, user User, reason string) {
	r, ok := e.runFor(ctx, runID, conv, user)
	if !ok {
		return
	}
	g := r.Gate
	if r.State.Terminal() || g == nil || g.Decision != GatePending {
		e.reply(ctx, conv, user, fmt.Sprintf("Run `%s` has no open approval request.", r.ID))
		return
	}
	if len(g.Policy.BreakGlass) == 0 {
		e.reply(ctx, conv, user, "Break-glass is not enabled for this gate (set `break_glass` in the approval policy).")
		return
	}
	in, err := InList(ctx, g.Policy.BreakGlass, user, e.groups.member)
	if err != nil || !in {
		e.reply(ctx, conv, user, fmt.Sprintf("⛔ Only %s may break glass.", displayList(g.Policy.BreakGlass)))
		return
	}
	if len(strings.Fields(reason)) < 2 {
		e.reply(ctx, conv, user, fmt.Sprintf("A break-glass approval needs a reason: `/runbook approve %s --break-glass <why this cannot wait>`.", r.ID))
		return
	}
	now := e.o.Now()
	r, err = e.update(ctx, runID, func(r *Run, b *Batch) error {
		if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != GatePending {
			return errRunOver
		}
		g := r.Gate
		g.castVote(Vote{User: user, Approve: true, Reason: reason, At: now, Via: "command", PlanHash: g.PlanHash, BreakGlass: true})
		g.Decision = GateApproved
		b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JGateDecided, Actor: user.ID, PlanHash: g.PlanHash, Message: "BREAK-GLASS approval by " + user.Display() + ": " + reason})
		b.AuditLog(AuditEntry{Time: now, Actor: user.ID, Action: "break_glass", Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: "command", Detail: reason})
		return r.setState(RunRunning)
	})
	if err != nil {
		return
	}
	e.log.Warn("break-glass approval", "run", runID, "user", user.ID, "reason", reason)
	e.updateGateMessage(ctx, r, r.Gate)
	e.postThread(ctx, r, "breakglass", g.StepID, Message{Broadcast: true,
		Text: fmt.Sprintf("🚨 *Break-glass*: %s overrode the approval of `%s` (%s): %s", user.Display(), r.ID, g.Plan.Summary, reason)})
	e.refreshRoot(ctx, r)
	e.kick(runID)
}

// audit appends one audit entry outside a run update.
func (e *Engine) audit(ctx context.Context, a AuditEntry) {
	if a.Time.IsZero() {
		a.Time = e.o.Now()
	}
	if err := e.o.Store.AppendAudit(ctx, a); err != nil {
		e.log.Error("writing the audit log", "err", err)
	}
}

func voters(g *Gate) []User {
	out := make([]User, 0, len(g.Votes))
	for _, v := range g.Votes {
		out = append(out, v.User)
	}
	return out
}

func userList(us []User) string {
	if len(us) == 0 {
		return "nobody"
	}
	names := make([]string, 0, len(us))
	for _, u := range us {
		names = append(names, u.Display())
	}
	return strings.Join(names, ", ")
}

// manualResponse completes, skips or fails the open manual step.
func (e *Engine) manualResponse(ctx context.Context, runID string, ref MessageRef, conv Conversation, user User, status StepStatus, note string) {
	r, ok := e.runFor(ctx, runID, conv, user)
	if !ok {
		return
	}
	st := r.current()
	if r.State != RunAwaitingManual || st == nil || st.Status != StepManual || (!ref.IsZero() && ref.ID != st.Message.ID) {
		e.reply(ctx, conv, user, fmt.Sprintf("Run `%s` is not waiting for that manual step (it is %s).", r.ID, strings.ReplaceAll(string(r.State), "_", " ")))
		return
	}
	stepID := st.ID
	now := e.o.Now()
	r, err := e.update(ctx, runID, func(r *Run, b *Batch) error {
		st := r.current()
		if r.State != RunAwaitingManual || st.ID != stepID || st.Status != StepManual {
			return errRunOver
		}
		st.Status, st.FinishedAt, st.By, st.Note = status, now, &user, note
		switch status {
		case StepSucceeded:
			st.Summary = "done by " + user.Display()
		case StepSkipped:
			st.Summary = "skipped by " + user.Display()
		case StepFailed:
			st.Error = "marked failed by " + user.Display() + optional(note)
		}
		b.Note(JournalEntry{Time: now, Step: stepID, Type: JManualDone, Actor: user.ID, Message: string(status) + optional(note)})
		b.AuditLog(AuditEntry{Time: now, Actor: user.ID, Action: "manual_" + string(status), Step: stepID, Target: r.Target, Detail: note})
		if err := r.setState(RunRunning); err != nil {
			return err
		}
		return e.moveOn(r, b, status != StepFailed)
	})
	if err != nil {
		return
	}
	e.postStep(ctx, r, stepID)
	if r.State.Terminal() {
		e.announceEnd(ctx, r)
		return
	}
	e.kick(runID)
}

// runFor loads a run named in a command, answering the user when it cannot.
func (e *Engine) runFor(ctx context.Context, id string, conv Conversation, user User) (*Run, bool) {
	r, err := e.o.Store.GetRun(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
		e.reply(ctx, conv, user, fmt.Sprintf("There is no run `%s`. `/runbook status` lists the active runs.", id))
		return nil, false
	case err != nil:
		e.reply(ctx, conv, user, "⚠️ Could not read run `"+id+"`: "+userMessage(err))
		return nil, false
	}
	return r, true
}

// cancel stops a run. In-flight reads and waits are interrupted; a write
// or destructive call in flight finishes and its outcome is recorded.
func (e *Engine) cancel(ctx context.Context, runID string, conv Conversation, user User, reason string) {
	now := e.o.Now()
	r, err := e.update(ctx, runID, func(r *Run, b *Batch) error {
		if r.State.Terminal() {
			return fmt.Errorf("run %s already %s", r.ID, r.State)
		}
		if st := r.current(); st != nil && !st.Status.Done() && st.Status != StepExecuting {
			st.Status, st.FinishedAt = StepCancelled, now
		}
		b.Note(JournalEntry{Time: now, Type: JRunCancelled, Actor: user.ID, Message: reason})
		b.AuditLog(AuditEntry{Time: now, Actor: user.ID, Action: "cancel", Target: r.Target, Detail: reason})
		return e.endRun(r, b, RunCancelled, "cancelled by "+user.Display()+optional(reason))
	})
	if err != nil {
		e.reply(ctx, conv, user, "Cannot cancel: "+userMessage(err))
		return
	}
	e.mu.Lock()
	if c := e.cancels[runID]; c != nil {
		c()
	}
	e.mu.Unlock()
	if r.Gate != nil {
		e.updateGateMessage(ctx, r, r.Gate)
	}
	e.announceEnd(ctx, r)
}

// groupCache caches group memberships from the chat adapter.
type groupCache struct {
	resolver GroupResolver
	ttl      time.Duration
	now      func() time.Time
	mu       sync.Mutex
	entries  map[string]groupEntry
}

type groupEntry struct {
	members map[string]bool
	at      time.Time
}

func (c *groupCache) member(ctx context.Context, group string, u User) (bool, error) {
	if c.resolver == nil {
		return false, nil
	}
	c.mu.Lock()
	ent, ok := c.entries[group]
	c.mu.Unlock()
	if !ok || c.now().Sub(ent.at) > c.ttl {
		ids, err := c.resolver.GroupMembers(ctx, group)
		if err != nil {
			return false, err
		}
		ent = groupEntry{members: map[string]bool{}, at: c.now()}
		for _, id := range ids {
			ent.members[id] = true
		}
		c.mu.Lock()
		c.entries[group] = ent
		c.mu.Unlock()
	}
	return ent.members[u.ID] || (u.Name != "" && ent.members[u.Name]), nil
}
