package bot

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// syntheticPlan is the plan of a gate that has no destructive operation
// behind it (an explicit approval step, a write call): it binds the
// approval to the step and its resolved arguments.
func syntheticPlan(r *runmodel.Run, spec *runbookmodel.Step, op string, args opmodel.Args, summary string) *opmodel.Plan {
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
	return &opmodel.Plan{Op: op, Target: r.Target, Summary: summary,
		Items: []opmodel.PlanItem{{Kind: "step", ID: spec.ID, Attrs: attrs}}}
}

// gatePolicy is the policy for a gate on step spec calling op ("" for an
// approval step) whose change touches the things of teams (and, when
// teamless, things of no team): the configured levels, the teams' own
// (policy.Config.ResolveTeams), then the runbook's settings and those of
// an explicit approval step before it (pending), which only narrow it.
func (e *Engine) gatePolicy(r *runmodel.Run, spec *runbookmodel.Step, op string, teams []string, teamless bool, pending *runmodel.Policy) runmodel.Policy {
	p := e.set.forRun(r.ID).ResolveTeams(r.Target, r.Runbook, op, teams, teamless)
	if o, ok := e.opts.Ops.Get(op); ok {
		p.Roles = e.auth.roleCheck(r.Target, o, teams, teamless)
	}
	if spec.Approval != nil {
		p = p.Narrow(spec.Approval.Approvers, spec.Approval.Required, spec.Approval.Expires)
	}
	if pending != nil {
		p = p.Narrow(pending.Approvers, pending.Required, time.Duration(pending.Expires))
	}
	return p.WithDefaults()
}

// openActionGate resolves the plan of a gated action and asks for approval.
// reason explains a re-opened gate (drift, interruption).
func (e *Engine) openActionGate(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, op opmodel.Op, call opmodel.Call, reason string) {
	var plan *opmodel.Plan
	if op.Class == opmodel.ClassDestructive {
		cctx, done := e.work.callCtx(ctx, r.ID, true)
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
			// Nothing to do is a result too (nothing_to_do: true), so the
			// runbook can branch on it.
			e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSucceeded, func(st *runmodel.StepState, _ *runmodel.Batch) {
				st.Args = call.Args
				setResult(st, opmodel.NothingToDo(p, nil))
			})
			return
		}
		plan = &p
	} else {
		plan = syntheticPlan(r, spec, op.Name, call.Args, fmt.Sprintf("call %s %s", op.Name, formatArgs(call.Args)))
	}
	teams, err := callTeams(ctx, op, call, plan)
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, err, nil)
		return
	}
	teamless := len(teams) == 0
	if op.Class == opmodel.ClassDestructive {
		teamless = plan.Teamless()
	}
	refused, err := e.auth.mayChange(ctx, r, op, teams, teamless)
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("checking who may change the things of %s: %w", teamsText(teams), err), nil)
		return
	}
	if r.DryRun {
		e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) {
			st.Args, st.Plan, st.PlanHash, st.Teams = call.Args, plan, plan.Hash(), teams
			st.Summary = "dry run: would " + plan.Summary
			if refused != "" {
				st.Summary += " — not for " + r.Requester.Display() + ": " + refused
			}
			st.Detail = renderPlanItems(plan, 1000)
		})
		return
	}
	if refused != "" {
		e.auth.refuse(ctx, r, spec.ID, teams, refused)
		return
	}
	e.openGate(ctx, r.ID, spec, plan, call.Args, teams, e.gatePolicy(r, spec, op.Name, teams, teamless, r.PendingApproval), r.PendingApproval, reason)
}

