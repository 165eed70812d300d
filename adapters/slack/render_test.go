package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestMrkdwn(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bold kept", "*worker-stalled* on `infra-prd`", "*worker-stalled* on `infra-prd`"},
		{"markdown bold converted", "**Approval needed** now", "*Approval needed* now"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"no mention injection", "<!channel> <@U123>", "&lt;!channel&gt; &lt;@U123&gt;"},
		{"code untouched but escaped", "`a**b` and ```\nx ** y <z>\n```", "`a**b` and ```\nx ** y &lt;z&gt;\n```"},
		{"crlf", "a\r\nb", "a\nb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, mrkdwn(tt.in))
		})
	}
}

func TestSplitMrkdwn(t *testing.T) {
	line := strings.Repeat("x", 99)
	lines := make([]string, 100)
	for i := range lines {
		lines[i] = line
	}
	long := strings.Join(lines, "\n") // 9999 runes

	tests := []struct {
		name   string
		in     string
		limit  int
		chunks int
	}{
		{"short is one chunk", "hello", 100, 1},
		{"blank is none", " \n ", 100, 0},
		{"lines", long, 1000, 12},                      // 9 lines of 100 fit in 996
		{"fenced", "```\n" + long + "\n```", 1000, 12}, // same, fences reopened
		{"one huge line", strings.Repeat("é", 2500), 1000, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chatutil.Split(tt.in, tt.limit)
			require.Equal(t, tt.chunks, len(got))
			var joined []string
			for _, c := range got {
				assert.LessOrEqual(t, utf8.RuneCountInString(c), tt.limit)
				assert.Equal(t, 0, strings.Count(c, fence)%2, "every chunk has balanced fences: %q…", c[:min(len(c), 20)])
				joined = append(joined, strings.TrimSuffix(strings.TrimPrefix(c, "```\n"), "\n```"))
			}
			if tt.chunks > 0 && !strings.Contains(tt.in, fence) {
				assert.Equal(t, strings.ReplaceAll(tt.in, "\n", ""), strings.ReplaceAll(strings.Join(joined, ""), "\n", ""), "nothing lost")
			}
		})
	}

	t.Run("fenced content kept whole", func(t *testing.T) {
		got := chatutil.Split("```\n"+long+"\n```", 1000)
		var n int
		for _, c := range got {
			n += strings.Count(c, line)
		}
		assert.Equal(t, 100, n)
	})
}

