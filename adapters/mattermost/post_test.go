package mattermost

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestPost_RootAndReply(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	ctx := context.Background()

	root, err := a.Post(ctx, chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "🛠 *worker-stalled* on `infra-prd`"})
	require.NoError(t, err)
	assert.Equal(t, chatmodel.MessageRef{Platform: Platform, Channel: channelID, ID: root.ID}, root)
	p := f.post(root.ID)
	assert.Equal(t, "🛠 **worker-stalled** on `infra-prd`", p.Message)
	assert.Empty(t, p.RootId)

	reply, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID, Thread: root.ID}, chatmodel.Message{Text: "1/6 ✅ Workers", Detail: "name state\nw0 stalled"})
	require.NoError(t, err)
	assert.Equal(t, root.ID, reply.Thread)
	p = f.post(reply.ID)
	assert.Equal(t, root.ID, p.RootId)
	require.Len(t, p.Attachments(), 1)
	assert.Equal(t, "name state\nw0 stalled", p.Attachments()[0].Text)
	assert.Empty(t, p.Attachments()[0].Actions)

	// A thread id that is a reply is mapped to its root.
	again, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID, Thread: reply.ID}, chatmodel.Message{Text: "2/6"})
	require.NoError(t, err)
	assert.Equal(t, root.ID, again.Thread)

	// The channel name was resolved once.
	_, err = a.Post(ctx, chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "again"})
	require.NoError(t, err)
	assert.Equal(t, 1, f.callCount("GET /api/v4/teams/"+teamID+"/channels/name/ci-ops"))
}

func TestPost_UnknownChannelName(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "#nope"}, chatmodel.Message{Text: "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resolving channel #nope")
	assert.Equal(t, http.StatusNotFound, statusOf(err))
}

// TestPost_RefusedForGoodIsSaidSo: a post Mattermost refuses as it is (400,
// 403, 404, 413) wraps chatmodel.ErrCannotPost, so the outbox gives it up
// instead of retrying it (and the thread behind it) for half an hour; a 5xx
// or a 401 does not.
func TestPost_RefusedForGoodIsSaidSo(t *testing.T) {
	for status, permanent := range map[int]bool{
		http.StatusBadRequest: true, http.StatusForbidden: true, http.StatusNotFound: true, http.StatusRequestEntityTooLarge: true,
		http.StatusUnauthorized: false, http.StatusInternalServerError: false, http.StatusServiceUnavailable: false,
	} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			f := newFakeMM(t)
			a := newTestAdapter(t, f, nil)
			runAdapter(t, a, newRecorder())
			f.mu.Lock()
			f.failStatus["POST /api/v4/posts"] = status
			f.mu.Unlock()
			_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
			require.Error(t, err)
			assert.Equal(t, permanent, errors.Is(err, chatmodel.ErrCannotPost), "HTTP %d: %v", status, err)
		})
	}
}