// openGate stores a new gate for the current step and posts it.
func (e *Engine) openGate(ctx context.Context, runID string, spec *runbookmodel.Step, plan *opmodel.Plan, args opmodel.Args, teams []string, p runmodel.Policy, pending *runmodel.Policy, reason string) {
	now := e.opts.Now()
	r, err := e.update(ctx, runID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if r.State.Terminal() || st == nil || st.ID != spec.ID {
			return errRunOver
		}
		r.GateSeq++
		hash := plan.Hash()
		if err := r.OpenGate(&runmodel.Gate{
			ID: fmt.Sprintf("%s/%s/%d", r.ID, spec.ID, r.GateSeq), StepID: spec.ID, Plan: plan, PlanHash: hash, Teams: teams,
			Policy: p, StepApproval: pending, RequestedAt: now, ExpiresAt: now.Add(time.Duration(p.Expires)), Reason: reason,
		}); err != nil {
			return err
		}
		r.PendingApproval = nil
		if st.StartedAt.IsZero() {
			st.StartedAt = now
		}
		if err := st.SetStatus(runmodel.StepGated); err != nil {
			return err
		}
		st.Plan, st.PlanHash, st.Args, st.Teams = plan, hash, args, teams
		b.Note(runmodel.JournalEntry{Time: now, Step: spec.ID, Type: runmodel.JGateOpened, PlanHash: hash, Message: plan.Summary + optional(reason)})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: e.opts.BotName, Action: runmodel.ActionApprovalRequested, Step: spec.ID, Target: r.Target, Teams: teams, PlanHash: hash, Detail: plan.Summary + optional(reason)})
		if p.SelfApproval {
			b.AuditLog(runmodel.AuditEntry{Time: now, Actor: e.opts.BotName, Action: runmodel.ActionSelfApprovalAllowed, Step: spec.ID, Target: r.Target, Teams: teams, PlanHash: hash,
				Detail: "WARNING: the policy for this gate lets the requester approve their own change"})
		}
		return r.SetState(runmodel.RunAwaitingApproval)
	})
	if err != nil {
		return
	}
	e.out.gate(ctx, r)
	e.out.refreshRoot(ctx, r)
}

// startApproval handles an explicit approval step. When the next step calls
// a write or destructive operation, the approval is combined with that
// step's gate so it binds to the resolved plan.
func (e *Engine) startApproval(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, env runbooks.Env) {
	if next := r.Cursor + 1; next < len(r.Spec.Steps) {
		ns := r.Spec.Steps[next]
		if op, ok := e.opts.Ops.Get(ns.Op); ok && ns.Kind == runbookmodel.KindAction && op.Class != opmodel.ClassRead && spec.Goto == "" {
			p := runmodel.Policy{}
			if spec.Approval != nil {
				p = runmodel.Policy{Approvers: spec.Approval.Approvers, Required: spec.Approval.Required, Expires: runmodel.Duration(spec.Approval.Expires)}
			}
			e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSucceeded, func(st *runmodel.StepState, _ *runmodel.Batch) {
				st.Summary = fmt.Sprintf("combined with the approval gate of step %q (bound to its exact plan)", ns.ID)
			})
			_, _ = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error { r.PendingApproval = &p; return nil })
			return
		}
	}
	summary := runbooks.RenderTitle(spec.Title, env)
	if spec.Text != "" {
		if t, err := runbooks.Render(spec.Text, env); err == nil {
			summary = t
		}
	}
	plan := syntheticPlan(r, spec, "", nil, nonEmpty(summary, "continue the runbook"))
	if r.DryRun {
		e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) { st.Summary = "dry run: approval not requested" })
		return
	}
	teams := paramTeams(r.Spec, r.Params)
	e.openGate(ctx, r.ID, spec, plan, nil, teams, e.gatePolicy(r, spec, "", teams, len(teams) == 0, r.PendingApproval), r.PendingApproval, "")
}

