package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// A long destructive call reports progress: the step message is edited in
// place, at most every ProgressInterval, and the outcome replaces it.
func TestProgress_EditsTheStepMessageRateLimited(t *testing.T) {
	w := bottest.NewWorld(map[string]string{"w-0": "stalled", "w-1": "running"})
	h := newHarness(t, w, nil)
	var stored []string
	w.Progress = func(report func(string)) {
		report("pruning 1 / 3 · 10/s")
		r, err := h.db.GetRun(context.Background(), h.onlyRun().ID)
		require.NoError(t, err)
		stored = append(stored, r.Step("prune").Progress)
		h.clock.Advance(time.Second)
		report("pruning 2 / 3 · 10/s") // within the interval: not shown
		h.clock.Advance(bot.ProgressInterval)
		report("pruning 3 / 3 · 10/s")
	}
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	require.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())

	ref := h.stepRef("prune")
	var posted bottest.Posted
	for _, p := range h.chat.Posts() {
		if p.Ref.ID == ref.ID {
			posted = p
		}
	}
	var versions []string
	for _, m := range posted.History {
		versions = append(versions, m.Text)
	}
	all := strings.Join(versions, "\n---\n")
	assert.Contains(t, all, "⏳ pruning 1 / 3 · 10/s")
	assert.NotContains(t, all, "pruning 2 / 3", "rate-limited")
	assert.Contains(t, all, "⏳ pruning 3 / 3 · 10/s")
	assert.NotContains(t, posted.Msg.Text, "⏳", "the outcome replaces the progress")
	assert.Contains(t, posted.Msg.Text, "pruned")
	assert.Equal(t, []string{"pruning 1 / 3 · 10/s"}, stored, "the progress is stored while the call runs (the run's page reads it)")
	assert.Empty(t, h.onlyRun().Step("prune").Progress, "and cleared when the step is done")
}
