package bot_test

import (
	"strings"
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

// A write call without an approval (unpause a pipeline, re-check a
// resource type…) is a change like any other: it is listed in the
// summary, the export and the end-of-run message.
const unapprovedWrite = `
name: toucher-direct
title: Touch without approval
description: test
steps:
  - id: look
    kind: query
    title: Look
    op: fake.workers
  - id: touch
    kind: action
    title: Touch the pipeline
    op: fake.touch
    args: {name: app}
`

const readOnly = `
name: looker
title: Look only
description: test
steps:
  - id: look
    kind: query
    title: Look
    op: fake.workers
`

func changesHarness(t *testing.T) *harness {
	world := bottest.NewWorld(map[string]string{"w-0": "running"})
	return newHarness(t, world, func(o *bot.Options) {
		reg, err := opmodel.NewRegistry(core.Provider{}, world)
		require.NoError(t, err)
		lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{
			"w.yaml": {Data: []byte(unapprovedWrite)},
			"r.yaml": {Data: []byte(readOnly)},
		}})
		require.NoError(t, err)
		o.Library, o.Ops = lib, reg
	})
}

func TestChanges_WriteWithoutApprovalIsListed(t *testing.T) {
	h := changesHarness(t)
	h.cmd(alice, "run toucher-direct target=infra-prd")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)

	assert.Equal(t, []bot.Change{{Step: "touch", Text: "touched app"}}, bot.RunChanges(r, j))

	sum := h.eng.Summary(r, j)
	assert.Contains(t, sum.Text, "\nChanges: touched app")
	assert.NotContains(t, sum.Text, "Changes: none")
	assert.NotContains(t, sum.Detail, "Changes made", "said once, in the summary's text")

	md := bot.RunMarkdown(r, j)
	assert.Contains(t, md, "- **Changes made:**\n  - Touch the pipeline: touched app\n")

	final, ok := h.chat.Find("finished after")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, final.Msg.Text, " — touched app")
}

func TestChanges_ReadOnlyRunSaysNothingChanged(t *testing.T) {
	h := changesHarness(t)
	h.cmd(alice, "run looker target=infra-prd")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	assert.Empty(t, bot.RunChanges(r, j))
	assert.Contains(t, h.eng.Summary(r, j).Text, "Changes: none")
	assert.Contains(t, bot.RunMarkdown(r, j), "- **Changes made:** none\n")
	final, ok := h.chat.Find("finished after")
	require.True(t, ok)
	assert.Contains(t, final.Msg.Text, " — nothing was changed")
}

// A call that failed may have changed part of its plan: the end-of-run
// message and the posted summary list the attempt, although the failure
// is what ended the run.
func TestChanges_FailedCallIsListedInThePostedMessages(t *testing.T) {
	w := stalledWorld()
	w.FailApply = errString("infra-prd: prune worker \"w-0\": 500 Internal Server Error")
	h := newHarness(t, w, nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	require.Equal(t, runmodel.RunFailed, h.onlyRun().State, h.chat.Transcript())

	final, ok := h.chat.Find("failed at step 3/4 after")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, final.Msg.Text, "— attempted prune 1 worker — failed (approved by @carol)")
	// The error is said once, on the step; not in the final message, not
	// in the change.
	assert.Equal(t, 1, strings.Count(h.chat.Transcript(), "500 Internal Server Error"), h.chat.Transcript())
	assert.NotContains(t, final.Msg.Text, "500 Internal Server Error")
	j0, err := h.db.Journal(h.ctx, h.onlyRun().ID)
	require.NoError(t, err)
	assert.Contains(t, h.eng.Summary(h.onlyRun(), j0).Text, "\nChanges: attempted prune 1 worker — failed", "/runbook summary")

	j, err := h.db.Journal(h.ctx, h.onlyRun().ID)
	require.NoError(t, err)
	var outcomes []runmodel.CallOutcome
	for _, e := range j {
		if e.Type == runmodel.JOutcome {
			outcomes = append(outcomes, e.Outcome)
		}
	}
	assert.Equal(t, []runmodel.CallOutcome{runmodel.CallFailed}, outcomes)
}