// TestPost_ButtonsAreSignedForThePost: a new post is one write, its
// buttons included, signed for its channel (its id is the server's to
// choose); an edit signs them for the post. A context copied to another
// channel or post does not verify.
func TestPost_ButtonsAreSignedForThePost(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "run"})
	require.NoError(t, err)

	gate, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID, Thread: root.ID}, chatmodel.Message{
		Text:    "🔒 Approval needed",
		Buttons: []chatmodel.Button{{Action: "approve", Label: "Approve", Value: "r1/5", Style: "primary"}, {Action: "reject", Label: "Reject", Value: "r1/5", Style: "danger"}},
	})
	require.NoError(t, err)
	assert.Zero(t, f.callCount("PUT /api/v4/posts/"+gate.ID+"/patch"), "one write: the buttons come with the post")
	p := f.post(gate.ID)
	require.Len(t, p.Attachments(), 1)
	acts := p.Attachments()[0].Actions
	require.Len(t, acts, 2)
	assert.Equal(t, "b0approve", acts[0].Id)
	assert.Equal(t, "Approve", acts[0].Name)
	assert.Equal(t, "primary", acts[0].Style)
	assert.Equal(t, "danger", acts[1].Style)
	assert.Equal(t, "http://groundcrew.test:8080/mattermost/action", acts[0].Integration.URL)

	action, value, thread, err := a.verifyContext(model.PostActionIntegrationRequest{PostId: gate.ID, ChannelId: channelID, Context: acts[0].Integration.Context})
	require.NoError(t, err, "the context verifies in its channel")
	assert.Equal(t, []string{"approve", "r1/5", root.ID}, []string{action, value, thread})
	_, _, _, err = a.verifyContext(model.PostActionIntegrationRequest{PostId: gate.ID, ChannelId: "otherchannel00000000000000", Context: acts[0].Integration.Context})
	assert.ErrorIs(t, err, errBadSignature, "not in another channel")
	forged := maps.Clone(acts[0].Integration.Context)
	forged[ctxValue] = "r2/5"
	_, _, _, err = a.verifyContext(model.PostActionIntegrationRequest{PostId: gate.ID, ChannelId: channelID, Context: forged})
	assert.ErrorIs(t, err, errBadSignature, "nor for another value")

	// Update keeps buttons signed and replaces the message in place.
	require.NoError(t, a.Update(ctx, gate, chatmodel.Message{Text: "🔒 1/2 approvals", Buttons: []chatmodel.Button{{Action: "approve", Label: "Approve", Value: "r1/5"}}}))
	p = f.post(gate.ID)
	assert.Equal(t, "🔒 1/2 approvals", p.Message)
	require.Len(t, p.Attachments()[0].Actions, 1)
	_, _, _, err = a.verifyContext(model.PostActionIntegrationRequest{PostId: gate.ID, Context: p.Attachments()[0].Actions[0].Integration.Context})
	assert.NoError(t, err, "an edit signs the buttons for the post")
	_, _, _, err = a.verifyContext(model.PostActionIntegrationRequest{PostId: root.ID, Context: p.Attachments()[0].Actions[0].Integration.Context})
	assert.ErrorIs(t, err, errBadSignature, "not for another post")

	require.NoError(t, a.Update(ctx, gate, chatmodel.Message{Text: "✅ Approved"}))
	p = f.post(gate.ID)
	assert.Equal(t, "✅ Approved", p.Message)
	assert.Empty(t, p.Attachments(), "buttons are gone once the gate closed")
}

func TestPost_NoCallbackMeansNoButtons(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, func(c *Config) { c.CallbackURL, c.ActionHMACKey = "", "" })
	runAdapter(t, a, newRecorder())
	ref, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "gate", Buttons: []chatmodel.Button{{Action: "approve", Label: "Approve"}}})
	require.NoError(t, err)
	assert.Empty(t, f.post(ref.ID).Attachments())
	assert.Zero(t, f.callCount("PUT /api/v4/posts/"+ref.ID+"/patch"))
}

func TestPost_LongContentGoesToReplies(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		b.WriteString("build-000123 failed\n")
	}
	ref, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "300 builds", Detail: b.String()})
	require.NoError(t, err)
	thread := f.threadOf(ref.ID)
	require.Greater(t, len(thread), 2)
	assert.Equal(t, "300 builds", thread[0].Message)
	total := 0
	for _, p := range thread[1:] {
		assert.Equal(t, ref.ID, p.RootId)
		total += strings.Count(p.Message, "build-000123")
	}
	assert.Equal(t, 3000, total, "nothing dropped")
}

func TestPost_Broadcast(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "run"})
	require.NoError(t, err)
	reply, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID, Thread: root.ID}, chatmodel.Message{Text: "🔒 *Approval needed*\nmore", Broadcast: true})
	require.NoError(t, err)

	var announce *model.Post
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.posts {
		if p.RootId == "" && p.Id != root.ID {
			announce = p
		}
	}
	require.NotNil(t, announce, "a channel post announces the reply")
	assert.Equal(t, "🔒 **Approval needed** · [open thread](https://chat.example.com/ops/pl/"+reply.ID+")", announce.Message, "the link uses the server's SiteURL")
}

