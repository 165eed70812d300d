package bot

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// errNoProgress: the step no longer runs, its progress is not stored.
var errNoProgress = errors.New("the step no longer runs")

// ProgressInterval is the least time between two progress edits of a step
// message: chat platforms rate-limit edits, and people read no faster.
const ProgressInterval = 2 * time.Second

// progress returns a Call.Progress callback for step stepID of run runID,
// and stop, which must be called when the call returns: after stop no
// progress edit is made, so the outcome is never overwritten. The first
// report is shown at once, later ones at most every ProgressInterval (of
// the engine's clock); each is stored in the step (StepState.Progress:
// the run's web page follows it, on any replica) and shown in its message.
func (p *poster) progress(ctx context.Context, runID, stepID string) (report func(string), stop func()) {
	var (
		mu       sync.Mutex
		last     time.Time
		stopped  bool
		inflight sync.WaitGroup
	)
	report = func(text string) {
		mu.Lock()
		now := p.now()
		if stopped || (!last.IsZero() && now.Sub(last) < ProgressInterval) {
			mu.Unlock()
			return
		}
		last = now
		inflight.Add(1)
		mu.Unlock()
		// the edit runs outside the lock: the call's other goroutines are
		// not held up by a slow chat API
		defer inflight.Done()
		// Stored too, so the run's page follows it on any replica (a
		// commit the pages hear of); the message is edited from it.
		r, err := p.store.UpdateRun(ctx, runID, func(r *runmodel.Run, _ *runmodel.Batch) error {
			st := r.Step(stepID)
			if st == nil || (st.Status != runmodel.StepExecuting && st.Status != runmodel.StepRunning) {
				return errNoProgress
			}
			st.Progress = text
			return nil
		})
		if errors.Is(err, errNoProgress) {
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				return // the engine stops (a replica stepping down)
			}
			// the call goes on; its outcome is stored as always
			p.log.Warn("progress not stored (the message is edited all the same)", "run", runID, "step", stepID, "err", err)
			if r, err = p.store.GetRun(ctx, runID); err != nil {
				return
			}
		}
		st := r.Step(stepID)
		if st == nil || st.Message.IsZero() || (st.Status != runmodel.StepExecuting && st.Status != runmodel.StepRunning) {
			return
		}
		m := renderStep(r, st, p.now(), p.hints)
		m.Text += "\n⏳ " + text
		p.update(ctx, r, st.Message, chatmodel.RoleStep, stepID, m)
	}
	stop = func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		inflight.Wait() // no progress edit lands after the outcome
	}
	return report, stop
}
