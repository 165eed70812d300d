package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// ballot is one approve, reject or withdrawal as it arrives.
type ballot struct {
	RunID string
	// Ref is the message voted on (zero for a typed command).
	Ref  chatmodel.MessageRef
	Conv chatmodel.Conversation
	User chatmodel.User
	// Approve is true for an approval, false for a rejection.
	Approve bool
	// Removed is a removed reaction: it withdraws the vote that reaction cast.
	Removed bool
	Via     runmodel.VoteVia
	Reason  string
}

// action names what the ballot asks, for refusals.
func (v ballot) action() string {
	if v.Approve {
		return "approval"
	}
	return "rejection"
}

// vote records an approve/reject from a person on the run's open gate.
// An approval counts as policy.Count says — the one rule, asked again
// right before the approved call (approvalsStand); rejecting needs only
// an active person, the requester included. A removed reaction withdraws
// only the vote that reaction cast.
func (e *Engine) vote(ctx context.Context, v ballot) {
	r, ok := e.out.runFor(ctx, v.RunID, v.Conv, v.User)
	if !ok {
		return
	}
	g := r.Gate
	if r.State.Terminal() || g == nil || g.Decision != runmodel.GatePending {
		if !v.Removed {
			e.out.reply(ctx, v.Conv, v.User, fmt.Sprintf("Your %s was not counted: run `%s` has no open approval request (it is %s).", v.action(), r.ID, strings.ReplaceAll(string(r.State), "_", " ")))
		}
		return
	}
	if !v.Ref.IsZero() && !sameMessage(v.Ref, g.Message) {
		if !v.Removed {
			e.out.reply(ctx, v.Conv, v.User, fmt.Sprintf("Your %s was not counted: that approval request was replaced (the plan changed or it was re-opened); vote on the latest request in the thread.", v.action()))
		}
		return
	}
	if v.Removed {
		e.withdrawVote(ctx, r, v)
		return
	}
	why := v.User.NotAPerson()
	var groups []string
	var err error
	if v.Approve {
		var st policy.Standing
		st, err = policy.Count(ctx, g.Policy, r.Requester.ID, policy.Approval{Voter: v.User}, &e.dir)
		why, groups = st.Why.ToVoter(), st.Groups
	}
	if err != nil {
		e.out.reply(ctx, v.Conv, v.User, fmt.Sprintf("⚠️ Your %s was not counted: could not check your approval rights: %s. Try again in a minute.", v.action(), chatmodel.UserMessage(err)))
		return
	}
	now := e.opts.Now()
	verb := map[bool]string{true: "approve", false: "reject"}[v.Approve]
	var decision runmodel.GateDecision
	r, err = e.update(ctx, v.RunID, func(r *runmodel.Run, b *runmodel.Batch) error {
		if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != runmodel.GatePending {
			return errRunOver
		}
		g := r.Gate
		if why != "" {
			// One line per decision: the same refusal again (a reaction,
			// then the button) is audited, not listed twice.
			if !g.Refused(v.User.ID, v.action(), why) {
				g.Refusals = append(g.Refusals, runmodel.Refusal{User: v.User, Reason: why, At: now, Action: v.action()})
				b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JVoteRefused, Actor: v.User.ID, ActorName: v.User.Name, PlanHash: g.PlanHash, Message: verb + " not counted: " + why})
			}
			b.AuditLog(runmodel.AuditEntry{Time: now, Actor: v.User.ID, Action: runmodel.ActionVoteRefused, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: string(v.Via), Detail: verb + ": " + why})
			return nil
		}
		g.CastVote(runmodel.Vote{User: v.User, Approve: v.Approve, Reason: v.Reason, At: now, Via: v.Via, PlanHash: g.PlanHash, Groups: groups})
		b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JVote, Actor: v.User.ID, ActorName: v.User.Name, PlanHash: g.PlanHash, Message: verb + optional(v.Reason)})
		action := runmodel.ActionApprove
		if !v.Approve {
			action = runmodel.ActionReject
		}
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: v.User.ID, Action: action, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: string(v.Via), Detail: v.Reason})
		var err error
		decision, err = e.moves.decide(r, b, now, v.User, v.Reason)
		return err
	})
	if err != nil {
		return
	}
	e.hook("voted:" + v.User.ID)
	e.out.refreshGate(ctx, r, r.Gate)
	if why != "" {
		e.out.reply(ctx, v.Conv, v.User, fmt.Sprintf("🚫 Your %s on `%s` was not counted: %s.", v.action(), r.ID, why))
		return
	}
	e.afterDecision(ctx, r, decision)
}

