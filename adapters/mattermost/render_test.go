package mattermost

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestToMarkdown(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"bold", "*worker-stalled* on infra-prd", "**worker-stalled** on infra-prd"},
		{"two bolds", "*a* and *b c*", "**a** and **b c**"},
		{"already double", "**x** stays", "**x** stays"},
		{"bullet", "* one\n* two", "* one\n* two"},
		{"inline code", "run `ls *.go` now *ok*", "run `ls *.go` now **ok**"},
		{"code block", "```\n*not bold*\n```\n*bold*", "```\n*not bold*\n```\n**bold**"},
		{"arithmetic", "2*3*4", "2*3*4"},
		{"lone star", "rating * good", "rating * good"},
		{"emoji and unicode", "✅ *Pruned* `w0` — done", "✅ **Pruned** `w0` — done"},
		{"unclosed", "*open only", "*open only"},
		// Slack's ~struck~ is a channel link on Mattermost (~town-square).
		{"struck", "• ~`mountpoint=/vol49` — 2% left~ (gone)", "• ~~`mountpoint=/vol49` — 2% left~~ (gone)"},
		{"already struck", "~~x~~ stays", "~~x~~ stays"},
		{"home dirs", "ssh in, then cd ~/work and ~/logs", "ssh in, then cd ~/work and ~/logs"},
		{"lone tilde", "about ~5 min", "about ~5 min"},
		{"struck and bold", "*1 gone*: ~vol49~", "**1 gone**: ~~vol49~~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, toMarkdown(tt.in))
		})
	}
}

func TestSplitChunks(t *testing.T) {
	t.Run("short text is one piece", func(t *testing.T) {
		assert.Equal(t, []string{"abc"}, chatutil.Split("abc", 10))
	})
	t.Run("splits at lines and keeps everything", func(t *testing.T) {
		var lines []string
		for i := 0; i < 50; i++ {
			lines = append(lines, strings.Repeat("x", 9))
		}
		in := strings.Join(lines, "\n")
		parts := chatutil.Split(in, 60)
		require.Greater(t, len(parts), 1)
		for _, p := range parts {
			assert.LessOrEqual(t, utf8.RuneCountInString(p), 60)
		}
		assert.Equal(t, strings.Count(in, "x"), strings.Count(strings.Join(parts, ""), "x"), "nothing dropped")
	})
	t.Run("fence is closed and reopened", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("Builds:\n```text\n")
		for i := 0; i < 30; i++ {
			b.WriteString("build-12345\n")
		}
		b.WriteString("```\nend")
		parts := chatutil.Split(b.String(), 80)
		require.Greater(t, len(parts), 2)
		for i, p := range parts {
			assert.Equal(t, 0, strings.Count(p, "```")%2, "piece %d has balanced fences: %q", i, p)
			assert.LessOrEqual(t, utf8.RuneCountInString(p), 80)
		}
		assert.True(t, strings.HasPrefix(parts[1], "```text\n"), parts[1])
		assert.Equal(t, 30, strings.Count(strings.Join(parts, "\n"), "build-12345"))
	})
	t.Run("a very long line is cut", func(t *testing.T) {
		parts := chatutil.Split(strings.Repeat("é", 250), 100)
		require.Len(t, parts, 3)
		assert.Equal(t, 250, utf8.RuneCountInString(strings.Join(parts, "")))
	})
}

func TestRender(t *testing.T) {
	long := strings.Repeat("line of text\n", 2000) // 26000 runes
	tests := []struct {
		name         string
		m            chatmodel.Message
		update       bool
		wantDetail   bool
		wantOverflow int
		wantNote     string
	}{
		{name: "plain", m: chatmodel.Message{Text: "*hi*"}},
		{name: "detail as attachment", m: chatmodel.Message{Text: "t", Detail: "d"}, wantDetail: true},
		{name: "long text moves to replies", m: chatmodel.Message{Text: long}, wantOverflow: 1, wantNote: "continued in the thread"},
		{name: "long detail moves to replies", m: chatmodel.Message{Text: "t", Detail: long}, wantOverflow: 2},
		{name: "long text in update is truncated with a note", m: chatmodel.Message{Text: long}, update: true, wantNote: "more characters not shown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := render(tt.m, tt.update)
			assert.LessOrEqual(t, utf8.RuneCountInString(r.message), 16383)
			assert.Equal(t, tt.wantDetail, r.detail != "")
			assert.Len(t, r.overflow, tt.wantOverflow)
			if tt.wantNote != "" {
				assert.Contains(t, r.message, tt.wantNote)
			}
			for _, o := range r.overflow {
				assert.LessOrEqual(t, utf8.RuneCountInString(o), 16383)
			}
		})
	}
}

func TestActionID(t *testing.T) {
	assert.Equal(t, "b0approve", actionID(0, "approve"))
	assert.Equal(t, "b1gateapprove", actionID(1, "gate.approve_step"[:12]))
	id := actionID(12, "a-very_long.action:name-with-many-characters")
	assert.Regexp(t, `^[A-Za-z0-9]{1,26}$`, id)
}
