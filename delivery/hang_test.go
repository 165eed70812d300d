package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/delivery/deliverytest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// running starts the outbox's own goroutine (as serve does) on a real
// clock; it stops with the test.
func running(t *testing.T, o delivery.Options) *delivery.Outbox {
	t.Helper()
	ob := delivery.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ob.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.Eventually(t, ob.Running, 5*time.Second, time.Millisecond)
	return ob
}

func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	require.Eventually(t, ok, 5*time.Second, 5*time.Millisecond, what)
}

// TestHungChat_QueuedPostsNeverWaitForChat: with the chat hung (it took
// the connection and never answers), a Meta.Queue post, reply and edit
// return at once — the caller never waits for chat — and Flush (the
// engine's tick) only wakes the outbox's goroutine. When chat answers
// again the thread goes out once, in order, with the latest root.
func TestHungChat_QueuedPostsNeverWaitForChat(t *testing.T) {
	chat := &deliverytest.Chat{}
	chat.Hang()
	ob := running(t, delivery.Options{Chat: chat, CallTimeout: time.Hour})
	var delivered []string
	done := make(chan struct{}, 10)
	ob.Register("incident", delivery.Receiver{Delivered: func(_ context.Context, it runmodel.OutboxItem, ref chatmodel.MessageRef) {
		delivered = append(delivered, it.Key)
		done <- struct{}{}
	}})
	ctx := context.Background()
	meta := delivery.Meta{From: "incident", Key: "i-1", Queue: true}

	start := time.Now()
	root, err := ob.Post(ctx, chan1, chatmodel.Message{Text: "root v1"}, meta)
	require.NoError(t, err)
	require.NotEmpty(t, root.Pending)
	_, err = ob.Reply(ctx, chan1, root, chatmodel.Message{Text: "reply"}, meta)
	require.NoError(t, err)
	require.NoError(t, ob.Update(ctx, root, chatmodel.Message{Text: "root v2"}, meta))
	ob.Flush(ctx)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "nothing waited for the hung chat")
	eventually(t, "the outbox's goroutine tries the root", func() bool { return chat.Waiting() == 1 })
	assert.Empty(t, chat.Posts())

	chat.Release()
	eventually(t, "root and reply delivered", func() bool { return len(chat.Posts()) == 2 })
	posts := chat.Posts()
	assert.Equal(t, "reply", posts[1].Message.Text, "the root, then its reply")
	assert.Equal(t, posts[0].Ref.ID, posts[1].To.Thread)
	// The goroutine may have taken root v1 on its way before the edit came:
	// then v1 is posted and edited to v2 once chat answers. Either way the
	// root reads v2 in the end.
	eventually(t, "the root reads its latest text", func() bool {
		text := posts[0].Message.Text
		for _, e := range chat.Edits() {
			if e.Ref.ID == posts[0].Ref.ID {
				text = e.Message.Text
			}
		}
		return text == "root v2"
	})
	<-done
	<-done
	assert.Equal(t, []string{"i-1", "i-1"}, delivered)
	eventually(t, "nothing left in the outbox", func() bool { return len(ob.Pending(ctx)) == 0 })
}

// TestHungChat_EveryCallHasItsOwnDeadline: a post tried in the caller's
// goroutine (the engine's) against a hung chat fails at CallTimeout, not
// when the caller's context ends; it is queued, and while the channel
// fails later posts are queued without a try (nobody waits again). Once
// chat answers, the queue goes out and each post carries the same
// PostKey on every try (a platform can drop a second copy).
func TestHungChat_EveryCallHasItsOwnDeadline(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	e.ob = delivery.New(delivery.Options{Chat: e.chat, Store: e.store, Now: e.clock.Now, CallTimeout: 50 * time.Millisecond})
	e.chat.Hang()
	start := time.Now()
	h, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "one"}, delivery.Meta{})
	require.NoError(t, err)
	assert.NotEmpty(t, h.Pending, "queued after the deadline")
	assert.Less(t, time.Since(start), 2*time.Second)
	calls := e.chat.Calls()

	start = time.Now()
	h2, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "two"}, delivery.Meta{})
	require.NoError(t, err)
	assert.NotEmpty(t, h2.Pending)
	assert.Less(t, time.Since(start), 40*time.Millisecond, "a failing channel's new post is queued without a try")
	assert.Equal(t, calls, e.chat.Calls())
	health := e.ob.Health()
	assert.True(t, health.Failing())
	assert.Equal(t, 2, health.Waiting)
	assert.Contains(t, health.LastErr, "deadline")

	e.chat.Release()
	e.run(ctx, 6*time.Second) // the probe finds chat answering
	assert.Equal(t, []string{"one", "two"}, texts(e.chat.Posts()))
	for _, p := range e.chat.Posts() {
		assert.NotEmpty(t, p.Message.PostKey)
	}
	assert.NotEqual(t, e.chat.Posts()[0].Message.PostKey, e.chat.Posts()[1].Message.PostKey)
	assert.False(t, e.ob.Health().Failing())
	assert.Zero(t, e.ob.Health().Waiting)
}

// TestPostKey_SameOnEveryTry: a post whose first try failed is retried
// with the key of its first try, across a restart too.
func TestPostKey_SameOnEveryTry(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	keys := &keyChat{Chat: e.chat}
	e.ob = delivery.New(delivery.Options{Chat: keys, Store: e.store, Now: e.clock.Now})
	e.chat.Fail(2)
	_, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "x"}, delivery.Meta{})
	require.NoError(t, err)
	e.run(ctx, 3*time.Second)
	e.ob = delivery.New(delivery.Options{Chat: keys, Store: e.store, Now: e.clock.Now})
	e.run(ctx, 10*time.Second)
	require.Len(t, e.chat.Posts(), 1)
	require.Len(t, keys.keys, 3)
	assert.Equal(t, keys.keys[0], keys.keys[1])
	assert.Equal(t, keys.keys[0], keys.keys[2])
}

type keyChat struct {
	*deliverytest.Chat
	keys []string
}

func (k *keyChat) Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	k.keys = append(k.keys, m.PostKey)
	return k.Chat.Post(ctx, to, m)
}