func TestRender(t *testing.T) {
	longDetail := strings.Repeat("build 12345 failed\n", 400) // ~7600 chars

	t.Run("text, short detail, buttons", func(t *testing.T) {
		r, err := render(chatmodel.Message{
			Text:   "🔒 *Approval needed* — prune worker `w-0`",
			Detail: "Plan hash 9c1e",
			Buttons: []chatmodel.Button{
				{Action: "approve", Label: "Approve", Value: "r1/5", Style: "primary"},
				{Action: "reject", Label: "Reject", Value: "r1/5", Style: "danger"},
			},
		})
		require.NoError(t, err)
		assert.Empty(t, r.replies)
		require.Len(t, r.main.blocks, 3)
		assert.Equal(t, "🔒 *Approval needed* — prune worker `w-0`", r.main.text)

		sec := r.main.blocks[0].(*slackapi.SectionBlock)
		assert.Equal(t, slackapi.MarkdownType, sec.Text.Type)
		ctx := r.main.blocks[1].(*slackapi.ContextBlock)
		assert.Equal(t, "Plan hash 9c1e", ctx.ContextElements.Elements[0].(*slackapi.TextBlockObject).Text)
		act := r.main.blocks[2].(*slackapi.ActionBlock)
		require.Len(t, act.Elements.ElementSet, 2)
		approve := act.Elements.ElementSet[0].(*slackapi.ButtonBlockElement)
		assert.Equal(t, "approve", approve.ActionID)
		assert.Equal(t, "r1/5", approve.Value)
		assert.Equal(t, slackapi.StylePrimary, approve.Style)
		assert.Equal(t, slackapi.StyleDanger, act.Elements.ElementSet[1].(*slackapi.ButtonBlockElement).Style)

		// The JSON Slack receives has no block_id (Slack makes fresh ones per
		// update).
		b, err := json.Marshal(r.main.blocks)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "block_id")
	})

	t.Run("long detail goes to code-block replies", func(t *testing.T) {
		r, err := render(chatmodel.Message{Text: "Purged 400 builds", Detail: longDetail})
		require.NoError(t, err)
		require.Len(t, r.main.blocks, 1)
		require.NotEmpty(t, r.replies)
		var n int
		for _, rep := range r.replies {
			for _, b := range rep.blocks {
				txt := b.(*slackapi.SectionBlock).Text.Text
				assert.True(t, strings.HasPrefix(txt, "```\n") && strings.HasSuffix(txt, "\n```"), "code block")
				assert.LessOrEqual(t, utf8.RuneCountInString(txt), 3000)
				n += strings.Count(txt, "build 12345 failed")
			}
		}
		assert.Equal(t, 400, n, "every line of the detail is posted")
	})

	t.Run("huge text overflows into replies", func(t *testing.T) {
		text := strings.Repeat(strings.Repeat("y", 90)+"\n", 400) // 36400 chars, > 10 sections
		r, err := render(chatmodel.Message{Text: text})
		require.NoError(t, err)
		assert.Len(t, r.main.blocks, sectionsPerMsg)
		require.NotEmpty(t, r.replies)
		var n int
		for _, m := range r.flatten() {
			for _, b := range m.blocks {
				n += strings.Count(b.(*slackapi.SectionBlock).Text.Text, strings.Repeat("y", 90))
			}
		}
		assert.Equal(t, 400, n)
	})

	t.Run("many buttons split into actions blocks", func(t *testing.T) {
		var bs []chatmodel.Button
		for i := range 30 {
			bs = append(bs, chatmodel.Button{Action: chatmodel.Intent("a" + string(rune('A'+i))), Label: strings.Repeat("L", 100)})
		}
		r, err := render(chatmodel.Message{Text: "pick", Buttons: bs})
		require.NoError(t, err)
		require.Len(t, r.main.blocks, 3)
		assert.Len(t, r.main.blocks[1].(*slackapi.ActionBlock).Elements.ElementSet, 25)
		assert.Len(t, r.main.blocks[2].(*slackapi.ActionBlock).Elements.ElementSet, 5)
		label := r.main.blocks[1].(*slackapi.ActionBlock).Elements.ElementSet[0].(*slackapi.ButtonBlockElement).Text.Text
		assert.Equal(t, buttonLabelLimit, utf8.RuneCountInString(label))
	})

	t.Run("only detail", func(t *testing.T) {
		r, err := render(chatmodel.Message{Detail: longDetail})
		require.NoError(t, err)
		assert.NotEmpty(t, r.main.blocks)
		assert.NotEmpty(t, r.main.text)
	})

	invalid := []struct {
		name string
		m    chatmodel.Message
	}{
		{"empty", chatmodel.Message{}},
		{"button without action", chatmodel.Message{Text: "x", Buttons: []chatmodel.Button{{Label: "Go"}}}},
		{"button value too long", chatmodel.Message{Text: "x", Buttons: []chatmodel.Button{{Action: "go", Value: strings.Repeat("v", 2001)}}}},
		{"action too long", chatmodel.Message{Text: "x", Buttons: []chatmodel.Button{{Action: chatmodel.Intent(strings.Repeat("a", 256))}}}},
	}
	for _, tt := range invalid {
		t.Run("invalid: "+tt.name, func(t *testing.T) {
			_, err := render(tt.m)
			require.ErrorIs(t, err, ErrInvalidMessage)
		})
	}
}

// Mentions ping: user ids become <@U…> before the text; anything else is dropped.
func TestRender_Mentions(t *testing.T) {
	r, err := render(chatmodel.Message{Text: "🔔 Escalation <b>", Mentions: []string{"U0123ABC", "<!channel>", "W0456DEF"}})
	require.NoError(t, err)
	assert.Equal(t, "<@U0123ABC> <@W0456DEF> 🔔 Escalation &lt;b&gt;", r.main.text)
}
