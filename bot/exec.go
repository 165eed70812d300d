package bot

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// errRunOver aborts a run update when the run has ended meanwhile
// (cancelled while a call was in flight).
var errRunOver = errors.New("run is over")

// advance works on a run until it waits for a person or a timer, or ends.
func (e *Engine) advance(ctx context.Context, id string) {
	for range 10000 {
		if ctx.Err() != nil {
			return
		}
		r, err := e.opts.Store.GetRun(ctx, id)
		if err != nil {
			e.log.Error("loading run", "run", id, "err", err)
			return
		}
		switch r.State {
		case runmodel.RunRunning:
		case runmodel.RunWaiting:
			st := r.Current()
			if st == nil || st.NextPoll.After(e.opts.Now()) {
				return
			}
			e.pollWait(ctx, r)
			continue
		default:
			return
		}
		if r.Cursor >= len(r.Steps) {
			e.finish(ctx, r.ID, runmodel.RunSucceeded, "")
			return
		}
		st, spec := r.Current(), &r.Spec.Steps[r.Cursor]
		e.hook("step:" + st.ID + ":" + string(st.Status))
		switch st.Status {
		case runmodel.StepPending, runmodel.StepRunning:
			e.startStep(ctx, r, spec)
		case runmodel.StepGated:
			e.afterGate(ctx, r, spec)
		case runmodel.StepExecuting:
			e.reconcile(ctx, r, spec)
		default:
			// A finished step at the cursor: move on.
			_, _ = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
				return e.moves.moveOn(r, b, r.Current().Status == runmodel.StepSucceeded || r.Current().Status == runmodel.StepSkipped)
			})
		}
	}
	e.log.Error("run did not settle; stopping", "run", id)
}

// update is Store.UpdateRun that also refreshes UpdatedAt. A failing store
// write is retried and, if it still fails, reported loudly (durable.go).
func (e *Engine) update(ctx context.Context, id string, fn func(*runmodel.Run, *runmodel.Batch) error) (*runmodel.Run, error) {
	var batch *runmodel.Batch
	r, err := e.writes.updateRun(ctx, id, "a change", func(r *runmodel.Run, b *runmodel.Batch) error {
		if err := fn(r, b); err != nil {
			return err
		}
		r.UpdatedAt, batch = e.opts.Now(), b
		return nil
	})
	if err == nil && batch != nil {
		e.opts.Observer.RunCommitted(r, batch)
	}
	if err != nil && !errors.Is(err, errRunOver) && ctx.Err() == nil { // not the engine stopping
		e.log.Error("updating run", "run", id, "err", err)
	}
	return r, err
}

// runEnv is what expressions and templates see.
func runEnv(r *runmodel.Run) runbooks.Env {
	steps := make(map[string]runbooks.StepEnv, len(r.Steps))
	for _, st := range r.Steps {
		var res any
		if len(st.Result) > 0 {
			_ = json.Unmarshal(st.Result, &res)
		}
		by := ""
		if st.By != nil {
			by = st.By.Name
		}
		steps[st.ID] = runbooks.StepEnv{Status: string(st.Status), Summary: st.Summary, Result: res, By: by}
	}
	return runbooks.NewEnv(r.Params, r.Vars, r.Target, cmp.Or(r.FlyTarget, r.Target), steps, runbooks.RunEnv{ID: r.ID, Requester: r.Requester.Name, DryRun: r.DryRun, AlertInstance: r.AlertInstance})
}

func optional(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// finish ends a run (if not already) and posts the final message.
func (e *Engine) finish(ctx context.Context, id string, to runmodel.RunState, msg string) {
	r, err := e.update(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error { return e.moves.endRun(r, b, to, msg) })
	if err != nil {
		return
	}
	e.out.end(ctx, r)
}

// stepFail marks the current step failed and follows on_failure.
func (e *Engine) stepFail(ctx context.Context, id, stepID string, cause error, set func(st *runmodel.StepState)) *runmodel.Run {
	r, err := e.update(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if r.State.Terminal() || st == nil || st.ID != stepID {
			return errRunOver
		}
		if err := st.SetStatus(runmodel.StepFailed); err != nil {
			return err
		}
		st.FinishedAt, st.Error = e.opts.Now(), chatmodel.UserMessage(cause)
		if set != nil {
			set(st)
		}
		b.Note(runmodel.JournalEntry{Time: st.FinishedAt, Step: st.ID, Type: runmodel.JStepFailed, Message: st.Error})
		return e.moves.moveOn(r, b, false)
	})
	if err != nil {
		return nil
	}
	e.out.step(ctx, r, stepID)
	if r.State.Terminal() {
		e.out.end(ctx, r)
	}
	return r
}

