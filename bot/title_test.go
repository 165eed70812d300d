package bot_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// titledRunbook names in its titles what earlier steps found.
const titledRunbook = `
name: titled
title: Titles from results
description: test
steps:
  - id: look
    kind: query
    title: Workers of {{ .target }}
    op: fake.workers
  - id: check
    kind: manual
    title: 'Check {{ .steps.look.result.stalled | join ", " | default "the stalled workers" }}'
    text: ssh
  - id: again
    kind: query
    title: Workers again
    op: fake.workers
  - id: last
    kind: manual
    title: 'Still stalled: {{ .steps.again.result.stalled | join ", " | default "(not looked yet)" }}'
    text: look
`

func titledHarness(t *testing.T, world *bottest.World) *harness {
	return newHarness(t, world, func(o *bot.Options) {
		reg, err := opmodel.NewRegistry(core.Provider{}, world)
		require.NoError(t, err)
		lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{"titled.yaml": {Data: []byte(titledRunbook)}}})
		require.NoError(t, err)
		o.Library, o.Ops = lib, reg
	})
}

func stepTitles(r *runmodel.Run) map[string]string {
	out := map[string]string{}
	for _, st := range r.Steps {
		out[st.ID] = st.Title
	}
	return out
}

// TestTitles_RenderedWhenTheStepStarts checks that a title naming an
// earlier step's result shows it once that step ran — in the step's
// heading, the run's status and the summary — shows its fallback before,
// and is kept as it was when its step started, across a restart.
func TestTitles_RenderedWhenTheStepStarts(t *testing.T) {
	world := bottest.NewWorld(map[string]string{"w-0": "stalled", "w-1": "running"})
	h := titledHarness(t, world)

	h.cmd(alice, "show titled")
	show := last(h.chat.Ephemerals(alice.ID))
	assert.Contains(t, show, "2. Check the stalled workers (manual)")
	assert.Contains(t, show, "4. Still stalled: (not looked yet) (manual)")
	assert.Contains(t, show, "1. Workers of the target (query")

	h.cmd(alice, "run titled target=infra-prd")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingManual, r.State, h.chat.Transcript())
	assert.Equal(t, map[string]string{"look": "Workers of infra-prd", "check": "Check w-0", "again": "Workers again",
		"last": "Still stalled: (not looked yet)"}, stepTitles(r))
	heading, ok := h.chat.Find("*Check w-0*")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, heading.Msg.Text, "2/4 ✋ *Check w-0*")

	// w-0 comes back, w-1 stalls; after a restart the started step keeps its title.
	world.Set("w-0", "running")
	world.Set("w-1", "stalled")
	h.restart()
	assert.Equal(t, "Check w-0", stepTitles(h.onlyRun())["check"])
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	r = h.onlyRun()
	assert.Equal(t, map[string]string{"look": "Workers of infra-prd", "check": "Check w-0", "again": "Workers again",
		"last": "Still stalled: w-1"}, stepTitles(r))
	h.react(bob, h.stepRef("last"), chatmodel.IntentDone)
	r = h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())

	summary, ok := h.chat.Find("finished after")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, summary.Msg.Detail, "2. ✅ Check w-0 — done by @bob")
	assert.Contains(t, summary.Msg.Detail, "4. ✅ Still stalled: w-1 — done by @bob")
	assert.NotContains(t, h.chat.Transcript(), "<no value>")
	assert.NotContains(t, h.chat.Transcript(), "{{")
}
