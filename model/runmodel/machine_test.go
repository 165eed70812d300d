package runmodel_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

var (
	runStates = []runmodel.RunState{runmodel.RunRunning, runmodel.RunAwaitingApproval, runmodel.RunAwaitingManual,
		runmodel.RunWaiting, runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled}
	stepStatuses = []runmodel.StepStatus{runmodel.StepPending, runmodel.StepRunning, runmodel.StepExecuting, runmodel.StepGated,
		runmodel.StepManual, runmodel.StepWaiting, runmodel.StepSucceeded, runmodel.StepFailed, runmodel.StepSkipped, runmodel.StepCancelled}
	decisions = []runmodel.GateDecision{runmodel.GatePending, runmodel.GateApproved, runmodel.GateRejected, runmodel.GateExpired, runmodel.GateVoid}
)

// TestMoves_Run: the run moves, exhaustively. A final state never moves.
func TestMoves_Run(t *testing.T) {
	allowed := map[runmodel.RunState]string{
		runmodel.RunRunning:          "running awaiting_approval awaiting_manual waiting succeeded failed cancelled",
		runmodel.RunAwaitingApproval: "running awaiting_approval failed cancelled",
		runmodel.RunAwaitingManual:   "running awaiting_manual failed cancelled",
		runmodel.RunWaiting:          "running waiting failed cancelled",
	}
	for _, from := range runStates {
		for _, to := range runStates {
			want := contains(allowed[from], string(to))
			r := &runmodel.Run{ID: "r-1", State: from}
			err := r.SetState(to)
			if want {
				assert.NoError(t, err, "%s → %s", from, to)
				assert.Equal(t, to, r.State)
			} else {
				assert.ErrorIs(t, err, runmodel.ErrInvalidTransition, "%s → %s", from, to)
				assert.Equal(t, from, r.State, "an illegal move changes nothing")
			}
		}
	}
}

// TestMoves_Step: the step moves, exhaustively.
func TestMoves_Step(t *testing.T) {
	starts := "running executing awaiting_approval awaiting_manual waiting "
	again := starts + "succeeded skipped failed cancelled"
	allowed := map[runmodel.StepStatus]string{
		runmodel.StepPending:   starts + "succeeded failed skipped cancelled",
		runmodel.StepRunning:   "running succeeded failed skipped cancelled",
		runmodel.StepExecuting: "succeeded failed awaiting_approval cancelled",
		runmodel.StepGated:     "awaiting_approval executing succeeded failed skipped cancelled",
		runmodel.StepManual:    "succeeded skipped failed cancelled",
		runmodel.StepWaiting:   "waiting succeeded skipped failed cancelled",
		runmodel.StepSucceeded: again,
		runmodel.StepFailed:    again,
		runmodel.StepSkipped:   again,
	}
	for _, from := range stepStatuses {
		for _, to := range stepStatuses {
			want := contains(allowed[from], string(to))
			st := &runmodel.StepState{ID: "prune", Status: from}
			err := st.SetStatus(to)
			if want {
				assert.NoError(t, err, "%s → %s", from, to)
				assert.Equal(t, to, st.Status)
			} else {
				assert.ErrorIs(t, err, runmodel.ErrInvalidTransition, "%s → %s", from, to)
				assert.Equal(t, from, st.Status, "an illegal move changes nothing")
			}
		}
	}
	// an executing write is never simply started again: a person decides
	st := &runmodel.StepState{ID: "prune", Status: runmodel.StepExecuting}
	assert.ErrorIs(t, st.SetStatus(runmodel.StepRunning), runmodel.ErrInvalidTransition)
	assert.ErrorIs(t, st.SetStatus(runmodel.StepExecuting), runmodel.ErrInvalidTransition)
}

// TestMoves_Gate: a gate is decided once; only an approval can be voided.
func TestMoves_Gate(t *testing.T) {
	allowed := map[runmodel.GateDecision]string{
		runmodel.GatePending:  "approved rejected expired void",
		runmodel.GateApproved: "void",
	}
	for _, from := range decisions {
		for _, to := range decisions {
			want := contains(allowed[from], string(to))
			g := &runmodel.Gate{ID: "r-1/prune/1", Decision: from}
			err := g.SetDecision(to)
			if want {
				assert.NoError(t, err, "%q → %q", from, to)
			} else {
				assert.ErrorIs(t, err, runmodel.ErrInvalidTransition, "%q → %q", from, to)
				assert.Equal(t, from, g.Decision)
			}
		}
	}
}

// TestOpenCloseGate: one pending gate at a time; a pending gate is
// decided before it is closed.
func TestOpenCloseGate(t *testing.T) {
	r := &runmodel.Run{ID: "r-1"}
	g1 := &runmodel.Gate{ID: "r-1/prune/1"}
	require.NoError(t, r.OpenGate(g1))
	assert.ErrorIs(t, r.OpenGate(&runmodel.Gate{ID: "r-1/prune/2"}), runmodel.ErrInvalidTransition, "the first is still pending")
	assert.ErrorIs(t, r.CloseGate(), runmodel.ErrInvalidTransition)
	assert.Same(t, g1, r.Gate)
	require.NoError(t, g1.SetDecision(runmodel.GateVoid))
	require.NoError(t, r.OpenGate(&runmodel.Gate{ID: "r-1/prune/2"}), "a void gate is replaced")
	assert.ErrorIs(t, r.OpenGate(&runmodel.Gate{ID: "r-1/prune/3", Decision: runmodel.GateApproved}), runmodel.ErrInvalidTransition)
	require.NoError(t, r.Gate.SetDecision(runmodel.GateApproved))
	require.NoError(t, r.CloseGate())
	assert.Nil(t, r.Gate)
}

func contains(list, s string) bool { return slices.Contains(strings.Fields(list), s) }
