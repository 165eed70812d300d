package mattermost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func (f *fakeMM) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.posts)
}

// TestHungServer_CallsEndAtTheirDeadlineAndSayWhy: a server that takes
// requests and does not answer (SIGSTOP) fails each call at the call's
// own deadline, with an error that names the server and says it did not
// answer (chatmodel.ErrUnreachable) — never a configuration problem, even
// for a "#channel" name whose team was not looked up yet. A second post to
// the same channel does not wait behind the first beyond its own context.
func TestHungServer_CallsEndAtTheirDeadlineAndSayWhy(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	a.retry.callTimeout = 200 * time.Millisecond
	f.freeze()
	defer f.thaw()

	// The team was never looked up (the server hung when groundcrew started).
	start := time.Now()
	_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "x"})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second, "one try: a call that timed out is not repeated by the adapter")
	assert.ErrorIs(t, err, chatmodel.ErrUnreachable)
	assert.Contains(t, err.Error(), "mattermost at "+f.srv.URL+" did not answer within 200ms")
	assert.NotContains(t, err.Error(), "must be set", "not a configuration problem")

	// A post to a channel id: the create times out; a second one, whose
	// caller gives up sooner, is not held behind it past its context.
	first := make(chan error, 1)
	go func() {
		_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "first"})
		first <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "second"})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 150*time.Millisecond, "the second post waited only as long as its own context")
	err = <-first
	assert.ErrorIs(t, err, chatmodel.ErrUnreachable)
	assert.Contains(t, err.Error(), "did not answer")
}

// TestHungServer_PostIsNotDuplicated: a post whose create timed out on a
// frozen server is created by the server when it runs again (it had taken
// the request); the outbox's retry, with the same PostKey (Mattermost's
// pending_post_id), gets that post back instead of a second copy. Buttons
// come with the post in the same write.
func TestHungServer_PostIsNotDuplicated(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	a.retry.callTimeout = 200 * time.Millisecond
	runAdapter(t, a, newRecorder())
	before := f.postCount()
	msg := chatmodel.Message{Text: "🚨 incident", Buttons: []chatmodel.Button{{Action: "incident_ack", Label: "Acknowledge", Value: "i-1"}}, PostKey: "p|1"}

	f.freeze()
	_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, msg)
	require.Error(t, err)
	assert.True(t, errors.Is(err, chatmodel.ErrUnreachable), err.Error())
	f.thaw()
	require.Eventually(t, func() bool { return f.postCount() == before+1 }, 5*time.Second, 5*time.Millisecond, "the server created it once it ran again")

	ref, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, msg)
	require.NoError(t, err)
	assert.Equal(t, before+1, f.postCount(), "the retry got the first post back, no second copy")
	p := f.post(ref.ID)
	require.NotNil(t, p)
	assert.True(t, strings.HasPrefix(p.Message, "🚨 incident"))
	require.Len(t, p.Attachments(), 1)
	assert.Len(t, p.Attachments()[0].Actions, 1, "with its button")
	assert.Zero(t, f.callCount("PUT /api/v4/posts/"+ref.ID+"/patch"), "one write")

	other := msg
	other.PostKey = "p|2"
	ref2, err := a.Post(context.Background(), chatmodel.Conversation{Channel: channelID}, other)
	require.NoError(t, err)
	assert.NotEqual(t, ref.ID, ref2.ID, "another post is another post")
}
