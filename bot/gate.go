package bot

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/runbooks"
)

// syntheticPlan is the plan of a gate that has no destructive operation
// behind it (an explicit approval step, a write call): it binds the
// approval to the step and its resolved arguments.
func syntheticPlan(r *Run, spec *runbooks.Step, op string, args Args, summary string) *Plan {
	attrs := map[string]string{}
	for k, v := range args {
		attrs[k] = fmt.Sprint(v)
	}
	if op == "" {
		op = "approval"
		for k, v := range r.Params {
			attrs["param."+k] = v
		}
	}
	return &Plan{Op: op, Target: r.Target, Summary: summary,
		Items: []PlanItem{{Kind: "step", ID: spec.ID, Attrs: attrs}}}
}

// gatePolicy is the policy for a gate on step spec calling op.
func (e *Engine) gatePolicy(r *Run, spec *runbooks.Step, op string) Policy {
	p := e.policyFor(r.Target, r.Runbook, op)
	if spec.Approval != nil {
		p = p.Tighten(spec.Approval.Approvers, spec.Approval.Required, spec.Approval.Expires)
	}
	if r.PendingApproval != nil {
		pa := r.PendingApproval
		p = p.Tighten(pa.Approvers, pa.Required, time.Duration(pa.Expires))
	}
	return p.withDefaults()
}

// openActionGate resolves the plan of a gated action and asks for approval.
// reason explains a re-opened gate (drift, interruption).
func (e *Engine) openActionGate(ctx context.Context, r *Run, spec *runbooks.Step, op Op, call Call, reason string) {
	var plan *Plan
	if op.Class == ClassDestructive {
		cctx, done := e.callCtx(ctx, r.ID, true)
		p, err := op.Plan(cctx, call)
		done()
		if err != nil {
			if ctx.Err() == nil {
				e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("resolving the plan: %w", err), nil)
			}
			return
		}
		p.Op, p.Target = op.Name, r.Target
		if p.Empty() {
			e.stepDone(ctx, r.ID, spec.ID, StepSucceeded, func(st *StepState, _ *Batch) {
				st.Args = call.Args
				st.Summary = "nothing to do: " + nonEmpty(p.Summary, "the plan is empty")
				if len(p.Notes) > 0 {
					st.Summary += " (" + strings.Join(p.Notes, "; ") + ")"
				}
			})
			return
		}
		plan = &p
	} else {
		plan = syntheticPlan(r, spec, op.Name, call.Args, fmt.Sprintf("call %s %s", op.Name, formatArgs(call.Args)))
	}
	if r.DryRun {
		e.stepDone(ctx, r.ID, spec.ID, StepSkipped, func(st *StepState, _ *Batch) {
			st.Args, st.Plan, st.PlanHash = call.Args, plan, plan.Hash()
			st.Summary = "dry run: would " + plan.Summary
			st.Detail = renderPlanItems(plan, 1000)
		})
		return
	}
	e.openGate(ctx, r.ID, spec, plan, call.Args, e.gatePolicy(r, spec, op.Name), reason)
}

// openGate stores a new gate for the current step and posts it.
func (e *Engine) openGate(ctx context.Context, runID string, spec *runbooks.Step, plan *Plan, args Args, p Policy, reason string) {
	now := e.o.Now()
	r, err := e.update(ctx, runID, func(r *Run, b *Batch) error {
		st := r.current()
		if r.State.Terminal() || st == nil || st.ID != spec.ID {
			return errRunOver
		}
		r.GateSeq++
		hash := plan.Hash()
		r.Gate = &Gate{
			ID: fmt.Sprintf("%s/%s/%d", r.ID, spec.ID, r.GateSeq), StepID: spec.ID, Plan: plan, PlanHash: hash,
			Policy: p, RequestedAt: now, ExpiresAt: now.Add(time.Duration(p.Expires)), Reason: reason,
		}
		r.PendingApproval = nil
		if st.StartedAt.IsZero() {
			st.StartedAt = now
		}
		st.Status, st.Plan, st.PlanHash, st.Args = StepGated, plan, hash, args
		b.Note(JournalEntry{Time: now, Step: spec.ID, Type: JGateOpened, PlanHash: hash, Message: plan.Summary + optional(reason)})
		b.AuditLog(AuditEntry{Time: now, Actor: e.o.BotName, Action: "approval_requested", Step: spec.ID, Target: r.Target, PlanHash: hash, Detail: plan.Summary + optional(reason)})
		if p.SelfApproval {
			b.AuditLog(AuditEntry{Time: now, Actor: e.o.BotName, Action: "self_approval_allowed", Step: spec.ID, Target: r.Target, PlanHash: hash,
				Detail: "WARNING: the policy for this gate lets the requester approve their own change"})
		}
		return r.setState(RunAwaitingApproval)
	})
	if err != nil {
		return
	}
	e.postGate(ctx, r)
	e.refreshRoot(ctx, r)
}