// withdrawVote takes back the vote a removed reaction cast. A vote cast by
// command or button stays, even when the same person also reacted: only
// the hand that cast a vote withdraws it.
func (e *Engine) withdrawVote(ctx context.Context, r *runmodel.Run, v ballot) {
	if v.Via != runmodel.ViaReaction || v.User.ID == "" {
		return
	}
	gateID := r.Gate.ID
	now := e.opts.Now()
	verb := map[bool]string{true: "approval", false: "rejection"}[v.Approve]
	var decision runmodel.GateDecision
	r, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		g := r.Gate
		if g == nil || g.ID != gateID || g.Decision != runmodel.GatePending {
			return errRunOver
		}
		old, withdrawn, ok := g.Withdraw(v.User.ID, v.Approve, v.Via)
		if !ok {
			return errRunOver
		}
		if !withdrawn {
			// The same vote was also cast by command or button: it stands.
			stands := "still counted (cast by " + string(old.OtherVia(v.Via)) + " too)"
			b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JVote, Actor: v.User.ID, ActorName: v.User.Name, PlanHash: g.PlanHash, Message: "removed " + verb + " reaction; " + verb + " " + stands})
			b.AuditLog(runmodel.AuditEntry{Time: now, Actor: v.User.ID, Action: runmodel.ActionReactionRemoved, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: string(v.Via), Detail: verb + " " + stands})
			return nil
		}
		g.Withdrawals = append(g.Withdrawals, runmodel.Withdrawal{User: old.User, Approve: old.Approve, Via: old.Via, At: now})
		b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JVote, Actor: v.User.ID, ActorName: v.User.Name, PlanHash: g.PlanHash, Message: "withdrew " + verb + " (reaction removed)"})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: v.User.ID, Action: runmodel.ActionVoteWithdrawn, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: string(v.Via), Detail: verb})
		var err error
		decision, err = e.moves.decide(r, b, now, v.User, "")
		return err
	})
	if err != nil {
		return
	}
	e.hook("voted:" + v.User.ID)
	e.out.refreshGate(ctx, r, r.Gate)
	e.afterDecision(ctx, r, decision)
}

// afterDecision continues or announces a run whose gate was just decided.
func (e *Engine) afterDecision(ctx context.Context, r *runmodel.Run, decision runmodel.GateDecision) {
	switch decision {
	case runmodel.GateApproved:
		e.out.refreshRoot(ctx, r)
		e.work.kick(r.ID)
	case runmodel.GateRejected:
		e.out.end(ctx, r)
	}
}

