package chatutil

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestIntentOf(t *testing.T) {
	for in, want := range map[string]chatmodel.Intent{
		"white_check_mark": chatmodel.IntentApprove, ":white_check_mark:": chatmodel.IntentApprove, "✅": chatmodel.IntentApprove,
		"+1::skin-tone-3": chatmodel.IntentApprove, "x": chatmodel.IntentReject, "❌": chatmodel.IntentReject,
		"next_track_button": chatmodel.IntentSkip, "track_next": chatmodel.IntentSkip, "⏭": chatmodel.IntentSkip, "⏭️": chatmodel.IntentSkip,
		"black_right_pointing_double_triangle_with_vertical_bar": chatmodel.IntentSkip,
		"eyes": chatmodel.IntentAcknowledge, "tada": "", "": "",
	} {
		assert.Equal(t, want, IntentOf(in), in)
	}
}

func TestSymbolAndName(t *testing.T) {
	assert.Equal(t, "✅", Symbol(chatmodel.IntentDone))
	assert.Equal(t, "❌", Symbol(chatmodel.IntentFail))
	assert.Equal(t, "⏭", Symbol(chatmodel.IntentSkip))
	assert.Equal(t, "next_track_button", Name(chatmodel.IntentSkip), "the name Mattermost 11.1 knows")
	assert.Equal(t, "", Symbol("nothing"))
	for _, r := range Reactions {
		assert.Equal(t, r.Intent, IntentOf(r.Names[0]))
		assert.Equal(t, r.Intent, IntentOf(r.Symbol))
	}
}

func TestSplit(t *testing.T) {
	assert.Equal(t, []string{"abc"}, Split("abc", 10))
	assert.Empty(t, Split(" \n ", 10), "blank gives no piece")
	t.Run("fence is closed and reopened with its language", func(t *testing.T) {
		var b strings.Builder
		b.WriteString("Builds:\n```text\n")
		for range 30 {
			b.WriteString("build-12345\n")
		}
		b.WriteString("```\nend")
		parts := Split(b.String(), 80)
		require.Greater(t, len(parts), 2)
		for i, p := range parts {
			assert.Equal(t, 0, strings.Count(p, "```")%2, "piece %d: %q", i, p)
			assert.LessOrEqual(t, utf8.RuneCountInString(p), 80)
		}
		assert.True(t, strings.HasPrefix(parts[1], "```text\n"), parts[1])
		assert.Equal(t, 30, strings.Count(strings.Join(parts, "\n"), "build-12345"))
	})
	t.Run("a very long line is cut, nothing lost", func(t *testing.T) {
		parts := Split(strings.Repeat("é", 250), 100)
		require.Len(t, parts, 3)
		assert.Equal(t, 250, utf8.RuneCountInString(strings.Join(parts, "")))
	})
}

func TestTruncate(t *testing.T) {
	assert.Equal(t, "short", Truncate("short", 100))
	got := Truncate("```\n"+strings.Repeat("x", 500), 200)
	assert.LessOrEqual(t, utf8.RuneCountInString(got), 200)
	assert.Contains(t, got, "more characters not shown")
	assert.Equal(t, 0, strings.Count(got, "```")%2, "an open fence is closed")
	assert.Equal(t, "abcd…", Ellipsis("abcdefgh", 5))
	assert.Equal(t, "abc", Ellipsis("abc", 5))
}
