package bot

// The run messages the poster renders (with render.go) and posts.

import (
	"context"
	"fmt"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// step posts or updates the message of one step.
func (p *poster) step(ctx context.Context, r *runmodel.Run, stepID string) {
	st := r.Step(stepID)
	if st == nil || st.Branch && st.Message.IsZero() {
		return
	}
	if approvedAtGate(r, st) {
		// The gate message, edited in place, already says "🔓 Approved by
		// @bob — <title>" under the step's number: no second message.
		return
	}
	p.updateOrPost(ctx, r, st.Message, chatmodel.RoleStep, stepID, renderStep(r, st, p.now(), p.hints))
	if st.Detail != "" && st.Status.Done() {
		p.thread(ctx, r, chatmodel.RoleDetail, stepID, chatmodel.Message{Text: st.Detail})
	}
}

// gate posts the gate message of the run's open gate.
func (p *poster) gate(ctx context.Context, r *runmodel.Run) {
	g := r.Gate
	if g == nil {
		return
	}
	m := renderGate(r, g, p.now(), p.hints)
	m.Broadcast = true
	p.thread(ctx, r, chatmodel.RoleGate, g.StepID, m)
	if g.Plan != nil && len(g.Plan.Items) > planInline {
		p.thread(ctx, r, chatmodel.RoleDetail, g.StepID, chatmodel.Message{Text: fmt.Sprintf("Full plan of `%s` (%d items, plan hash `%s`):", g.ID, len(g.Plan.Items), short(g.PlanHash)), Detail: renderPlanItems(g.Plan, 100000)})
	}
}

// refreshGate refreshes a gate message in place.
func (p *poster) refreshGate(ctx context.Context, r *runmodel.Run, g *runmodel.Gate) {
	if g == nil || g.Message.IsZero() {
		return
	}
	p.update(ctx, r, g.Message, chatmodel.RoleGate, g.StepID, renderGate(r, g, p.now(), p.hints))
}

// refreshRoot updates the run's root message with its current status.
func (p *poster) refreshRoot(ctx context.Context, r *runmodel.Run) {
	if r.Root.IsZero() && r.RootPending != "" {
		// still in the outbox: it is posted with the latest status
		m := p.rootMessage(r)
		m.RunID, m.Role = r.ID, chatmodel.RoleRoot
		_ = p.delivery.Update(ctx, delivery.Handle{Pending: r.RootPending}, m, runMeta(r.ID, chatmodel.RoleRoot, ""))
		return
	}
	if r.Root.IsZero() {
		return
	}
	p.update(ctx, r, r.Root, chatmodel.RoleRoot, "", p.rootMessage(r))
}

// end posts the final message — the run's summary — and refreshes the
// root message.
func (p *poster) end(ctx context.Context, r *runmodel.Run) {
	p.refreshRoot(ctx, r)
	j, err := p.store.Journal(ctx, r.ID)
	if err != nil {
		j = nil
	}
	p.thread(ctx, r, chatmodel.RoleFinal, "", renderFinal(r, j, p.now()))
}

// approvedAtGate reports whether st is an approval step approved at a gate
// whose message is in the thread (and the step has no message of its own).
func approvedAtGate(r *runmodel.Run, st *runmodel.StepState) bool {
	return st.Kind == runbookmodel.KindApproval && st.Status == runmodel.StepSucceeded && len(st.ApprovedBy) > 0 &&
		st.Message.IsZero() && r.Gate != nil && r.Gate.StepID == st.ID && !r.Gate.Message.IsZero()
}