// stepDone marks the current step succeeded (or skipped) and moves on.
func (e *Engine) stepDone(ctx context.Context, id, stepID string, status runmodel.StepStatus, set func(st *runmodel.StepState, b *runmodel.Batch)) *runmodel.Run {
	r, err := e.update(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if st == nil || st.ID != stepID {
			return errRunOver
		}
		st.Status, st.FinishedAt, st.Progress = status, e.opts.Now(), ""
		if set != nil {
			set(st, b)
		}
		typ := runmodel.JStepDone
		if status == runmodel.StepSkipped {
			typ = runmodel.JStepSkipped
		}
		b.Note(runmodel.JournalEntry{Time: st.FinishedAt, Step: st.ID, Type: typ, Message: st.Summary})
		if r.State.Terminal() {
			return nil // outcome recorded on a cancelled run; no moving on
		}
		return e.moves.moveOn(r, b, true)
	})
	if err != nil {
		return nil
	}
	e.out.step(ctx, r, stepID)
	if r.State.Terminal() {
		e.out.end(ctx, r)
	}
	return r
}

// startStep begins the step at the cursor.
func (e *Engine) startStep(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step) {
	env := runEnv(r)
	if run, ok := env[runbooks.EnvRun].(map[string]any); ok {
		run["now"] = e.opts.Now().Unix() // run.now: when the step starts
	}
	e.resolveTitles(ctx, r, env)
	if spec.When != "" {
		ok, err := runbooks.EvalBool(spec.When, env)
		if err != nil {
			e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("evaluating when: %w", err), nil)
			return
		}
		if !ok && e.dryRunBranch(ctx, r, spec, env) {
			return
		}
		if !ok {
			e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) {
				st.Summary = "skipped: " + skipReason(spec, env)
				st.Branch = true
			})
			return
		}
	}
	switch spec.Kind {
	case runbookmodel.KindManual:
		e.startManual(ctx, r, spec, env)
		return
	case runbookmodel.KindApproval:
		e.startApproval(ctx, r, spec, env)
		return
	}
	op, ok := e.opts.Ops.Get(spec.Op)
	if !ok {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("operation %s is not available (is its provider configured?)", spec.Op), nil)
		return
	}
	if spec.Text != "" {
		// A note on a query/action/wait step is shown with it.
		if text, err := runbooks.RenderInstructions(spec.Text, env); err == nil {
			_, _ = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
				if st := r.Current(); st != nil && st.ID == spec.ID {
					st.Text = text
				}
				return nil
			})
		}
	}
	args, err := runbooks.RenderArgs(spec.Args, env)
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("rendering arguments: %w", err), nil)
		return
	}
	call := runCall(r, spec.ID, opmodel.Args(args))
	switch {
	case spec.Kind == runbookmodel.KindWait:
		e.startWait(ctx, r, spec, call)
	case op.Class == opmodel.ClassRead:
		e.runRead(ctx, r, spec, op, call)
	case op.Class == opmodel.ClassDestructive || r.PendingApproval != nil:
		e.openActionGate(ctx, r, spec, op, call, "")
	default:
		e.runWrite(ctx, r, spec, op, call, nil)
	}
}

// skipReason says in words why a step whose when is false is skipped: its
// because, rendered now (the results of the steps before it are there), or
// a plain sentence — never the expression, which people should not have to
// read (`groundcrew lint` warns about a when without because).
func skipReason(spec *runbookmodel.Step, env runbooks.Env) string {
	if spec.Because != "" {
		if s := strings.TrimSpace(runbooks.RenderTitle(spec.Because, env)); s != "" {
			return s
		}
	}
	return "its condition was not met"
}

// resolveTitles renders the titles of the steps not started yet — the one
// at the cursor, which starts now, and those after it — with the results
// of the steps before them ("Wait for caascad-ci-workers-infra-infra-prd-0
// to be running"), and stores them. A step keeps the title it had when it
// started: once started it is not rendered again, restarts included. A
// result not there yet gives the template's fallback (runbooks.RenderTitle).
func (e *Engine) resolveTitles(ctx context.Context, r *runmodel.Run, env runbooks.Env) {
	titles := map[int]string{}
	for i := range r.Steps {
		if r.Steps[i].Status != runmodel.StepPending || i >= len(r.Spec.Steps) || !strings.Contains(r.Spec.Steps[i].Title, "{{") {
			continue
		}
		if t := runbooks.RenderTitle(r.Spec.Steps[i].Title, env); t != r.Steps[i].Title {
			titles[i] = t
		}
	}
	if len(titles) == 0 {
		return
	}
	_, err := e.update(ctx, r.ID, func(r *runmodel.Run, _ *runmodel.Batch) error {
		for i, t := range titles {
			if i < len(r.Steps) && r.Steps[i].Status == runmodel.StepPending {
				r.Steps[i].Title = t
			}
		}
		return nil
	})
	if err == nil {
		for i, t := range titles {
			r.Steps[i].Title = t
		}
	}
}