func TestCall_RateLimit(t *testing.T) {
	t.Run("429 waits Retry-After and succeeds", func(t *testing.T) {
		f := newFakeMM(t)
		a := newTestAdapter(t, f, nil)
		runAdapter(t, a, newRecorder())
		f.mu.Lock()
		f.throttle["POST /api/v4/posts"] = throttle{n: 1, retryAfter: "1"}
		f.mu.Unlock()
		start := time.Now()
		ref, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), 900*time.Millisecond, "Retry-After: 1 was honoured")
		assert.NotEmpty(t, ref.ID)
		assert.Equal(t, 2, f.callCount("POST /api/v4/posts"))
	})
	t.Run("429 until the attempts run out", func(t *testing.T) {
		f := newFakeMM(t)
		a := newTestAdapter(t, f, nil)
		runAdapter(t, a, newRecorder())
		f.mu.Lock()
		f.throttle["POST /api/v4/posts"] = throttle{n: 100, retryAfter: "0"}
		f.mu.Unlock()
		_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrRateLimited)
		var apiErr *APIError
		require.ErrorAs(t, err, &apiErr)
		assert.True(t, apiErr.Retryable(), "the engine's outbox may retry later")
		assert.Equal(t, a.retry.attempts, f.callCount("POST /api/v4/posts"))
		_, ok := chatmodel.RetryAfter(err)
		assert.True(t, ok, "a 429 is the chat vocabulary's typed rate-limit error")
	})
	t.Run("429 while the caller stops waiting: the Retry-After is exposed", func(t *testing.T) {
		f := newFakeMM(t)
		a := newTestAdapter(t, f, nil)
		runAdapter(t, a, newRecorder())
		f.mu.Lock()
		f.throttle["POST /api/v4/posts"] = throttle{n: 100, retryAfter: "7"}
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
		require.Error(t, err)
		wait, ok := chatmodel.RetryAfter(err)
		require.True(t, ok, "typed rate-limit error: %v", err)
		assert.Equal(t, 7*time.Second, wait)
		assert.ErrorIs(t, err, ErrRateLimited)
	})
	t.Run("a failed create is not repeated", func(t *testing.T) {
		f := newFakeMM(t)
		a := newTestAdapter(t, f, nil)
		runAdapter(t, a, newRecorder())
		f.mu.Lock()
		f.failStatus["POST /api/v4/posts"] = http.StatusInternalServerError
		f.mu.Unlock()
		_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
		require.Error(t, err)
		assert.Equal(t, 1, f.callCount("POST /api/v4/posts"), "a 500 on create may have posted: no blind retry")
	})
	t.Run("an update is retried on 503", func(t *testing.T) {
		f := newFakeMM(t)
		a := newTestAdapter(t, f, nil)
		runAdapter(t, a, newRecorder())
		ref, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
		require.NoError(t, err)
		key := "PUT /api/v4/posts/" + ref.ID + "/patch"
		f.mu.Lock()
		f.failStatus[key] = http.StatusServiceUnavailable
		f.mu.Unlock()
		go func() {
			require.Eventually(t, func() bool { return f.callCount(key) >= 2 }, 5*time.Second, time.Millisecond)
			f.mu.Lock()
			delete(f.failStatus, key)
			f.mu.Unlock()
		}()
		require.NoError(t, a.Update(context.Background(), ref, chatmodel.Message{Text: "y"}))
		assert.Equal(t, "y", f.post(ref.ID).Message)
	})
	t.Run("context cancelled while waiting", func(t *testing.T) {
		f := newFakeMM(t)
		a := newTestAdapter(t, f, nil)
		runAdapter(t, a, newRecorder())
		f.mu.Lock()
		f.throttle["POST /api/v4/posts"] = throttle{n: 100, retryAfter: "2"}
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "x"})
		require.Error(t, err)
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	})
}

