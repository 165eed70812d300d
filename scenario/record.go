package scenario

import (
	"context"
	"sync"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Phases of an operation call.
const (
	PhaseDo    = "do"    // a read or write call
	PhasePlan  = "plan"  // a destructive call's plan was resolved
	PhaseApply = "apply" // a destructive call was applied
)

// Call is one operation call the engine made during a scenario.
type Call struct {
	Op    string
	Step  string
	Phase string
	Args  opmodel.Args
	Err   string
}

// recorder wraps providers so every call is recorded.
type recorder struct {
	mu    sync.Mutex
	calls []Call
}

func (r *recorder) add(c Call, err error) {
	if err != nil {
		c.Err = err.Error()
	}
	r.mu.Lock()
	r.calls = append(r.calls, c)
	r.mu.Unlock()
}

// Calls returns the recorded calls in order.
func (r *recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Call(nil), r.calls...)
}

// called reports whether op (optionally at step) was called: done for
// read and write operations, applied for destructive ones.
func (r *recorder) called(op, step string) bool {
	for _, c := range r.Calls() {
		if c.Op == op && (step == "" || c.Step == step) && c.Phase != PhasePlan {
			return true
		}
	}
	return false
}

type recordedProvider struct{ ops []opmodel.Op }

func (p recordedProvider) Ops() []opmodel.Op { return p.ops }

// wrap returns p with every operation recorded.
func (r *recorder) wrap(p opmodel.Provider) opmodel.Provider {
	var out []opmodel.Op
	for _, op := range p.Ops() {
		op := op
		if do := op.Do; do != nil {
			op.Do = func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
				res, err := do(ctx, c)
				r.add(Call{Op: op.Name, Step: c.StepID, Phase: PhaseDo, Args: c.Args}, err)
				return res, err
			}
		}
		if plan := op.Plan; plan != nil {
			op.Plan = func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
				p, err := plan(ctx, c)
				r.add(Call{Op: op.Name, Step: c.StepID, Phase: PhasePlan, Args: c.Args}, err)
				return p, err
			}
		}
		if apply := op.Apply; apply != nil {
			op.Apply = func(ctx context.Context, c opmodel.Call, p opmodel.Plan) (opmodel.Result, error) {
				res, err := apply(ctx, c, p)
				r.add(Call{Op: op.Name, Step: c.StepID, Phase: PhaseApply, Args: c.Args}, err)
				return res, err
			}
		}
		out = append(out, op)
	}
	return recordedProvider{ops: out}
}
