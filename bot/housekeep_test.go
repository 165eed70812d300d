package bot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Tick runs the store's housekeeping: a finished run past the retention
// (default 400 days) is deleted, an active one is kept, the audit chain
// still verifies.
func TestTick_Housekeeping(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	old := h.onlyRun()
	h.cmd(alice, "cancel "+old.ID+" testing")
	h.tick() // the first pass runs at once: nothing is old enough
	_, err := h.db.GetRun(h.ctx, old.ID)
	require.NoError(t, err)

	h.clock.Advance(399 * 24 * time.Hour)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.clock.Advance(2 * 24 * time.Hour)
	h.tick()
	_, err = h.db.GetRun(h.ctx, old.ID)
	assert.ErrorIs(t, err, chatmodel.ErrNotFound, "finished 401 days ago")
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, runmodel.RunAwaitingManual, runs[0].State)
	_, err = h.db.VerifyAudit(h.ctx)
	assert.NoError(t, err)
}

// Run ids are short, lower case, and found in any case.
func TestRunIDs(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	r := h.onlyRun()
	assert.Regexp(t, `^r-[0-9a-hjkmnp-tv-z]{10}$`, r.ID)
	m, ok := h.chat.Find("ssh w-0")
	require.True(t, ok)
	_ = m
	h.cmd(bob, "done "+toUpper(r.ID))
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, h.chat.Transcript())
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
