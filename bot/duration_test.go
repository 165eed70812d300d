package bot

import (
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/stretchr/testify/assert"
)

// A run's duration says how much of it was waiting for approval (issue
// 26: "Status: ✅ succeeded · 12 s" counted the wait for approval).
func TestRunDuration_SaysTheApprovalWait(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC)
	r := &runmodel.Run{ID: "r-1", Runbook: "prune-stalled", Target: "infra-prd", State: runmodel.RunSucceeded, CreatedAt: start,
		FinishedAt: start.Add(12 * time.Second), Gate: &runmodel.Gate{RequestedAt: start.Add(2 * time.Second)}}
	r.NoteGateDecided(start.Add(10 * time.Second))
	assert.Equal(t, 8*time.Second, r.ApprovalWait)
	assert.Contains(t, renderRoot(r, start.Add(time.Hour)).Text, "Status: ✅ succeeded · 12 s (8 s waiting for approval)")
	assert.Contains(t, renderFinal(r, nil, start.Add(time.Hour)).Text, "after 12 s (8 s waiting for approval)")

	r.ApprovalWait = 0
	assert.Contains(t, renderRoot(r, start.Add(time.Hour)).Text, "Status: ✅ succeeded · 12 s")
	assert.NotContains(t, renderRoot(r, start.Add(time.Hour)).Text, "approval")
}