// runRead runs a read operation: safe to redo, so no intent is recorded.
func (e *Engine) runRead(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, op opmodel.Op, call opmodel.Call) {
	r, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if st.Status != runmodel.StepRunning {
			b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: st.ID, Type: runmodel.JStepStarted, Message: op.Name})
		}
		if err := st.SetStatus(runmodel.StepRunning); err != nil {
			return err
		}
		st.StartedAt, st.Args = e.opts.Now(), call.Args
		return nil
	})
	if err != nil {
		return
	}
	cctx, done := e.work.callCtx(ctx, r.ID, true)
	res, err := op.Do(cctx, call)
	done()
	if err != nil {
		if ctx.Err() != nil {
			return // shutting down: the read is redone on restart
		}
		e.stepFail(ctx, r.ID, spec.ID, err, nil)
		return
	}
	same := sameResult(r, spec.ID, res)
	e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSucceeded, func(st *runmodel.StepState, _ *runmodel.Batch) {
		setResult(st, res)
		if same != nil {
			// Said once: the earlier step shows the table and the details.
			noun := cmp.Or(res.Table.Noun, "rows")
			st.Summary = fmt.Sprintf("the same %d %s as %s above", len(res.Table.Rows), noun, stepNumber(r, same))
			st.Table, st.Detail = nil, ""
		}
	})
}

// sameResult is the earlier step of r (before step id) whose result shows
// the same table and the same details as res — a wider scan that found the
// same builds — or nil. Data is not compared: later steps still read it.
func sameResult(r *runmodel.Run, id string, res opmodel.Result) *runmodel.StepState {
	if res.Table == nil || len(res.Table.Rows) == 0 {
		return nil
	}
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.ID == id {
			return nil
		}
		if st.Status == runmodel.StepSucceeded && st.Table != nil && st.Detail == res.Detail &&
			slices.Equal(st.Table.Columns, res.Table.Columns) &&
			slices.EqualFunc(st.Table.Rows, res.Table.Rows, slices.Equal[[]string]) {
			return st
		}
	}
	return nil
}

func setResult(st *runmodel.StepState, res opmodel.Result) {
	st.Summary, st.Table, st.Detail, st.Warn, st.Items = res.Summary, res.Table, res.Detail, res.Warn, res.Items
	if res.Data != nil {
		if b, err := json.Marshal(res.Data); err == nil {
			st.Result = b
		}
	}
}

// runWrite records intent, calls a write operation, and records the outcome.
func (e *Engine) runWrite(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, op opmodel.Op, call opmodel.Call, approvedBy []chatmodel.User) {
	if r.DryRun {
		e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) {
			st.Summary = "dry run: would call " + op.Name + " " + formatArgs(call.Args)
		})
		return
	}
	teams, err := callTeams(ctx, op, call, nil)
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, err, nil)
		return
	}
	// Right before the call, asked afresh (after an approval too).
	refused, err := e.auth.mayChange(chatmodel.Fresh(ctx), r, op, teams, len(teams) == 0)
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("checking who may change the things of %s: %w; nothing was changed", teamsText(teams), err), nil)
		return
	}
	if refused != "" {
		e.auth.refuse(ctx, r, spec.ID, teams, refused)
		return
	}
	_, err = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if r.State.Terminal() || st.ID != spec.ID {
			return errRunOver
		}
		if err := st.SetStatus(runmodel.StepExecuting); err != nil {
			return err
		}
		st.StartedAt, st.Args, st.ApprovedBy, st.Teams = e.opts.Now(), call.Args, approvedBy, teams
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: st.ID, Type: runmodel.JIntent, Message: op.Name + " " + formatArgs(call.Args)})
		b.AuditLog(runmodel.AuditEntry{Time: e.opts.Now(), Actor: r.Requester.ID, Action: runmodel.ActionCall(op.Class), Step: st.ID, Target: r.Target, Detail: op.Name + " " + formatArgs(call.Args)})
		return nil
	})
	if err != nil {
		return
	}
	e.hook("before-call:" + spec.ID)
	cctx, done := e.work.callCtx(context.WithoutCancel(ctx), r.ID, false)
	cctx, release, err := e.fence.hold(ctx, cctx, r.ID, spec.ID, op.Name)
	if err != nil {
		done()
		return // nothing sent; the step keeps its intent for the leader to reconcile
	}
	defer release()
	var stop func()
	call.Progress, stop = e.out.progress(ctx, r.ID, spec.ID)
	res, err := op.Do(cctx, call)
	stop()
	done()
	e.hook("after-call:" + spec.ID)
	e.recordOutcome(ctx, r.ID, spec.ID, op, "", res, err)
}

