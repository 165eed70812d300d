package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// TestRunLink_InTheRootAtEveryEditAndInASummary: with a run page, the
// root message links to it from its first post through every edit, and
// `/runbook summary <run>` gives the link again.
func TestRunLink_InTheRootAtEveryEditAndInASummary(t *testing.T) {
	var asked []time.Time
	h := newHarness(t, bottest.NewWorld(map[string]string{"w-0": "stalled", "w-1": "running"}), func(o *bot.Options) {
		o.RunLink = func(id string, started time.Time) string {
			asked = append(asked, started)
			return "https://gc.example.com/runs/" + id + "?t=tok"
		}
	})
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	r := h.onlyRun()
	var root *bottest.Posted
	for _, p := range h.chat.Posts() {
		if p.Ref == r.Root {
			root = &p
		}
	}
	require.NotNil(t, root, h.chat.Transcript())
	want := &chatmodel.Link{URL: "https://gc.example.com/runs/" + r.ID + "?t=tok", Label: "Run page"}
	assert.Equal(t, want, root.Msg.Link)
	require.Positive(t, root.Edits, "the root was edited as the run moved")
	for _, m := range root.History {
		assert.Equal(t, want, m.Link, "every edit keeps the link")
	}
	for _, s := range asked {
		assert.True(t, s.Equal(r.CreatedAt), "the link is asked for the run's start")
	}
	h.cmd(bob, "summary "+r.ID)
	posts := h.chat.Posts()
	last := posts[len(posts)-1]
	assert.True(t, strings.HasPrefix(last.Msg.Text, "📋 *Summary*"), last.Msg.Text)
	assert.Equal(t, want, last.Msg.Link)
}