// afterGate runs once a gate is approved: re-resolve the plan, and execute
// only if it is unchanged (otherwise ask again saying what changed) and
// the approvals still count (approvalsStand; otherwise ask again saying
// whose approval no longer counts).
func (e *Engine) afterGate(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step) {
	g, st := r.Gate, r.Current()
	if g == nil || g.StepID != spec.ID || g.Decision != runmodel.GateApproved {
		// Inconsistent (should not happen): wait for a decision.
		_, _ = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error { return r.SetState(runmodel.RunAwaitingApproval) })
		return
	}
	if spec.Kind == runbookmodel.KindApproval {
		approvers, ok := e.approvalsStand(ctx, r, spec)
		if !ok {
			return
		}
		e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSucceeded, func(st *runmodel.StepState, _ *runmodel.Batch) {
			st.ApprovedBy, st.Summary = approvers, "approved by "+userList(approvers)
		})
		return
	}
	op, ok := e.opts.Ops.Get(spec.Op)
	if !ok {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("operation %s is not available", spec.Op), nil)
		return
	}
	call := runCall(r, spec.ID, st.Args)
	if op.Class != opmodel.ClassDestructive {
		approvers, ok := e.approvalsStand(ctx, r, spec)
		if !ok {
			return
		}
		e.runWrite(ctx, r, spec, op, call, approvers)
		return
	}
	cctx, done := e.work.callCtx(ctx, r.ID, true)
	// The re-check says what it finds of each approved object it no
	// longer includes (Plan.Found).
	recheck := call // the run's call, scoped to its channel's teams
	recheck.Approved = g.Plan
	plan, err := op.Plan(cctx, recheck)
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
			// Every object of the approved plan moved first (Concourse
			// removed the stalled worker, the builds finished): no call is
			// made. The step says, per object, what the re-check found;
			// its result is a no-op the runbook can branch on
			// (nothing_to_do); the journal (listed under "No change
			// needed") and the audit log say the same.
			res := opmodel.NothingToDo(plan, g.Plan)
			e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSucceeded, func(st *runmodel.StepState, b *runmodel.Batch) {
				setResult(st, res)
				st.ApprovedBy = voters(g)
				now := e.opts.Now()
				b.Note(runmodel.JournalEntry{Time: now, Step: spec.ID, Type: runmodel.JOutcome, Outcome: runmodel.CallNotMade, PlanHash: g.PlanHash, Message: res.Summary})
				b.AuditLog(runmodel.AuditEntry{Time: now, Actor: e.opts.BotName, Action: runmodel.ActionNothingToDo, Step: spec.ID, Target: r.Target, Teams: g.Teams, PlanHash: g.PlanHash,
					Detail: op.Name + ": not called, the objects of the approved plan moved first: " + strings.Join(foundLines(res), "; ")})
			})
			return
		}
		old := g.Plan
		_, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID {
				return errRunOver
			}
			if err := r.Gate.SetDecision(runmodel.GateVoid); err != nil {
				return err
			}
			b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: spec.ID, Type: runmodel.JGateDecided, PlanHash: g.PlanHash, Message: "void: the plan changed before execution (" + opmodel.PlanDiff(old, &plan) + ")"})
			b.AuditLog(runmodel.AuditEntry{Time: e.opts.Now(), Actor: e.opts.BotName, Action: runmodel.ActionApprovalVoidDrift, Step: spec.ID, Target: r.Target, Teams: g.Teams, PlanHash: g.PlanHash, Detail: opmodel.PlanDiff(old, &plan)})
			return nil
		})
		if err != nil {
			return
		}
		if r2, err := e.opts.Store.GetRun(ctx, r.ID); err == nil {
			e.out.refreshGate(ctx, r2, r2.Gate)
		}
		// A plan grown to things the requester may not change is not
		// asked again: the step fails, saying why.
		if refused, err := e.auth.mayChange(ctx, r, op, plan.Teams(), plan.Teamless()); err != nil || refused != "" {
			if err != nil {
				e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("checking who may change the things of the changed plan: %w; nothing was changed", err), nil)
				return
			}
			e.auth.refuse(ctx, r, spec.ID, plan.Teams(), refused)
			return
		}
		// The policy follows the plan's teams: a team added asks its own.
		e.openGate(ctx, r.ID, spec, &plan, st.Args, plan.Teams(), e.gatePolicy(r, spec, op.Name, plan.Teams(), plan.Teamless(), g.StepApproval), g.StepApproval,
			"the plan changed since it was approved: "+opmodel.PlanDiff(old, &plan))
		return
	}
	// Right before the destructive call: every counted vote is checked
	// again, as the platform says now, and whether the requester may
	// still change those teams' things.
	approvers, ok := e.approvalsStand(ctx, r, spec)
	if !ok {
		return
	}
	refused, err := e.auth.mayChange(chatmodel.Fresh(ctx), r, op, plan.Teams(), plan.Teamless())
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("checking again who may change the things of %s before executing: %w; nothing was changed", teamsText(plan.Teams()), err), nil)
		return
	}
	if refused != "" {
		e.auth.refuse(ctx, r, spec.ID, plan.Teams(), refused)
		return
	}
	e.execute(ctx, r.ID, spec, op, call, plan, approvers)
}