// startApproval handles an explicit approval step. When the next step calls
// a write or destructive operation, the approval is combined with that
// step's gate so it binds to the resolved plan.
func (e *Engine) startApproval(ctx context.Context, r *Run, spec *runbooks.Step, env runbooks.Env) {
	if next := r.Cursor + 1; next < len(r.Spec.Steps) {
		ns := r.Spec.Steps[next]
		if op, ok := e.o.Ops.Get(ns.Op); ok && ns.Kind == runbooks.KindAction && op.Class != ClassRead && spec.Goto == "" {
			p := Policy{}
			if spec.Approval != nil {
				p = Policy{Approvers: spec.Approval.Approvers, Required: spec.Approval.Required, Expires: Duration(spec.Approval.Expires)}
			}
			e.stepDone(ctx, r.ID, spec.ID, StepSucceeded, func(st *StepState, _ *Batch) {
				st.Summary = fmt.Sprintf("combined with the approval gate of step %q (bound to its exact plan)", ns.ID)
			})
			_, _ = e.update(ctx, r.ID, func(r *Run, b *Batch) error { r.PendingApproval = &p; return nil })
			return
		}
	}
	summary := spec.Title
	if spec.Text != "" {
		if t, err := runbooks.Render(spec.Text, env); err == nil {
			summary = t
		}
	}
	plan := syntheticPlan(r, spec, "", nil, nonEmpty(summary, "continue the runbook"))
	if r.DryRun {
		e.stepDone(ctx, r.ID, spec.ID, StepSkipped, func(st *StepState, _ *Batch) { st.Summary = "dry run: approval not requested" })
		return
	}
	e.openGate(ctx, r.ID, spec, plan, nil, e.gatePolicy(r, spec, ""), "")
}

// afterGate runs once a gate is approved: re-resolve the plan, and execute
// only if it is unchanged; otherwise ask again saying what changed.
func (e *Engine) afterGate(ctx context.Context, r *Run, spec *runbooks.Step) {
	g, st := r.Gate, r.current()
	if g == nil || g.StepID != spec.ID || g.Decision != GateApproved {
		// Inconsistent (should not happen): wait for a decision.
		_, _ = e.update(ctx, r.ID, func(r *Run, b *Batch) error { return r.setState(RunAwaitingApproval) })
		return
	}
	approvers := make([]User, 0, len(g.Votes))
	for _, v := range g.Votes {
		approvers = append(approvers, v.User)
	}
	if spec.Kind == runbooks.KindApproval {
		e.stepDone(ctx, r.ID, spec.ID, StepSucceeded, func(st *StepState, _ *Batch) {
			st.ApprovedBy, st.Summary = approvers, "approved by "+userList(approvers)
		})
		return
	}
	op, ok := e.o.Ops.Get(spec.Op)
	if !ok {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("operation %s is not available", spec.Op), nil)
		return
	}
	call := Call{Target: r.Target, Args: st.Args, RunID: r.ID, StepID: spec.ID}
	if op.Class != ClassDestructive {
		e.runWrite(ctx, r, spec, op, call, approvers)
		return
	}
	cctx, done := e.callCtx(ctx, r.ID, true)
	plan, err := op.Plan(cctx, call)
	done()
	if err != nil {
		if ctx.Err() == nil {
			e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("re-resolving the plan before executing: %w", err), nil)
		}
		return
	}
	plan.Op, plan.Target = op.Name, r.Target
	if plan.Hash() != g.PlanHash {
		if plan.Empty() {
			e.stepDone(ctx, r.ID, spec.ID, StepSucceeded, func(st *StepState, _ *Batch) {
				st.Summary = "nothing left to do: the objects of the approved plan changed state before execution"
			})
			return
		}
		old := g.Plan
		_, err := e.update(ctx, r.ID, func(r *Run, b *Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID {
				return errRunOver
			}
			r.Gate.Decision = GateVoid
			b.Note(JournalEntry{Time: e.o.Now(), Step: spec.ID, Type: JGateDecided, PlanHash: g.PlanHash, Message: "void: the plan changed before execution (" + PlanDiff(old, &plan) + ")"})
			b.AuditLog(AuditEntry{Time: e.o.Now(), Actor: e.o.BotName, Action: "approval_void_drift", Step: spec.ID, Target: r.Target, PlanHash: g.PlanHash, Detail: PlanDiff(old, &plan)})
			return nil
		})
		if err != nil {
			return
		}
		if r2, err := e.o.Store.GetRun(ctx, r.ID); err == nil {
			e.updateGateMessage(ctx, r2, r2.Gate)
		}
		e.openGate(ctx, r.ID, spec, &plan, st.Args, g.Policy, "the plan changed since it was approved: "+PlanDiff(old, &plan))
		return
	}
	e.execute(ctx, r.ID, spec, op, call, plan, approvers)
}