func TestEphemeral_FallsBackToAMention(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "run"})
	require.NoError(t, err)
	to := chatmodel.Conversation{Channel: channelID, Thread: root.ID}

	require.NoError(t, a.Ephemeral(ctx, to, chatmodel.User{ID: aliceID}, chatmodel.Message{Text: "Not counted: you started this run."}))
	require.NoError(t, a.Ephemeral(ctx, to, chatmodel.User{ID: aliceID, Name: "alice"}, chatmodel.Message{Text: "Still not counted."}))
	thread := f.threadOf(root.ID)
	require.Len(t, thread, 3)
	assert.Equal(t, "@alice Not counted: you started this run.", thread[1].Message)
	assert.Equal(t, "@alice Still not counted.", thread[2].Message)
	assert.Equal(t, 1, f.callCount("POST /api/v4/posts/ephemeral"), "the 403 is remembered")
}

func TestEphemeral_PermissionGrantedLaterIsUsedWithoutARestart(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	a.ephemeralRecheck = 200 * time.Millisecond
	runAdapter(t, a, newRecorder())
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "run"})
	require.NoError(t, err)
	to := chatmodel.Conversation{Channel: channelID, Thread: root.ID}
	user := chatmodel.User{ID: aliceID, Name: "alice"}

	require.NoError(t, a.Ephemeral(ctx, to, user, chatmodel.Message{Text: "first"}))
	require.NoError(t, a.Ephemeral(ctx, to, user, chatmodel.Message{Text: "second"}))
	assert.Equal(t, 1, f.callCount("POST /api/v4/posts/ephemeral"), "the 403 is remembered")

	f.mu.Lock()
	f.ephemeralOK = true // an admin granted create_post_ephemeral
	f.mu.Unlock()
	time.Sleep(250 * time.Millisecond)
	require.NoError(t, a.Ephemeral(ctx, to, user, chatmodel.Message{Text: "third"}))
	assert.Equal(t, 2, f.callCount("POST /api/v4/posts/ephemeral"), "tried again after ephemeralRecheck")
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Len(t, f.ephemerals, 1)
	assert.Equal(t, "third", f.ephemerals[0].Post.Message)
}

func TestEphemeral_WhenAllowed(t *testing.T) {
	f := newFakeMM(t)
	f.ephemeralOK = true
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	require.NoError(t, a.Ephemeral(context.Background(), chatmodel.Conversation{Channel: channelID, Thread: "root0000000000000000000000"}, chatmodel.User{ID: aliceID}, chatmodel.Message{Text: "*only* you"}))
	require.Len(t, f.ephemerals, 1)
	assert.Equal(t, aliceID, f.ephemerals[0].UserID)
	assert.Equal(t, "**only** you", f.ephemerals[0].Post.Message)
	assert.Equal(t, "root0000000000000000000000", f.ephemerals[0].Post.RootId)
}

// TestEphemeral_OneFallbackPostPerRefusal: without create_post_ephemeral the
// stand-in is a public post; the same refusal twice (✅ then 👍 by one
// person) is one post (#22.4).
func TestEphemeral_OneFallbackPostPerRefusal(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	var skew atomic.Int64
	a.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	runAdapter(t, a, newRecorder())
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "run"})
	require.NoError(t, err)
	to := chatmodel.Conversation{Channel: channelID, Thread: root.ID}
	alice := chatmodel.User{ID: aliceID, Name: "alice"}
	refusal := chatmodel.Message{Text: "🚫 Your approval on `r-1` was not counted: you started this run."}
	posts := f.callCount("POST /api/v4/posts")
	require.NoError(t, a.Ephemeral(ctx, to, alice, refusal))
	require.NoError(t, a.Ephemeral(ctx, to, alice, refusal))
	assert.Equal(t, posts+1, f.callCount("POST /api/v4/posts"), "one post for the same refusal")
	require.NoError(t, a.Ephemeral(ctx, to, alice, chatmodel.Message{Text: "something else"}))
	assert.Equal(t, posts+2, f.callCount("POST /api/v4/posts"), "another message is posted")
	skew.Store(int64(fallbackTTL + time.Minute))
	require.NoError(t, a.Ephemeral(ctx, to, alice, refusal))
	assert.Equal(t, posts+3, f.callCount("POST /api/v4/posts"), "said again once the memory expired")
}