// foundLines are the reasons of a no-op result's items: what the re-check
// found of each object.
func foundLines(res opmodel.Result) []string {
	out := make([]string, 0, len(res.Items))
	for _, it := range res.Items {
		out = append(out, it.Reason)
	}
	return out
}

// execute records intent, applies the exact plan, and records the outcome.
func (e *Engine) execute(ctx context.Context, runID string, spec *runbookmodel.Step, op opmodel.Op, call opmodel.Call, plan opmodel.Plan, approvers []chatmodel.User) {
	hash := plan.Hash()
	_, err := e.update(ctx, runID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if r.State.Terminal() || st == nil || st.ID != spec.ID || st.Status != runmodel.StepGated {
			return errRunOver
		}
		if err := st.SetStatus(runmodel.StepExecuting); err != nil {
			return err
		}
		st.Plan, st.PlanHash, st.ApprovedBy = &plan, hash, approvers
		if err := r.CloseGate(); err != nil {
			return err
		}
		ids := make([]string, 0, len(plan.Items))
		for _, it := range plan.Items {
			ids = append(ids, it.Kind+":"+it.ID)
		}
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: st.ID, Type: runmodel.JIntent, PlanHash: hash, Message: plan.Summary,
			Intent: &runmodel.IntentData{Op: op.Name, Items: ids, ApprovedBy: userList(approvers)}})
		st.Teams = plan.Teams()
		b.AuditLog(runmodel.AuditEntry{Time: e.opts.Now(), Actor: r.Requester.ID, Action: runmodel.ActionExecute, Step: st.ID, Target: r.Target, Teams: st.Teams, PlanHash: hash,
			Detail: op.Name + ": " + plan.Summary + " (approved by " + userList(approvers) + ")"})
		return nil
	})
	if err != nil {
		return
	}
	if r, err := e.opts.Store.GetRun(ctx, runID); err == nil {
		e.out.step(ctx, r, spec.ID)
	}
	e.hook("before-apply:" + spec.ID)
	// A destructive call is never interrupted half-way by a cancel; it is
	// when this process may no longer hold the leader lease (fence).
	cctx, done := e.work.callCtx(context.WithoutCancel(ctx), runID, false)
	cctx, release, err := e.fence.hold(ctx, cctx, runID, spec.ID, op.Name)
	if err != nil {
		done()
		return // nothing sent; the step keeps its intent for the leader to reconcile
	}
	defer release()
	var stop func()
	call.Progress, stop = e.out.progress(ctx, runID, spec.ID)
	res, err := op.Apply(cctx, call, plan)
	stop()
	done()
	e.hook("after-apply:" + spec.ID)
	e.recordOutcome(ctx, runID, spec.ID, op, hash, res, err)
}

// recover prepares a run found mid-step after a restart: a read in flight
// is redone (it is safe), a write/destructive call with intent but no
// outcome is reconciled rather than repeated.
func (e *Engine) recover(ctx context.Context, id string) error {
	r, err := e.opts.Store.GetRun(ctx, id)
	if err != nil {
		return err
	}
	st := r.Current()
	if st == nil || st.Status != runmodel.StepExecuting {
		return nil
	}
	e.reconcile(ctx, r, &r.Spec.Steps[r.Cursor])
	return nil
}

