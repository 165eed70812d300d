package bot

import (
	"context"
	"fmt"

	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// dryRunBranch answers "what would this do?" for a destructive step a dry
// run does not reach: one behind a manual choice (the choice is not made in
// a dry run) or another condition. Its plan is resolved — read-only, as
// every plan — and shown, the step is skipped. It reports whether it
// handled the step.
func (e *Engine) dryRunBranch(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, env runbooks.Env) bool {
	if !r.DryRun || spec.Kind != runbookmodel.KindAction {
		return false
	}
	op, ok := e.opts.Ops.Get(spec.Op)
	if !ok || op.Class != opmodel.ClassDestructive {
		return false
	}
	why := skipReason(spec, env)
	args, err := runbooks.RenderArgs(spec.Args, env)
	if err != nil {
		e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) {
			st.Summary = fmt.Sprintf("dry run: not reached (%s); its plan depends on earlier choices: %v", why, err)
		})
		return true
	}
	call := runCall(r, spec.ID, opmodel.Args(args))
	cctx, done := e.work.callCtx(ctx, r.ID, true)
	p, err := op.Plan(cctx, call)
	done()
	if ctx.Err() != nil {
		return true
	}
	e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) {
		st.Args = call.Args
		switch {
		case err != nil:
			st.Summary = fmt.Sprintf("dry run: not reached (%s); its plan could not be resolved: %v", why, err)
		case p.Empty():
			st.Summary = fmt.Sprintf("dry run: would do nothing (not reached: %s): %s", why, nonEmpty(p.Summary, "the plan is empty"))
		default:
			p.Op, p.Target = op.Name, r.Target
			st.Plan, st.PlanHash = &p, p.Hash()
			st.Summary = fmt.Sprintf("dry run: would %s — not reached: %s", p.Summary, why)
			st.Detail = renderPlanItems(&p, 1000)
		}
	})
	return true
}
