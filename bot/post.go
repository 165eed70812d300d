package bot

import (
	"context"
	"fmt"
)

// postStep posts or updates the message of one step.
func (e *Engine) postStep(ctx context.Context, r *Run, stepID string) {
	st := r.step(stepID)
	if st == nil || st.Branch && st.Message.IsZero() {
		return
	}
	e.out.updateOrPost(ctx, r, st.Message, RoleStep, stepID, e.renderStep(r, st))
	if st.Detail != "" && st.Status.Done() {
		e.out.thread(ctx, r, RoleDetail, stepID, Message{Text: st.Detail})
	}
}

// postGate posts the gate message of the run's open gate.
func (e *Engine) postGate(ctx context.Context, r *Run) {
	g := r.Gate
	if g == nil {
		return
	}
	m := e.renderGate(r, g)
	m.Broadcast = true
	e.out.thread(ctx, r, RoleGate, g.StepID, m)
	if g.Plan != nil && len(g.Plan.Items) > planInline {
		e.out.thread(ctx, r, RoleDetail, g.StepID, Message{Text: fmt.Sprintf("Full plan of `%s` (%d items, plan hash `%s`):", g.ID, len(g.Plan.Items), short(g.PlanHash)), Detail: renderPlanItems(g.Plan, 100000)})
	}
}

// updateGateMessage refreshes a gate message in place.
func (e *Engine) updateGateMessage(ctx context.Context, r *Run, g *Gate) {
	if g == nil || g.Message.IsZero() {
		return
	}
	e.out.update(ctx, r, g.Message, RoleGate, g.StepID, e.renderGate(r, g))
}

// refreshRoot updates the run's root message with its current status.
func (e *Engine) refreshRoot(ctx context.Context, r *Run) {
	if r.Root.IsZero() {
		return
	}
	e.out.update(ctx, r, r.Root, RoleRoot, "", e.renderRoot(r))
}