// reconcile handles a step found with intent and no outcome.
func (e *Engine) reconcile(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step) {
	st := r.Current()
	op, ok := e.opts.Ops.Get(spec.Op)
	if !ok {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("interrupted, and operation %s is not available to check it", spec.Op), nil)
		return
	}
	call := runCall(r, spec.ID, st.Args)
	reason := "groundcrew stopped while this step was executing; it was not repeated automatically"
	if op.Class == opmodel.ClassDestructive {
		cctx, done := e.work.callCtx(ctx, r.ID, true)
		plan, err := op.Plan(cctx, call)
		done()
		if err != nil {
			e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("interrupted, and re-checking its plan failed: %w", err), nil)
			return
		}
		plan.Op, plan.Target = op.Name, r.Target
		if plan.Empty() {
			e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSucceeded, func(st *runmodel.StepState, b *runmodel.Batch) {
				st.Summary = "interrupted mid-call; re-checked: the change is in effect (nothing left to do)"
				b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: spec.ID, Type: runmodel.JReconciled, PlanHash: st.PlanHash, Message: "effect visible; marked done"})
			})
			return
		}
		_, _ = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
			st := r.Current()
			if err := st.SetStatus(runmodel.StepGated); err != nil {
				return err
			}
			b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: spec.ID, Type: runmodel.JReconciled, PlanHash: plan.Hash(), Message: "effect not (fully) visible; handed to a person"})
			return nil
		})
		e.openGate(ctx, r.ID, spec, &plan, st.Args, plan.Teams(), e.gatePolicy(r, spec, op.Name, plan.Teams(), plan.Teamless(), nil), nil, reason+"; re-checked, this is what is left to do")
		return
	}
	plan := syntheticPlan(r, spec, op.Name, st.Args, fmt.Sprintf("retry %s %s", op.Name, formatArgs(st.Args)))
	_, _ = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		if err := r.Current().SetStatus(runmodel.StepGated); err != nil {
			return err
		}
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: spec.ID, Type: runmodel.JReconciled, Message: "write call interrupted; handed to a person"})
		return nil
	})
	e.openGate(ctx, r.ID, spec, plan, st.Args, st.Teams, e.gatePolicy(r, spec, op.Name, st.Teams, len(st.Teams) == 0, nil), nil, reason+"; approve to retry it, reject to stop the run")
}

