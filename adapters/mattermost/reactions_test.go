package mattermost

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// postGate posts a root message and a gate reply as the engine would.
func postGate(t *testing.T, a *Adapter) (root, gate chatmodel.MessageRef) {
	t.Helper()
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "run"})
	require.NoError(t, err)
	gate, err = a.Post(ctx, chatmodel.Conversation{Channel: channelID, Thread: root.ID}, chatmodel.Message{Text: "🔒 Approval needed"})
	require.NoError(t, err)
	return root, gate
}

func reactionID(post, user, emoji, verb string, at int64) string {
	return fmt.Sprintf("reaction:%s:%s:%s:%s:%d", post, user, emoji, verb, at)
}

func TestReactions_LiveEvents(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	root, gate := postGate(t, a)

	f.sendReaction(f.react(gate.ID, carolID, "white_check_mark", false, 1000), false)
	e := rec.next(t)
	assert.Equal(t, chatmodel.EventReaction, e.Kind)
	assert.Equal(t, reactionID(gate.ID, carolID, "white_check_mark", "added", 1000), e.ID)
	assert.Equal(t, chatmodel.User{ID: carolID, Name: "carol"}, e.User)
	assert.Equal(t, chatmodel.IntentApprove, e.Intent)
	assert.False(t, e.Removed)
	assert.Equal(t, gate, e.Message, "Message is the ref Post returned")
	assert.Equal(t, chatmodel.Conversation{Platform: Platform, Channel: channelID, Thread: root.ID}, e.Conversation)
	assert.Equal(t, time.UnixMilli(1000), e.Time)

	// Removal: the event's channel_id is empty (as on a real server) and its
	// id pairs with the addition it undoes.
	f.sendReaction(f.react(gate.ID, carolID, "white_check_mark", true, 2000), true)
	e = rec.next(t)
	assert.True(t, e.Removed)
	assert.Equal(t, reactionID(gate.ID, carolID, "white_check_mark", "removed", 1000), e.ID)
	assert.Equal(t, channelID, e.Message.Channel, "channel taken from the broadcast")

	// The bot's own reactions are ignored.
	f.sendReaction(f.react(gate.ID, botID, "eyes", false, 3000), false)
	rec.none(t, 100*time.Millisecond)

	// Reactions on messages the adapter did not post still arrive.
	other := f.addPost(&model.Post{ChannelId: channelID, UserId: aliceID, Message: "hi"})
	f.sendReaction(f.react(other.Id, aliceID, "+1", false, 4000), false)
	e = rec.next(t)
	assert.Equal(t, chatmodel.MessageRef{Platform: Platform, Channel: channelID, ID: other.Id}, e.Message)
	assert.Equal(t, chatmodel.IntentApprove, e.Intent)
}

func TestReactions_ReconnectRereads(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	_, gate := postGate(t, a)

	// Seen live before the drop.
	f.sendReaction(f.react(gate.ID, carolID, "white_check_mark", false, 1000), false)
	liveAdd := rec.next(t)
	f.sendReaction(f.react(gate.ID, aliceID, "eyes", false, 1100), false)
	rec.next(t)

	f.dropWS()
	// While disconnected: carol's ✅ is removed, alice re-adds 👀 (new
	// update_at), and a new ❌ and the bot's own reaction appear.
	f.react(gate.ID, carolID, "white_check_mark", true, 2000)
	f.react(gate.ID, aliceID, "eyes", false, 2100)
	f.react(gate.ID, carolID, "x", false, 2200)
	f.react(gate.ID, botID, "robot", false, 2300)

	require.Eventually(t, func() bool { return f.wsConnectCount() >= 2 }, 5*time.Second, 5*time.Millisecond)
	got := map[string]chatmodel.Event{}
	for i := 0; i < 4; i++ {
		e := rec.next(t)
		got[e.ID] = e
	}
	rec.none(t, 100*time.Millisecond)
	want := []string{
		reactionID(gate.ID, carolID, "white_check_mark", "removed", 1000),
		reactionID(gate.ID, aliceID, "eyes", "removed", 1100),
		reactionID(gate.ID, aliceID, "eyes", "added", 2100),
		reactionID(gate.ID, carolID, "x", "added", 2200),
	}
	for _, id := range want {
		assert.Contains(t, got, id)
	}
	assert.Equal(t, gate, got[want[3]].Message)
	assert.Equal(t, liveAdd.ID, reactionID(gate.ID, carolID, "white_check_mark", "added", 1000))

	// A second drop without changes delivers nothing new.
	f.dropWS()
	require.Eventually(t, func() bool { return f.wsConnectCount() >= 3 }, 5*time.Second, 5*time.Millisecond)
	waitConnected(t, a)
	rec.none(t, 200*time.Millisecond)
}

