package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// writeRetries are the pauses before each further attempt of a failed
// store write (a full disk or a slow fsync is often over in a moment).
var writeRetries = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond}

// durableWriter has one concern: every store write the engine makes either
// succeeds, is retried, or fails loudly — logged at error level with the
// run id, remembered so `/runbook status` shows it, and announced in the
// run's thread so a person sees it. Nothing is dropped silently.
//
// The failures it remembers are kept in memory: the store is what failed.
type durableWriter struct {
	store runmodel.Store
	// out posts the alarm of a lost write, through the outbox (as sender
	// fromAlarm, whose own store writes are not routed back here).
	out *delivery.Outbox
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	byRun map[string][]string // failed writes per run, oldest first
}

func newDurableWriter(store runmodel.Store, out *delivery.Outbox, log *slog.Logger, now func() time.Time) *durableWriter {
	return &durableWriter{store: store, out: out, log: log, now: now, byRun: map[string][]string{}}
}

// fromAlarm names the lost-write alarms in the outbox.
const fromAlarm = "run-alarm"

// failures returns the failed writes of a run, oldest first.
func (w *durableWriter) failures(runID string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.byRun[runID]...)
}

// FailedWrites returns the store writes of a run that failed after every
// retry since the process started (shown by /runbook status).
func (e *Engine) FailedWrites(runID string) []string { return e.writes.failures(runID) }

// do runs write, retrying a failure; permanent (a typed user error,
// errRunOver, ErrNotFound) ends the attempts at once. After the last
// failed attempt it fails loudly and returns the error.
func (w *durableWriter) do(ctx context.Context, runID, what string, write func() (permanent bool, err error)) error {
	var err error
	for i := 0; ; i++ {
		var permanent bool
		permanent, err = write()
		if err == nil || permanent {
			return err
		}
		if i >= len(writeRetries) {
			break
		}
		w.log.Warn("store write failed; retrying", "run", runID, "what", what, "attempt", i+1, "err", err)
		time.Sleep(writeRetries[i])
	}
	w.failed(ctx, runID, what, err)
	return err
}

// failed makes a lost write visible: error log, the run's failure list,
// and a message in the run's thread.
func (w *durableWriter) failed(ctx context.Context, runID, what string, err error) {
	w.log.Error("store write failed after retries: a person must check this run", "run", runID, "what", what, "attempts", len(writeRetries)+1, "err", err)
	if runID == "" {
		return
	}
	w.mu.Lock()
	w.byRun[runID] = append(w.byRun[runID], what)
	w.mu.Unlock()
	r, gerr := w.store.GetRun(ctx, runID)
	if gerr != nil {
		return
	}
	text := fmt.Sprintf("⚠️ groundcrew could not save %s of run `%s` to its store (%d attempts): %s\nThe run may not show it. Check `/runbook status %s`; if you just voted or answered a step, do it again.",
		what, r.ID, len(writeRetries)+1, chatmodel.UserMessage(err), r.ID)
	if _, perr := w.out.Post(ctx, threadOf(r), chatmodel.Message{Text: text}, delivery.Meta{From: fromAlarm, RunID: r.ID}); perr != nil {
		w.log.Error("could not announce a failed store write", "run", runID, "err", perr)
	}
}

// updateRun is Store.UpdateRun with retries of store failures: fn is run
// again on the freshly read run (nothing of a failed transaction was
// written). An error returned by fn, or ErrNotFound, is not retried.
func (w *durableWriter) updateRun(ctx context.Context, id, what string, fn func(*runmodel.Run, *runmodel.Batch) error) (*runmodel.Run, error) {
	var out *runmodel.Run
	err := w.do(ctx, id, what, func() (bool, error) {
		var fnErr error
		r, err := w.store.UpdateRun(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error {
			if fnErr = fn(r, b); fnErr == nil {
				auditTeams(r, b)
			}
			return fnErr
		})
		if err != nil {
			return fnErr != nil || errors.Is(err, chatmodel.ErrNotFound) || ctx.Err() != nil, err
		}
		out = r
		return false, nil
	})
	return out, err
}

// auditTeams records on each audit entry of a step the Concourse teams
// whose things that step's change touches (StepState.Teams), so every
// decision on a gate, the call and its outcome say whose things they
// concern; an entry that names its teams keeps them.
func auditTeams(r *runmodel.Run, b *runmodel.Batch) {
	for i := range b.Audit {
		a := &b.Audit[i]
		if a.Teams != nil || a.Step == "" {
			continue
		}
		if st := r.Step(a.Step); st != nil && len(st.Teams) > 0 {
			a.Teams = append([]string(nil), st.Teams...)
		}
	}
}

// audit appends one audit entry outside a run update.
func (w *durableWriter) audit(ctx context.Context, a runmodel.AuditEntry) {
	if a.Time.IsZero() {
		a.Time = w.now()
	}
	if err := w.do(ctx, a.RunID, "an audit entry ("+string(a.Action)+")", func() (bool, error) {
		return false, w.store.AppendAudit(ctx, a)
	}); err != nil {
		w.log.Error("writing the audit log", "run", a.RunID, "err", err)
	}
}