// checkGateTimers posts the expiry reminder and expires gates.
func (e *Engine) checkGateTimers(ctx context.Context, r *runmodel.Run, now time.Time) {
	g := r.Gate
	if g == nil || g.Decision != runmodel.GatePending || g.ExpiresAt.IsZero() {
		return
	}
	if !now.Before(g.ExpiresAt) {
		// Before the request expires, its plan is resolved again: when the
		// world made it moot while nobody answered (Concourse removed the
		// stalled worker by itself), the step says so and the run goes on,
		// rather than failing for want of an approval nothing needed.
		if spec := r.Spec.Steps[r.Cursor]; r.Cursor < len(r.Spec.Steps) && spec.Kind == runbookmodel.KindAction && g.Plan != nil {
			if op, ok := e.opts.Ops.Get(spec.Op); ok && op.Class == opmodel.ClassDestructive {
				cctx, done := e.work.callCtx(ctx, r.ID, true)
				plan, err := op.Plan(cctx, opmodel.Call{Target: r.Target, Args: r.Current().Args, RunID: r.ID, StepID: spec.ID, Approved: g.Plan})
				done()
				if err == nil && plan.Empty() {
					res := opmodel.NothingToDo(plan, g.Plan)
					r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
						if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != runmodel.GatePending {
							return errRunOver
						}
						if err := r.Gate.SetDecision(runmodel.GateVoid); err != nil {
							return err
						}
						r.NoteGateDecided(now)
						st := r.Current()
						st.Status, st.FinishedAt = runmodel.StepSucceeded, now
						setResult(st, res)
						b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JGateDecided, PlanHash: g.PlanHash,
							Message: "void: nothing left to do when the request expired (" + strings.Join(foundLines(res), "; ") + ")"})
						b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JOutcome, Outcome: runmodel.CallNotMade, PlanHash: g.PlanHash, Message: res.Summary})
						b.Note(runmodel.JournalEntry{Time: now, Step: st.ID, Type: runmodel.JStepDone, Message: st.Summary})
						b.AuditLog(runmodel.AuditEntry{Time: now, Actor: e.opts.BotName, Action: runmodel.ActionNothingToDo, Step: g.StepID, Target: r.Target, Teams: g.Teams, PlanHash: g.PlanHash,
							Detail: op.Name + ": not called, the objects of the plan moved first, while the request waited: " + strings.Join(foundLines(res), "; ")})
						return e.moves.moveOn(r, b, true)
					})
					if err != nil {
						return
					}
					e.out.refreshGate(ctx, r2, r2.Gate)
					e.out.step(ctx, r2, g.StepID)
					if r2.State.Terminal() {
						e.out.end(ctx, r2)
					} else {
						e.work.kick(r2.ID)
					}
					return
				}
			}
		}
		r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID || r.Gate.Decision != runmodel.GatePending {
				return errRunOver
			}
			if err := r.Gate.SetDecision(runmodel.GateExpired); err != nil {
				return err
			}
			r.NoteGateDecided(now)
			st := r.Current()
			if err := st.SetStatus(runmodel.StepFailed); err != nil {
				return err
			}
			st.FinishedAt = now
			st.Error = fmt.Sprintf("approval expired after %s with %d of %d approvals", human.Duration(time.Duration(g.Policy.Expires)), len(g.Votes), g.Policy.WithDefaults().Required)
			b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JGateDecided, PlanHash: g.PlanHash, Message: "expired"})
			b.AuditLog(runmodel.AuditEntry{Time: now, Actor: e.opts.BotName, Action: runmodel.ActionApprovalExpired, Step: g.StepID, Target: r.Target, Teams: g.Teams, PlanHash: g.PlanHash})
			return e.moves.endRun(r, b, runmodel.RunFailed, st.Error)
		})
		if err != nil {
			return
		}
		e.out.refreshGate(ctx, r2, r2.Gate)
		e.out.end(ctx, r2)
		return
	}
	e.escalate(ctx, r, now)
	// Keep "expires in …" roughly right without flooding the chat's edit limits.
	if e.gateEdits.due(g.ID, now) {
		e.out.refreshGate(ctx, r, g)
	}
	remind := time.Duration(g.Policy.Expires) / 6
	if remind > 5*time.Minute {
		remind = 5 * time.Minute
	}
	if !g.Reminded && !now.Before(g.ExpiresAt.Add(-remind)) {
		r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
			if r.Gate == nil || r.Gate.ID != g.ID {
				return errRunOver
			}
			r.Gate.Reminded = true
			return nil
		})
		if err != nil {
			return
		}
		e.out.thread(ctx, r2, chatmodel.RoleReminder, g.StepID, chatmodel.Message{Broadcast: true,
			Text: fmt.Sprintf("⏰ Approval for `%s` (%s) expires in %s — %s. %s",
				r2.ID, g.Plan.Summary, human.Duration(expiresIn(g.ExpiresAt.Sub(now))), policy.Describe(g.Policy, r2.Requester.Display()), e.hints.reminder(r2.ID))})
		e.out.refreshGate(ctx, r2, r2.Gate)
	}
}

// gateEdits has one concern: how often an open gate's message is edited
// to keep its "expires in …" roughly right — at most every 5 minutes,
// not at the first check (the message was just posted), so the chat's
// edit limits are not flooded.
type gateEdits struct {
	mu   sync.Mutex
	last map[string]time.Time // gate id → last refresh (or first check)
}

// due reports whether gate id's message is due an edit at now, and
// records now when it is (or when the gate is checked the first time).
func (t *gateEdits) due(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[string]time.Time{}
	}
	last, seen := t.last[id]
	due := !seen || now.Sub(last) >= 5*time.Minute
	if due {
		t.last[id] = now
	}
	return due && seen
}
