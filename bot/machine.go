package bot

import (
	"fmt"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// machine has one concern: the run state machine's moves inside one run
// update — where the cursor goes after a step, how a run ends, what a
// gate's votes decide. They are pure changes of the Run and of the journal
// and audit entries of its Batch: no I/O, no lock.
type machine struct {
	now func() time.Time
	bot string // the actor of the audit entries the engine writes itself
}

// moveOn sets the cursor after the current step finished (ok = succeeded or
// skipped), following goto/on_failure, and finishes the run at the end.
func (m machine) moveOn(r *runmodel.Run, b *runmodel.Batch, ok bool) error {
	spec := r.Spec.Steps[r.Cursor]
	target := ""
	if ok {
		// A skipped step goes on to the next step; only a step that ran follows its goto.
		if r.Steps[r.Cursor].Status == runmodel.StepSucceeded {
			target = spec.Goto
		}
	} else {
		target = spec.OnFailure
		if target == "" {
			target = runbookmodel.TargetFail
		}
	}
	return m.jump(r, b, target)
}

// jump moves the cursor to target: "" (next step), a step id, end, fail, continue.
func (m machine) jump(r *runmodel.Run, b *runmodel.Batch, target string) error {
	switch target {
	case "", runbookmodel.TargetContinue:
		r.Cursor++
	case runbookmodel.TargetEnd:
		r.Cursor = len(r.Steps)
	case runbookmodel.TargetFail:
		st := r.Current()
		msg := "step failed"
		if st != nil {
			msg = fmt.Sprintf("step %s failed", st.ID)
			if st.Error != "" {
				msg += ": " + st.Error
			}
		}
		return m.endRun(r, b, runmodel.RunFailed, msg)
	default:
		i, _ := r.Spec.StepByID(target)
		if i < 0 {
			return m.endRun(r, b, runmodel.RunFailed, fmt.Sprintf("runbook jumps to unknown step %q", target))
		}
		r.Cursor = i
	}
	if r.State != runmodel.RunRunning {
		if err := r.SetState(runmodel.RunRunning); err != nil {
			return err
		}
	}
	return nil
}

// endRun moves the run to a terminal state inside a transaction.
func (m machine) endRun(r *runmodel.Run, b *runmodel.Batch, to runmodel.RunState, msg string) error {
	if r.State.Terminal() {
		return nil
	}
	if err := r.SetState(to); err != nil {
		return err
	}
	r.FinishedAt = m.now()
	if to != runmodel.RunSucceeded && msg != "" {
		r.Error = msg
	}
	if r.Gate != nil && r.Gate.Decision == runmodel.GatePending {
		if err := r.Gate.SetDecision(runmodel.GateVoid); err != nil {
			return err
		}
	}
	b.Note(runmodel.JournalEntry{Time: r.FinishedAt, Type: runmodel.JRunFinished, Message: string(to) + optional(msg)})
	b.AuditLog(runmodel.AuditEntry{Time: r.FinishedAt, Actor: m.bot, Action: runmodel.ActionRun(to), Target: r.Target, Detail: msg})
	return nil
}

// decide applies the gate's decision after a vote changed, inside a run update.
func (m machine) decide(r *runmodel.Run, b *runmodel.Batch, now time.Time, by chatmodel.User, reason string) (runmodel.GateDecision, error) {
	g := r.Gate
	decision := Decide(g, now)
	switch decision {
	case runmodel.GateApproved:
		if err := g.SetDecision(runmodel.GateApproved); err != nil {
			return decision, err
		}
		r.NoteGateDecided(now)
		b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JGateDecided, PlanHash: g.PlanHash, Message: "approved by " + userList(voters(g))})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: m.bot, Action: runmodel.ActionApprovalGranted, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Detail: "approved by " + userList(voters(g))})
		return decision, r.SetState(runmodel.RunRunning)
	case runmodel.GateRejected:
		if err := g.SetDecision(runmodel.GateRejected); err != nil {
			return decision, err
		}
		r.NoteGateDecided(now)
		st := r.Current()
		if err := st.SetStatus(runmodel.StepFailed); err != nil {
			return decision, err
		}
		st.FinishedAt = now
		st.Error = "rejected by " + by.Display() + optional(reason)
		b.Note(runmodel.JournalEntry{Time: now, Step: g.StepID, Type: runmodel.JGateDecided, PlanHash: g.PlanHash, Message: st.Error})
		b.AuditLog(runmodel.AuditEntry{Time: now, Actor: m.bot, Action: runmodel.ActionApprovalRejected, Step: g.StepID, Target: r.Target, PlanHash: g.PlanHash, Detail: st.Error})
		return decision, m.endRun(r, b, runmodel.RunFailed, st.Error)
	}
	return decision, nil
}
