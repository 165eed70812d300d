package slack

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// fakeClock is a fixed clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func TestGroupMembers(t *testing.T) {
	f := newFakeSlack(t)
	clock := &fakeClock{t: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)}
	a, err := New(Config{BotToken: testBotToken, AppToken: testAppToken, UsergroupCacheTTL: 10 * time.Minute},
		Options{APIURL: f.url(), Now: clock.now, Logger: testLogger(t)})
	require.NoError(t, err)
	ctx := context.Background()

	for _, name := range []string{"group:ci-oncall", "@ci-oncall", "CI-Oncall", "S0CIONCALL"} {
		t.Run(name, func(t *testing.T) {
			got, err := a.GroupMembers(ctx, name)
			require.NoError(t, err)
			assert.Equal(t, []string{"UBOB", "UCAROL"}, got)
		})
	}
	assert.Len(t, f.callsTo("usergroups.list"), 1, "handles cached")
	// Members are cached (with a stale fallback) by the engine's directory,
	// the one group cache: bot.TestDirectory_GroupCache.
	assert.Len(t, f.callsTo("usergroups.users.list"), 4, "members asked each time")

	t.Run("unknown group", func(t *testing.T) {
		_, err := a.GroupMembers(ctx, "group:nobody")
		require.ErrorIs(t, err, chatmodel.ErrNotFound)
		assert.Contains(t, err.Error(), "@nobody")
	})

	t.Run("a typo says did you mean", func(t *testing.T) {
		_, err := a.GroupMembers(ctx, "group:ci-oncal")
		require.ErrorIs(t, err, chatmodel.ErrNotFound)
		var s interface{ DidYouMean() string }
		require.ErrorAs(t, err, &s)
		assert.Equal(t, "ci-oncall", s.DidYouMean())
		_, err = a.ResolveUser(ctx, "@caorl")
		require.ErrorIs(t, err, chatmodel.ErrNotFound)
		require.ErrorAs(t, err, &s)
		assert.Equal(t, "carol", s.DidYouMean())
	})

	t.Run("returned slice is a copy", func(t *testing.T) {
		got, err := a.GroupMembers(ctx, "S0CIONCALL")
		require.NoError(t, err)
		got[0] = "UEVE"
		again, err := a.GroupMembers(ctx, "S0CIONCALL")
		require.NoError(t, err)
		assert.Equal(t, "UBOB", again[0])
	})
}

func TestReadThread(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	runAdapter(t, a, newRecorder())
	ctx := context.Background()

	root, err := a.Post(ctx, chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "🛠 worker-stalled on infra-prd"})
	require.NoError(t, err)
	_, err = a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS", Thread: root.ID}, chatmodel.Message{Text: "1/6 ✅ Workers <3>", Detail: "3 running"})
	require.NoError(t, err)

	msgs, err := a.ReadThread(ctx, chatmodel.Conversation{Platform: Platform, Channel: "#ci-ops", Thread: root.ID})
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "🛠 worker-stalled on infra-prd", msgs[0].Text)
	assert.Equal(t, "1/6 ✅ Workers <3>\n3 running", msgs[1].Text, "block texts, unescaped")
	assert.True(t, msgs[1].Bot)
	assert.Equal(t, chatmodel.User{ID: fakeBotUserID, Name: "groundcrew"}, msgs[0].Author)
	assert.False(t, msgs[0].Time.IsZero())
	assert.True(t, !msgs[1].Time.Before(msgs[0].Time))

	_, err = a.ReadThread(ctx, chatmodel.Conversation{Channel: "C0OPS"})
	require.ErrorIs(t, err, ErrInvalidMessage)
}

func TestTSTime(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
	}{
		{"1795979057.000200", time.Unix(1795979057, 200000).UTC()},
		{"1795979057", time.Unix(1795979057, 0).UTC()},
		{"", time.Time{}},
		{"nope", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, tsTime(tt.in))
		})
	}
}
