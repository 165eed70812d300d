package runmodel

import (
	"fmt"
	"slices"
)

// Machine is the run model's state machine: its tables say which moves of
// a run's state, a step's status and a gate's decision are allowed, and
// every change of them goes through it (Run.SetState, StepState.SetStatus,
// Gate.SetDecision, Run.OpenGate, Run.CloseGate). An illegal move is an
// ErrInvalidTransition error, never a silent overwrite: inside a run update
// it rolls the whole update back.
type Machine struct {
	Runs  map[RunState][]RunState
	Steps map[StepStatus][]StepStatus
	Gates map[GateDecision][]GateDecision
}

// The statuses a step starts in, and those it ends in.
var (
	stepStarts = []StepStatus{StepRunning, StepExecuting, StepGated, StepManual, StepWaiting}
	stepEnds   = []StepStatus{StepSucceeded, StepFailed, StepSkipped, StepCancelled}
)

// Moves is the state machine of every run.
var Moves = Machine{
	Runs: map[RunState][]RunState{
		RunRunning:          {RunAwaitingApproval, RunAwaitingManual, RunWaiting, RunSucceeded, RunFailed, RunCancelled, RunRunning},
		RunAwaitingApproval: {RunRunning, RunFailed, RunCancelled, RunAwaitingApproval},
		RunAwaitingManual:   {RunRunning, RunFailed, RunCancelled, RunAwaitingManual},
		RunWaiting:          {RunRunning, RunFailed, RunCancelled, RunWaiting},
		// succeeded, failed and cancelled are final
	},
	Steps: map[StepStatus][]StepStatus{
		StepPending: slices.Concat(stepStarts, stepEnds),
		// a read call in flight: redone after a crash
		StepRunning: {StepRunning, StepSucceeded, StepFailed, StepSkipped, StepCancelled},
		// a write in flight: an interrupted one is handed to a person (gated)
		StepExecuting: {StepSucceeded, StepFailed, StepGated, StepCancelled},
		// approved: executed, or done (an approval step, an empty plan);
		// re-gated when the plan drifted
		StepGated:   {StepGated, StepExecuting, StepSucceeded, StepFailed, StepSkipped, StepCancelled},
		StepManual:  {StepSucceeded, StepSkipped, StepFailed, StepCancelled},
		StepWaiting: {StepWaiting, StepSucceeded, StepSkipped, StepFailed, StepCancelled},
		// a step the run comes back to (goto, on_failure) starts again
		StepSucceeded: slices.Concat(stepStarts, []StepStatus{StepSucceeded, StepSkipped, StepFailed, StepCancelled}),
		StepFailed:    slices.Concat(stepStarts, []StepStatus{StepSucceeded, StepSkipped, StepFailed, StepCancelled}),
		StepSkipped:   slices.Concat(stepStarts, []StepStatus{StepSucceeded, StepSkipped, StepFailed, StepCancelled}),
		// cancelled is final
	},
	Gates: map[GateDecision][]GateDecision{
		GatePending: {GateApproved, GateRejected, GateExpired, GateVoid},
		// an approved plan that changed before execution voids its approval
		GateApproved: {GateVoid},
		// rejected, expired and void are final
	},
}

// RunAllowed reports whether a run may move from one state to another.
func (m Machine) RunAllowed(from, to RunState) bool { return slices.Contains(m.Runs[from], to) }

// StepAllowed reports whether a step may move from one status to another.
func (m Machine) StepAllowed(from, to StepStatus) bool {
	return slices.Contains(m.Steps[from], to)
}

// GateAllowed reports whether a gate may move from one decision to another.
func (m Machine) GateAllowed(from, to GateDecision) bool {
	return slices.Contains(m.Gates[from], to)
}

// SetState moves the run to a new state, refusing illegal moves.
func (r *Run) SetState(to RunState) error {
	if !Moves.RunAllowed(r.State, to) {
		return fmt.Errorf("run %s: %w: %s → %s", r.ID, ErrInvalidTransition, r.State, to)
	}
	r.State = to
	return nil
}

// SetStatus moves the step to a new status, refusing illegal moves.
func (st *StepState) SetStatus(to StepStatus) error {
	if !Moves.StepAllowed(st.Status, to) {
		return fmt.Errorf("step %s: %w: %s → %s", st.ID, ErrInvalidTransition, st.Status, to)
	}
	st.Status = to
	if to != StepRunning && to != StepExecuting {
		st.Progress = "" // how far a call got is said only while it runs
	}
	return nil
}

// SetDecision decides the gate, refusing illegal moves (a decided gate is
// never decided again, but an approval voided by a changed plan).
func (g *Gate) SetDecision(to GateDecision) error {
	if !Moves.GateAllowed(g.Decision, to) {
		return fmt.Errorf("gate %s: %w: %s → %s", g.ID, ErrInvalidTransition, nonEmptyDecision(g.Decision), nonEmptyDecision(to))
	}
	g.Decision = to
	return nil
}

func nonEmptyDecision(d GateDecision) string {
	if d == GatePending {
		return "pending"
	}
	return string(d)
}

// OpenGate opens g as the run's gate: refused while another gate is
// pending (a gate is decided, or voided, before the next one opens).
func (r *Run) OpenGate(g *Gate) error {
	if r.Gate != nil && r.Gate.Decision == GatePending {
		return fmt.Errorf("run %s: %w: gate %s is still pending, cannot open %s", r.ID, ErrInvalidTransition, r.Gate.ID, g.ID)
	}
	if g.Decision != GatePending {
		return fmt.Errorf("run %s: %w: gate %s opens pending, not %s", r.ID, ErrInvalidTransition, g.ID, g.Decision)
	}
	r.Gate = g
	return nil
}

// CloseGate removes the run's decided gate (its step executes). A pending
// gate is decided first.
func (r *Run) CloseGate() error {
	if r.Gate != nil && r.Gate.Decision == GatePending {
		return fmt.Errorf("run %s: %w: gate %s is pending, cannot close it", r.ID, ErrInvalidTransition, r.Gate.ID)
	}
	r.Gate = nil
	return nil
}