// execute records intent, applies the exact plan, and records the outcome.
func (e *Engine) execute(ctx context.Context, runID string, spec *runbooks.Step, op Op, call Call, plan Plan, approvers []User) {
	hash := plan.Hash()
	_, err := e.update(ctx, runID, func(r *Run, b *Batch) error {
		st := r.current()
		if r.State.Terminal() || st == nil || st.ID != spec.ID || st.Status != StepGated {
			return errRunOver
		}
		st.Status, st.Plan, st.PlanHash, st.ApprovedBy = StepExecuting, &plan, hash, approvers
		r.Gate = nil
		ids := make([]string, 0, len(plan.Items))
		for _, it := range plan.Items {
			ids = append(ids, it.Kind+":"+it.ID)
		}
		b.Note(JournalEntry{Time: e.o.Now(), Step: st.ID, Type: JIntent, PlanHash: hash, Message: plan.Summary,
			Data: map[string]any{"op": op.Name, "items": ids, "approved_by": userList(approvers)}})
		b.AuditLog(AuditEntry{Time: e.o.Now(), Actor: r.Requester.ID, Action: "execute", Step: st.ID, Target: r.Target, PlanHash: hash,
			Detail: op.Name + ": " + plan.Summary + " (approved by " + userList(approvers) + ")"})
		return nil
	})
	if err != nil {
		return
	}
	if r, err := e.o.Store.GetRun(ctx, runID); err == nil {
		e.postStep(ctx, r, spec.ID)
	}
	e.hook("before-apply:" + spec.ID)
	// A destructive call is never interrupted half-way by a cancel.
	cctx, done := e.callCtx(context.WithoutCancel(ctx), runID, false)
	res, err := op.Apply(cctx, call, plan)
	done()
	e.hook("after-apply:" + spec.ID)
	e.recordOutcome(ctx, runID, spec.ID, op, hash, res, err)
}

// recover prepares a run found mid-step after a restart: a read in flight
// is redone (it is safe), a write/destructive call with intent but no
// outcome is reconciled rather than repeated.
func (e *Engine) recover(ctx context.Context, id string) error {
	r, err := e.o.Store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	st := r.current()
	if st == nil || st.Status != StepExecuting {
		return nil
	}
	e.reconcile(ctx, r, &r.Spec.Steps[r.Cursor])
	return nil
}

// reconcile handles a step found with intent and no outcome.
func (e *Engine) reconcile(ctx context.Context, r *Run, spec *runbooks.Step) {
	st := r.current()
	op, ok := e.o.Ops.Get(spec.Op)
	if !ok {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("interrupted, and operation %s is not available to check it", spec.Op), nil)
		return
	}
	call := Call{Target: r.Target, Args: st.Args, RunID: r.ID, StepID: spec.ID}
	reason := "groundcrew stopped while this step was executing; it was not repeated automatically"
	if op.Class == ClassDestructive {
		cctx, done := e.callCtx(ctx, r.ID, true)
		plan, err := op.Plan(cctx, call)
		done()
		if err != nil {
			e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("interrupted, and re-checking its plan failed: %w", err), nil)
			return
		}
		plan.Op, plan.Target = op.Name, r.Target
		if plan.Empty() {
			e.stepDone(ctx, r.ID, spec.ID, StepSucceeded, func(st *StepState, b *Batch) {
				st.Summary = "interrupted mid-call; re-checked: the change is in effect (nothing left to do)"
				b.Note(JournalEntry{Time: e.o.Now(), Step: spec.ID, Type: JReconciled, PlanHash: st.PlanHash, Message: "effect visible; marked done"})
			})
			return
		}
		_, _ = e.update(ctx, r.ID, func(r *Run, b *Batch) error {
			st := r.current()
			st.Status = StepGated
			b.Note(JournalEntry{Time: e.o.Now(), Step: spec.ID, Type: JReconciled, PlanHash: plan.Hash(), Message: "effect not (fully) visible; handed to a person"})
			return nil
		})
		e.openGate(ctx, r.ID, spec, &plan, st.Args, e.gatePolicy(r, spec, op.Name), reason+"; re-checked, this is what is left to do")
		return
	}
	plan := syntheticPlan(r, spec, op.Name, st.Args, fmt.Sprintf("retry %s %s", op.Name, formatArgs(st.Args)))
	_, _ = e.update(ctx, r.ID, func(r *Run, b *Batch) error {
		r.current().Status = StepGated
		b.Note(JournalEntry{Time: e.o.Now(), Step: spec.ID, Type: JReconciled, Message: "write call interrupted; handed to a person"})
		return nil
	})
	e.openGate(ctx, r.ID, spec, plan, st.Args, e.gatePolicy(r, spec, op.Name), reason+"; approve to retry it, reject to stop the run")
}