// breakGlass lets a break-glass user approve a gate alone, with a reason.
func (e *Engine) breakGlass(ctx context.Context, runID string, conv chatmodel.Conversation, user chatmodel.User, reason string) {
	r, ok := e.out.runFor(ctx, runID, conv, user)
	if !ok {
		return
	}
	g := r.Gate
	refuse := func(why string) {
		e.out.reply(ctx, conv, user, fmt.Sprintf("⛔ Break-glass approval of `%s` refused. %s", r.ID, why))
	}
	if r.State.Terminal() || g == nil || g.Decision != runmodel.GatePending {
		refuse(fmt.Sprintf("Run `%s` has no open approval request.", r.ID))
		return
	}
	if why := user.NotAPerson(); why != "" {
		refuse(upperFirst(why) + ".")
		return
	}
	if len(g.Policy.BreakGlass) == 0 {
		refuse("Break-glass is not enabled for this gate (set `break_glass` in the approval policy).")
		return
	}
	st, err := policy.Count(ctx, g.Policy, r.Requester.ID, policy.Approval{Voter: user, BreakGlass: true}, &e.dir)
	if err != nil {
		refuse("Could not check your break-glass rights: " + chatmodel.UserMessage(err) + ". Try again in a minute.")
		return
	}
	if !st.Counts() {
		refuse(upperFirst(st.Why.ToVoter()) + ".")
		return
	}
	if len(strings.Fields(reason)) < 2 {
		e.out.reply(ctx, conv, user, fmt.Sprintf("A break-glass approval needs a reason: `/runbook approve %s --break-glass <why this cannot wait>`.", r.ID))
		return
	}
	now := e.opts.Now()
	r, err = e.update(ctx, runID, func(r *runmodel.Run, b *runmodel.Batch) error {
		if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != runmodel.GatePending {
			return errRunOver
		}
		g := r.Gate
		g.CastVote(runmodel.Vote{User: user, Approve: true, Reason: reason, At: now, Via: runmodel.ViaCommand, PlanHash: g.PlanHash, BreakGlass: true})
		if err := g.SetDecision(runmodel.GateApproved); err != nil {
			return err
		}
		r.NoteGateDecided(now)
		b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JGateDecided, Actor: user.ID, ActorName: user.Name, PlanHash: g.PlanHash, Message: "BREAK-GLASS approval by " + user.Display() + ": " + reason})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: user.ID, Action: runmodel.ActionBreakGlass, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Via: string(runmodel.ViaCommand), Detail: reason})
		return r.SetState(runmodel.RunRunning)
	})
	if err != nil {
		return
	}
	e.log.Warn("break-glass approval", "run", runID, "user", user.ID, "reason", reason)
	e.out.refreshGate(ctx, r, r.Gate)
	e.out.thread(ctx, r, chatmodel.RoleBreakGlass, g.StepID, chatmodel.Message{Broadcast: true,
		Text: fmt.Sprintf("🚨 *Break-glass*: %s overrode the approval of `%s` (%s): %s", user.Display(), r.ID, g.Plan.Summary, reason)})
	e.out.refreshRoot(ctx, r)
	e.work.kick(runID)
}

func voters(g *runmodel.Gate) []chatmodel.User {
	out := make([]chatmodel.User, 0, len(g.Votes))
	for _, v := range g.Votes {
		out = append(out, v.User)
	}
	return out
}

func userList(us []chatmodel.User) string {
	if len(us) == 0 {
		return "nobody"
	}
	names := make([]string, 0, len(us))
	for _, u := range us {
		names = append(names, u.Display())
	}
	return strings.Join(names, ", ")
}

// sameMessage reports whether a pressed or reacted-to message is the one
// the engine posted: the same id in the same channel. A message id (a Slack
// ts) is unique only within its channel, so a press naming another channel
// is not a press on this message.
func sameMessage(got, posted chatmodel.MessageRef) bool {
	return got.ID == posted.ID && got.Channel == posted.Channel
}