// recordOutcome writes the outcome of a write/destructive call.
func (e *Engine) recordOutcome(ctx context.Context, runID, stepID string, op opmodel.Op, planHash string, res opmodel.Result, callErr error) {
	failed := res.Failed()
	if callErr != nil {
		// The outcome is journaled before the step fails, so the run's
		// summary and end-of-run message (posted when the failure ends the
		// run) list the attempt under Changes.
		outcome := runmodel.CallFailed
		if errors.Is(callErr, opmodel.ErrUnchanged) {
			outcome = runmodel.CallUnchanged
		}
		e.noteOutcome(ctx, runID, stepID, op, planHash, outcome, outcomeFailedPrefix+chatmodel.UserMessage(callErr))
		e.stepFail(ctx, runID, stepID, callErr, func(st *runmodel.StepState) {
			setResult(st, res)
		})
		return
	}
	outcome := runmodel.CallSucceeded
	if len(failed) > 0 {
		outcome = runmodel.CallPartlyFailed
	}
	e.noteOutcome(ctx, runID, stepID, op, planHash, outcome, res.Summary)
	if len(failed) > 0 {
		e.stepFail(ctx, runID, stepID, fmt.Errorf("%d of %d items failed", len(failed), len(res.Items)), func(st *runmodel.StepState) { setResult(st, res) })
		return
	}
	e.stepDone(ctx, runID, stepID, runmodel.StepSucceeded, func(st *runmodel.StepState, _ *runmodel.Batch) { setResult(st, res) })
}

// noteOutcome appends the outcome journal/audit entries (even on a run
// cancelled meanwhile: what happened must be on record).
// A failed write is retried and then reported in the thread (durable.go).
func (e *Engine) noteOutcome(ctx context.Context, runID, stepID string, op opmodel.Op, planHash string, outcome runmodel.CallOutcome, msg string) {
	_, _ = e.writes.updateRun(ctx, runID, "the outcome of step "+stepID+" ("+op.Name+": "+msg+")", func(r *runmodel.Run, b *runmodel.Batch) error {
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: stepID, Type: runmodel.JOutcome, Outcome: outcome, PlanHash: planHash, Message: msg})
		b.AuditLog(runmodel.AuditEntry{Time: e.opts.Now(), Actor: e.opts.BotName, Action: runmodel.ActionOutcome, Step: stepID, Target: r.Target, PlanHash: planHash, Detail: op.Name + ": " + msg})
		return nil
	})
}

// startManual posts instructions and waits for a person.
func (e *Engine) startManual(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, env runbooks.Env) {
	text, err := runbooks.RenderInstructions(spec.Text, env)
	if err != nil {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("rendering instructions: %w", err), nil)
		return
	}
	if r.DryRun {
		e.stepDone(ctx, r.ID, spec.ID, runmodel.StepSkipped, func(st *runmodel.StepState, _ *runmodel.Batch) {
			st.Text, st.Summary = text, "dry run: manual step shown, not waited for"
		})
		return
	}
	r, err = e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if st.ID != spec.ID {
			return errRunOver
		}
		if err := st.SetStatus(runmodel.StepManual); err != nil {
			return err
		}
		st.StartedAt, st.Text = e.opts.Now(), text
		if spec.Timeout > 0 {
			st.Deadline = e.opts.Now().Add(spec.Timeout)
		}
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: st.ID, Type: runmodel.JStepStarted, Message: "manual step waiting for a person"})
		return r.SetState(runmodel.RunAwaitingManual)
	})
	if err != nil {
		return
	}
	e.out.step(ctx, r, spec.ID)
	e.out.refreshRoot(ctx, r)
}