// checkGateTimers posts the expiry reminder and expires gates.
func (e *Engine) checkGateTimers(ctx context.Context, r *Run, now time.Time) {
	g := r.Gate
	if g == nil || g.Decision != GatePending || g.ExpiresAt.IsZero() {
		return
	}
	if !now.Before(g.ExpiresAt) {
		r2, err := e.update(ctx, r.ID, func(r *Run, b *Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != GatePending {
				return errRunOver
			}
			r.Gate.Decision = GateExpired
			st := r.current()
			st.Status, st.FinishedAt = StepFailed, now
			st.Error = fmt.Sprintf("approval expired after %s with %d of %d approvals", humanDuration(time.Duration(g.Policy.Expires)), len(g.Votes), g.Policy.withDefaults().Required)
			b.Note(JournalEntry{Time: now, Step: g.StepID, Type: JGateDecided, PlanHash: g.PlanHash, Message: "expired"})
			b.AuditLog(AuditEntry{Time: now, Actor: e.o.BotName, Action: "approval_expired", Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash})
			return e.endRun(r, b, RunFailed, st.Error)
		})
		if err != nil {
			return
		}
		e.updateGateMessage(ctx, r2, r2.Gate)
		e.announceEnd(ctx, r2)
		return
	}
	// Keep "expires in …" roughly right without flooding the chat's edit limits.
	e.mu.Lock()
	last, seen := e.gateRefresh[g.ID]
	due := !seen || now.Sub(last) >= 5*time.Minute
	if due {
		e.gateRefresh[g.ID] = now
	}
	e.mu.Unlock()
	if due && seen {
		e.updateGateMessage(ctx, r, g)
	}
	remind := time.Duration(g.Policy.Expires) / 6
	if remind > 5*time.Minute {
		remind = 5 * time.Minute
	}
	if !g.Reminded && !now.Before(g.ExpiresAt.Add(-remind)) {
		r2, err := e.update(ctx, r.ID, func(r *Run, b *Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID {
				return errRunOver
			}
			r.Gate.Reminded = true
			return nil
		})
		if err != nil {
			return
		}
		e.postThread(ctx, r2, "reminder", g.StepID, Message{Broadcast: true,
			Text: fmt.Sprintf("⏰ Approval for `%s` (%s) expires in %s — %s. React ✅ on the request or `/runbook approve %s`.",
				r2.ID, g.Plan.Summary, humanDuration(g.ExpiresAt.Sub(now)), g.Policy.Describe(r2.Requester), r2.ID)})
		e.updateGateMessage(ctx, r2, r2.Gate)
	}
}

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

// PlanDiff says what changed between two plans, for a drift re-approval.
func PlanDiff(old, cur *Plan) string {
	key := func(it PlanItem) string { return it.Kind + " " + it.ID }
	was := map[string]PlanItem{}
	if old != nil {
		for _, it := range old.Items {
			was[key(it)] = it
		}
	}
	var added, removed, changed []string
	now := map[string]bool{}
	for _, it := range cur.Items {
		k := key(it)
		now[k] = true
		prev, ok := was[k]
		switch {
		case !ok:
			added = append(added, "`"+it.ID+"`")
		case (Plan{Items: []PlanItem{prev}}).Hash() != (Plan{Items: []PlanItem{it}}).Hash():
			changed = append(changed, "`"+it.ID+"` "+attrDiff(prev.Attrs, it.Attrs))
		}
	}
	for k, it := range was {
		if !now[k] {
			removed = append(removed, "`"+it.ID+"`")
		}
	}
	sort.Strings(removed)
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "added "+capList(added, 10))
	}
	if len(removed) > 0 {
		parts = append(parts, "no longer included "+capList(removed, 10))
	}
	if len(changed) > 0 {
		parts = append(parts, "changed "+capList(changed, 10))
	}
	if len(parts) == 0 {
		return "the operation or target changed"
	}
	return strings.Join(parts, "; ")
}

func attrDiff(a, b map[string]string) string {
	var out []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		if a[k] != b[k] {
			out = append(out, fmt.Sprintf("%s %s→%s", k, nonEmpty(a[k], "∅"), nonEmpty(b[k], "∅")))
		}
	}
	return "(" + strings.Join(out, ", ") + ")"
}

func capList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
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