// manualResponse completes, skips or fails the open manual step.
func (e *Engine) manualResponse(ctx context.Context, runID string, ref chatmodel.MessageRef, conv chatmodel.Conversation, user chatmodel.User, status runmodel.StepStatus, note string) {
	r, ok := e.out.runFor(ctx, runID, conv, user)
	if !ok {
		return
	}
	st := r.Current()
	if r.State != runmodel.RunAwaitingManual || st == nil || st.Status != runmodel.StepManual || (!ref.IsZero() && !sameMessage(ref, st.Message)) {
		e.out.reply(ctx, conv, user, fmt.Sprintf("Your %s was not counted: run `%s` is not waiting for that manual step (it is %s).", manualVerb(status), r.ID, strings.ReplaceAll(string(r.State), "_", " ")))
		return
	}
	stepID := st.ID
	now := e.opts.Now()
	if why := user.NotAPerson(); why != "" {
		e.writes.audit(ctx, runmodel.AuditEntry{Actor: user.ID, Action: runmodel.ActionManualRefused, RunID: r.ID, Step: stepID, Target: r.Target, Detail: manualVerb(status) + ": " + why})
		e.out.reply(ctx, conv, user, fmt.Sprintf("🚫 Your %s on `%s` was not counted: %s.", manualVerb(status), r.ID, why))
		return
	}
	r, err := e.update(ctx, runID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if r.State != runmodel.RunAwaitingManual || st.ID != stepID || st.Status != runmodel.StepManual {
			return errRunOver
		}
		st.Status, st.FinishedAt, st.By, st.Note = status, now, &user, note
		switch status {
		case runmodel.StepSucceeded:
			st.Summary = "done by " + user.Display()
		case runmodel.StepSkipped:
			st.Summary = "skipped by " + user.Display()
		case runmodel.StepFailed:
			st.Error = "marked failed by " + user.Display() + optional(note)
		}
		b.Note(runmodel.JournalEntry{Time: now, Step: stepID, Type: runmodel.JManualDone, Actor: user.ID, ActorName: user.Name, Message: string(status) + optional(note)})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: user.ID, Action: runmodel.ActionManual(status), Step: stepID, Target: r.Target, Detail: note})
		if err := r.SetState(runmodel.RunRunning); err != nil {
			return err
		}
		return e.moves.moveOn(r, b, status != runmodel.StepFailed)
	})
	if err != nil {
		return
	}
	e.out.step(ctx, r, stepID)
	if r.State.Terminal() {
		e.out.end(ctx, r)
		return
	}
	e.work.kick(runID)
}

// manualVerb names a manual answer for refusals.
func manualVerb(status runmodel.StepStatus) string {
	switch status {
	case runmodel.StepSkipped:
		return "skip"
	case runmodel.StepFailed:
		return "\"failed\" answer"
	}
	return "\"done\" answer"
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// cancel stops a run. Anyone who may see the run may cancel it (it is
// never a privilege); only active people can. In-flight reads and waits
// are interrupted; a write or destructive call in flight finishes and its
// outcome is recorded.
func (e *Engine) cancel(ctx context.Context, runID string, conv chatmodel.Conversation, user chatmodel.User, reason string) {
	if why := user.NotAPerson(); why != "" {
		e.out.reply(ctx, conv, user, fmt.Sprintf("Cannot cancel `%s`: %s.", runID, why))
		return
	}
	now := e.opts.Now()
	stopped := "" // the step the cancel stopped: its message must not ask for an answer any more
	r, err := e.update(ctx, runID, func(r *runmodel.Run, b *runmodel.Batch) error {
		if r.State.Terminal() {
			return fmt.Errorf("run %s already %s", r.ID, r.State)
		}
		stopped = ""
		if st := r.Current(); st != nil && !st.Status.Done() && st.Status != runmodel.StepExecuting {
			if err := st.SetStatus(runmodel.StepCancelled); err != nil {
				return err
			}
			st.FinishedAt = now
			stopped = st.ID
		}
		b.Note(runmodel.JournalEntry{Time: now, Type: runmodel.JRunCancelled, Actor: user.ID, ActorName: user.Name, Message: reason})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: user.ID, Action: runmodel.ActionCancel, Target: r.Target, Detail: reason})
		return e.moves.endRun(r, b, runmodel.RunCancelled, "cancelled by "+user.Display()+optional(reason))
	})
	if err != nil {
		e.out.reply(ctx, conv, user, fmt.Sprintf("Cannot cancel `%s`: %s", runID, chatmodel.UserMessage(err)))
		return
	}
	e.work.cancel(runID)
	if r.Gate != nil {
		e.out.refreshGate(ctx, r, r.Gate)
	}
	if st := r.Step(stopped); st != nil && !st.Message.IsZero() {
		e.out.step(ctx, r, stopped)
	}
	e.out.end(ctx, r)
}