func TestReactions_WatchAfterRestart(t *testing.T) {
	f := newFakeMM(t)
	// A gate posted by a previous process, approved while groundcrew was down.
	root := f.addPost(&model.Post{ChannelId: channelID, UserId: botID, Message: "run"})
	gate := f.addPost(&model.Post{ChannelId: channelID, UserId: botID, RootId: root.Id, Message: "🔒"})
	f.react(gate.Id, carolID, "white_check_mark", false, 500)

	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	ref := chatmodel.MessageRef{Platform: Platform, Channel: channelID, ID: gate.Id, Thread: root.Id}
	a.WatchReactions(ref) // before Run: read on the first connect
	runAdapter(t, a, rec)
	e := rec.next(t)
	assert.Equal(t, reactionID(gate.Id, carolID, "white_check_mark", "added", 500), e.ID, "same id as the live event had")
	assert.Equal(t, ref, e.Message)
	rec.none(t, 100*time.Millisecond)

	// Watching while connected reads at once.
	other := f.addPost(&model.Post{ChannelId: channelID, UserId: botID, RootId: root.Id, Message: "✋ manual"})
	f.react(other.Id, carolID, "white_check_mark", false, 600)
	a.WatchReactions(chatmodel.MessageRef{Platform: Platform, Channel: channelID, ID: other.Id, Thread: root.Id})
	e = rec.next(t)
	assert.Equal(t, other.Id, e.Message.ID)

	// Unwatched messages are not re-read after a reconnect.
	a.UnwatchReactions(ref)
	f.react(gate.Id, aliceID, "x", false, 700)
	f.dropWS()
	require.Eventually(t, func() bool { return f.wsConnectCount() >= 2 }, 5*time.Second, 5*time.Millisecond)
	waitConnected(t, a)
	rec.none(t, 200*time.Millisecond)
}

func TestReactions_RereadFailureIsRetried(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	_, gate := postGate(t, a)
	f.mu.Lock()
	f.throttle["POST /api/v4/posts/ids/reactions"] = throttle{n: 2, retryAfter: "0"}
	f.mu.Unlock()
	f.react(gate.ID, carolID, "white_check_mark", false, 1000)
	f.dropWS()
	e := rec.next(t)
	assert.Equal(t, reactionID(gate.ID, carolID, "white_check_mark", "added", 1000), e.ID)
}

func TestWatchSet_ExpiryAndCap(t *testing.T) {
	w := newWatchSet(time.Hour, 2)
	now := time.Unix(1000, 0)
	w.add(chatmodel.MessageRef{ID: "a"}, now, true)
	w.add(chatmodel.MessageRef{ID: "b"}, now.Add(time.Minute), true)
	w.add(chatmodel.MessageRef{ID: "c"}, now.Add(2*time.Minute), true)
	assert.Equal(t, []string{"b", "c"}, w.ids(now.Add(2*time.Minute)), "oldest evicted over the cap")
	assert.Equal(t, []string{"c"}, w.ids(now.Add(time.Hour+90*time.Second)), "expired after the window")
}

func TestWebSocket_AuthRefusedReconnects(t *testing.T) {
	f := newFakeMM(t)
	f.wsAuthRefused = true
	a := newTestAdapter(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, newRecorder()) }()
	require.Eventually(t, func() bool { return f.callCount("GET /api/v4/websocket") >= 3 }, 5*time.Second, 5*time.Millisecond, "keeps trying with backoff")
	f.mu.Lock()
	f.wsAuthRefused = false
	f.mu.Unlock()
	waitConnected(t, a)
	cancel()
	require.NoError(t, <-done)
}
