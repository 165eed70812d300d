package bot_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func TestParse_Verbs(t *testing.T) {
	c, err := bot.Parse("APPROVE R-5FB1 looks fine")
	require.NoError(t, err)
	assert.Equal(t, bot.VerbApprove, c.Verb)
	assert.Equal(t, "r-5fb1", c.Name, "run ids are case-insensitive")
	assert.Equal(t, "looks fine", c.Rest)
	c, err = bot.Parse("show Worker-Stalled")
	require.NoError(t, err)
	assert.Equal(t, "Worker-Stalled", c.Name, "a runbook name is not a run id")
	c, err = bot.Parse("")
	require.NoError(t, err)
	assert.Equal(t, bot.VerbHelp, c.Verb)
}

func TestParse_Limits(t *testing.T) {
	_, err := bot.Parse("run prune who=" + strings.Repeat("x", bot.MaxCommandBytes))
	var ue *chatmodel.UserError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Msg, "the limit is 16 KiB")
	assert.Less(t, len(ue.Msg), 200)

	_, err = bot.Parse("run prune" + strings.Repeat(" a=b", bot.MaxWords))
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Msg, "the limit is 200")

	_, err = bot.Parse(strings.Repeat("z", 5000))
	require.ErrorAs(t, err, &ue)
	assert.Less(t, len(ue.Msg), 200, "an unknown verb is not echoed whole")
}

// #19.6: a parameter with a bidi override is refused by default, and a
// reason with one reaches the gate escaped.
func TestEngine_SpoofingCharacters(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-\u202e0")
	eph := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, eph)
	assert.Contains(t, eph[len(eph)-1], `parameter "worker": character 3 is U+202E RIGHT-TO-LEFT OVERRIDE`)
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs)

	h.cmd(alice, "run prune target=infra-prd worker="+strings.Repeat("w", 2000))
	eph = h.chat.Ephemerals(alice.ID)
	assert.Contains(t, eph[len(eph)-1], "the limit is 1024")
	assert.Less(t, len(eph[len(eph)-1]), 400)

	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	m, ok := h.chat.Find("ssh w-0")
	require.True(t, ok)
	h.react(bob, m.Ref, chatmodel.IntentApprove)
	r := h.onlyRun()
	h.cmd(carol, "reject "+r.ID+" \"not now\u202e\u200b\"")
	for _, p := range h.chat.Posts() {
		for _, v := range p.History {
			assert.NotContains(t, v.Text, "\u202e")
			assert.NotContains(t, v.Text, "\u200b")
		}
	}
	_, ok = h.chat.Find("not now<U+202E><U+200B>")
	assert.True(t, ok, h.chat.Transcript())
}