// startWait begins polling.
func (e *Engine) startWait(ctx context.Context, r *runmodel.Run, spec *runbookmodel.Step, call opmodel.Call) {
	r, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if err := st.SetStatus(runmodel.StepWaiting); err != nil {
			return err
		}
		st.StartedAt, st.Args = e.opts.Now(), call.Args
		timeout := spec.Timeout
		if timeout <= 0 {
			timeout = 10 * time.Minute
		}
		st.Deadline, st.NextPoll = e.opts.Now().Add(timeout), e.opts.Now()
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: st.ID, Type: runmodel.JStepStarted, Message: fmt.Sprintf("waiting up to %s for %s", timeout, spec.Until)})
		return r.SetState(runmodel.RunWaiting)
	})
	if err != nil {
		return
	}
	e.out.step(ctx, r, spec.ID)
	e.out.refreshRoot(ctx, r)
}

// pollWait polls a wait step once.
func (e *Engine) pollWait(ctx context.Context, r *runmodel.Run) {
	st, spec := r.Current(), &r.Spec.Steps[r.Cursor]
	op, ok := e.opts.Ops.Get(spec.Op)
	if !ok {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("operation %s is not available", spec.Op), nil)
		return
	}
	cctx, done := e.work.callCtx(ctx, r.ID, true)
	res, pollErr := op.Do(cctx, runCall(r, st.ID, st.Args))
	done()
	if ctx.Err() != nil {
		return
	}
	now := e.opts.Now()
	met := false
	var evalErr error
	if pollErr == nil {
		env := runEnv(r)
		var data any
		if b, mErr := json.Marshal(res.Data); mErr == nil {
			_ = json.Unmarshal(b, &data)
		}
		env["result"] = data
		met, evalErr = runbooks.EvalBool(spec.Until, env)
	}
	if evalErr != nil {
		e.stepFail(ctx, r.ID, spec.ID, fmt.Errorf("evaluating until: %w", evalErr), nil)
		return
	}
	if met || r.DryRun {
		status := runmodel.StepSucceeded
		if r.DryRun && !met {
			status = runmodel.StepSkipped
		}
		e.stepDone(ctx, r.ID, spec.ID, status, func(st *runmodel.StepState, _ *runmodel.Batch) {
			setResult(st, res)
			if status == runmodel.StepSkipped {
				st.Summary = "dry run: condition not met yet, not waited for"
			}
		})
		return
	}
	if !now.Before(st.Deadline) {
		timeout := spec.OnTimeout
		if timeout == "" {
			timeout = runbookmodel.TargetFail
		}
		r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
			st := r.Current()
			if st.ID != spec.ID || r.State != runmodel.RunWaiting {
				return errRunOver
			}
			setResult(st, res)
			if err := st.SetStatus(runmodel.StepFailed); err != nil {
				return err
			}
			st.FinishedAt = now
			st.Error = fmt.Sprintf("timed out after %s", human.Duration(now.Sub(st.StartedAt)))
			b.Note(runmodel.JournalEntry{Time: now, Step: st.ID, Type: runmodel.JStepFailed, Message: st.Error})
			if err := r.SetState(runmodel.RunRunning); err != nil {
				return err
			}
			return e.moves.jump(r, b, timeout)
		})
		if err != nil {
			return
		}
		e.out.step(ctx, r2, spec.ID)
		if r2.State.Terminal() {
			e.out.end(ctx, r2)
		}
		return
	}
	interval := spec.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	r2, err := e.update(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if st.ID != spec.ID || r.State != runmodel.RunWaiting {
			return errRunOver
		}
		st.Polls++
		st.NextPoll = now.Add(interval)
		if pollErr != nil {
			st.Note = "last poll failed: " + chatmodel.UserMessage(pollErr)
		} else {
			st.Note = "last poll: " + res.Summary
		}
		return nil
	})
	if err == nil {
		e.out.step(ctx, r2, spec.ID)
	}
}

// manualTimeout fails a manual step left open past its timeout.
func (e *Engine) manualTimeout(ctx context.Context, runID, stepID string) {
	r, err := e.update(ctx, runID, func(r *runmodel.Run, b *runmodel.Batch) error {
		st := r.Current()
		if r.State != runmodel.RunAwaitingManual || st == nil || st.ID != stepID {
			return errRunOver
		}
		if err := st.SetStatus(runmodel.StepFailed); err != nil {
			return err
		}
		st.FinishedAt, st.Error = e.opts.Now(), "nobody marked it done before its timeout"
		b.Note(runmodel.JournalEntry{Time: e.opts.Now(), Step: stepID, Type: runmodel.JStepFailed, Message: st.Error})
		if err := r.SetState(runmodel.RunRunning); err != nil {
			return err
		}
		return e.moves.moveOn(r, b, false)
	})
	if err != nil {
		return
	}
	e.out.step(ctx, r, stepID)
	if r.State.Terminal() {
		e.out.end(ctx, r)
	} else {
		e.work.kick(runID)
	}
}
