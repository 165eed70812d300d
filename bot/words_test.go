package bot_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// leaks are internal names and Go syntax that must never reach a person:
// stored states, journal entry types, platform ids in place of names, Go
// maps, raw JSON arguments.
var leaks = regexp.MustCompile(`awaiting_\w+|gate_opened|gate_decided|run_started|run_finished|step_started|step_done|manual_done|vote_refused|\bintent\b|map\[|\{"|\(U\d\)|dry_run=`)

func TestMessagesSpeakToPeople(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.clock.Advance(20e9)
	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingManual, r.State)
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)

	sum := h.eng.Summary(r, j)
	assert.Contains(t, sum.Text, "waiting for a person after 20 s")
	assert.Contains(t, sum.Detail, "the run is still waiting for a person")
	assert.Empty(t, leaks.FindAllString(sum.Text+"\n"+sum.Detail, -1), sum.Text+"\n"+sum.Detail)

	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	r = h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State)
	j, err = h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	md := bot.RunMarkdown(r, j)
	assert.Contains(t, md, "- **Outcome:** still open — waiting for approval (for ")
	assert.Contains(t, md, "run started by @alice: prune on infra-prd with worker=w-0")
	assert.Contains(t, md, "manual step answered by @bob: done")
	assert.Contains(t, md, "| waiting for approval |")
	assert.Empty(t, leaks.FindAllString(md, -1), md)

	inc := h.eng.IncidentSummary([]*runmodel.Run{r}, map[string][]runmodel.JournalEntry{r.ID: j}, nil, nil)
	assert.Contains(t, inc.Text, "prune waiting for approval")
	assert.Empty(t, leaks.FindAllString(inc.Text+"\n"+inc.Detail, -1))

	audit, err := h.db.AuditEntries(h.ctx, "")
	require.NoError(t, err)
	require.NotEmpty(t, audit)
	for _, a := range audit {
		assert.Empty(t, leaks.FindAllString(a.Detail, -1), "audit %s: %s", a.Action, a.Detail)
	}
	assert.Equal(t, "prune worker=w-0", audit[0].Detail)
}

func TestFormatParams(t *testing.T) {
	assert.Equal(t, `pipeline=app team=main why="two words"`, bot.FormatParams(map[string]string{"team": "main", "pipeline": "app", "why": "two words"}))
	assert.Equal(t, "", bot.FormatParams(nil))
}

func TestIncidentTimeline_ManualAnswersInWords(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	r := h.onlyRun()
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	inc := h.eng.IncidentSummary([]*runmodel.Run{r}, map[string][]runmodel.JournalEntry{r.ID: j}, nil, nil)
	assert.Contains(t, inc.Detail, "Check the worker: done by @bob")
	assert.NotContains(t, inc.Detail, "check: succeeded")
}
