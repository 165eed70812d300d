package slack

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// TestHungSlack_CallsEndAtTheirDeadlineAndSayWhy: a Slack that takes
// requests and does not answer fails each call at the try's own deadline,
// once (a post is not repeated by the adapter: the outbox retries), with an
// error that names the Web API and says it did not answer
// (chatmodel.ErrUnreachable) — for a "#channel" name too, which is not
// "not found". A second post to the channel does not wait behind the first
// past its own context.
func TestHungSlack_CallsEndAtTheirDeadlineAndSayWhy(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	runAdapter(t, a, newRecorder())
	a.retry.timeout = 150 * time.Millisecond

	release := f.hang("conversations.list")
	start := time.Now()
	_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "x"})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.ErrorIs(t, err, chatmodel.ErrUnreachable)
	assert.NotErrorIs(t, err, chatmodel.ErrNotFound, "an unanswered listing is not an unknown channel")
	assert.Contains(t, err.Error(), "slack at "+f.url()+" did not answer within 150ms")
	release()

	release = f.hang("chat.postMessage")
	defer release()
	first := make(chan error, 1)
	go func() {
		_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{Text: "first"})
		first <- err
	}()
	time.Sleep(20 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{Text: "second"})
	require.Error(t, err)
	assert.Less(t, time.Since(start), 120*time.Millisecond, "the second post waited only as long as its own context")
	err = <-first
	assert.ErrorIs(t, err, chatmodel.ErrUnreachable)
	release()
	time.Sleep(50 * time.Millisecond)
	assert.Len(t, f.callsTo("chat.postMessage"), 1, "a post that timed out is not repeated by the adapter")
}
