package scenario

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// TestBuiltin_ErrorSaidOnce: a failed run says its error in full once —
// on the step that failed (a gate in its own words: rejected by whom and
// why, expired after how long) — and the root status, the summary and the
// end message point at that step instead of repeating it.
func TestBuiltin_ErrorSaidOnce(t *testing.T) {
	checked := 0
	for id, res := range playBuiltin(t) {
		r := res.Run
		if r == nil || r.State != runmodel.RunFailed || r.Error == "" {
			continue
		}
		var stop *runmodel.StepState
		for i := len(r.Steps) - 1; i >= 0; i-- {
			st := &r.Steps[i]
			if st.Status == runmodel.StepFailed && st.Error != "" && (strings.HasPrefix(r.Error, "step "+st.ID+" failed") || st.Error == r.Error) {
				stop = st
				break
			}
		}
		if stop == nil {
			continue
		}
		checked++
		gate := r.Gate != nil && r.Gate.StepID == stop.ID && (r.Gate.Decision == runmodel.GateRejected || r.Gate.Decision == runmodel.GateExpired)
		// What must not be said again: the step's error; of a rejection,
		// its reason (the gate shows it with the vote, the summary's
		// details list the votes).
		said, again := false, stop.Error
		if gate {
			_, again, _ = strings.Cut(stop.Error, ": ")
		}
		place := "step " + stepNumber(r, stop.ID)
		for _, m := range res.Messages {
			switch m.Role {
			case chatmodel.RoleRoot, chatmodel.RoleSummary, chatmodel.RoleFinal:
				if again != "" {
					assert.NotContains(t, m.Text, again, "%s: the %s message repeats the error of step %s", id, m.Role, stop.ID)
				}
				assert.Contains(t, m.Text, place, "%s: the %s message does not point at step %s", id, m.Role, stop.ID)
				for _, line := range strings.Split(m.Detail, "\n") {
					if strings.HasPrefix(line, stepNumber(r, stop.ID)[:strings.Index(stepNumber(r, stop.ID), "/")]+". ") {
						assert.NotContains(t, line, stop.Error, "%s: the summary's list of steps repeats the error of step %s", id, stop.ID)
					}
				}
			case chatmodel.RoleStep:
				if m.Step == stop.ID && strings.Contains(m.Text, stop.Error) {
					said = true
				}
			}
		}
		if !gate {
			assert.True(t, said, "%s: the message of step %s does not say its error %q:\n%s", id, stop.ID, stop.Error, res.Transcript)
		}
	}
	assert.Greater(t, checked, 10, "the built-in scenarios have failed runs to check")
}

// stepNumber is "3/9" for the step with id in r.
func stepNumber(r *runmodel.Run, id string) string {
	for i := range r.Steps {
		if r.Steps[i].ID == id {
			return fmt.Sprintf("%d/%d", i+1, len(r.Steps))
		}
	}
	return "?"
}

// TestBuiltin_SkipsSaidInWords: every step a built-in skips on its own
// (a when that is false) says why in words — its because — never the
// expression, never the generic sentence of a runbook without one.
func TestBuiltin_SkipsSaidInWords(t *testing.T) {
	skips := 0
	for id, res := range playBuiltin(t) {
		if res.Run == nil {
			continue
		}
		for _, st := range res.Run.Steps {
			if st.Status != runmodel.StepSkipped || st.By != nil || !strings.HasPrefix(st.Summary, "skipped: ") {
				continue
			}
			skips++
			why := strings.TrimPrefix(st.Summary, "skipped: ")
			assert.NotEqual(t, "its condition was not met", why, "%s: step %s has no because", id, st.ID)
			for _, expr := range []string{"steps.", "params.", "==", "!=", "&&", "||", "<no value>", "…"} {
				assert.NotContains(t, why, expr, "%s: step %s is skipped with %q", id, st.ID, st.Summary)
			}
		}
	}
	assert.Greater(t, skips, 20, "the built-in scenarios skip steps to check")
}
