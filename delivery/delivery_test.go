package delivery_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/delivery/deliverytest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type env struct {
	chat  *deliverytest.Chat
	store *deliverytest.Store
	clock *clock
	ob    *delivery.Outbox
}

func newEnv() *env {
	e := &env{chat: &deliverytest.Chat{}, store: &deliverytest.Store{}, clock: &clock{t: time.Date(2026, 3, 4, 3, 0, 0, 0, time.UTC)}}
	e.restart()
	return e
}

// restart is a new process on the same store.
func (e *env) restart() {
	e.ob = delivery.New(delivery.Options{Chat: e.chat, Store: e.store, Now: e.clock.Now})
}

// run ticks every second for d.
func (e *env) run(ctx context.Context, d time.Duration) {
	for range int(d / time.Second) {
		e.clock.Advance(time.Second)
		e.ob.Flush(ctx)
	}
}

var chan1 = chatmodel.Conversation{Platform: "slack", Channel: "C1"}

func texts(ps []deliverytest.Posted) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Message.Text)
	}
	return out
}

func TestPost_SanitisesAndPostsAtOnce(t *testing.T) {
	e := newEnv()
	h, err := e.ob.Post(context.Background(), chan1, chatmodel.Message{Text: "a\u202eb"}, delivery.Meta{From: "digest"})
	require.NoError(t, err)
	assert.False(t, h.Ref.IsZero())
	assert.Equal(t, []string{"a<U+202E>b"}, texts(e.chat.Posts()))
	assert.Empty(t, e.ob.Pending(context.Background()))
}

// TestOutage_ThreadAppearsInOrderOnceChatIsBack: chat is down for two
// minutes while a root and three replies are posted; within seconds of
// chat coming back the root is posted and the replies follow in its
// thread, in order. A restart in the middle loses nothing.
func TestOutage_ThreadAppearsInOrderOnceChatIsBack(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	var delivered []string
	register := func() {
		e.ob.Register("incident", delivery.Receiver{Delivered: func(_ context.Context, it runmodel.OutboxItem, ref chatmodel.MessageRef) {
			delivered = append(delivered, it.Key+"="+ref.ID)
		}})
	}
	register()
	e.chat.Down()
	root, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "root v1"}, delivery.Meta{From: "incident", Key: "I-1"})
	require.NoError(t, err)
	require.NotEmpty(t, root.Pending)
	for _, txt := range []string{"reply 1", "reply 2"} {
		_, err := e.ob.Reply(ctx, chan1, root, chatmodel.Message{Text: txt}, delivery.Meta{From: "incident", Key: "I-1"})
		require.NoError(t, err)
	}
	require.NoError(t, e.ob.Update(ctx, root, chatmodel.Message{Text: "root v2"}, delivery.Meta{From: "incident", Coalesce: true}))
	e.run(ctx, time.Minute)
	e.restart() // kill -9 in the middle of the outage
	register()
	_, err = e.ob.Reply(ctx, chan1, root, chatmodel.Message{Text: "reply 3"}, delivery.Meta{From: "incident", Key: "I-1"})
	require.NoError(t, err)
	e.run(ctx, time.Minute)
	assert.Empty(t, e.chat.Posts())

	e.chat.Up()
	e.run(ctx, 6*time.Second)
	posts := e.chat.Posts()
	require.Equal(t, []string{"root v2", "reply 1", "reply 2", "reply 3"}, texts(posts), "the latest root, then the replies in order")
	for _, p := range posts[1:] {
		assert.Equal(t, posts[0].Ref.ID, p.To.Thread, "replies are in the root's thread")
	}
	assert.Equal(t, []string{"I-1=" + posts[0].Ref.ID, "I-1=" + posts[1].Ref.ID, "I-1=" + posts[2].Ref.ID, "I-1=" + posts[3].Ref.ID}, delivered)
	assert.Empty(t, e.ob.Pending(ctx))
	e.run(ctx, time.Minute)
	assert.Len(t, e.chat.Posts(), 4, "nothing posted twice")
}

// TestPost_WaitsBehindItsThread: a reply to a posted root waits while an
// earlier reply of the same thread is queued.
func TestPost_WaitsBehindItsThread(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	root, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "root"}, delivery.Meta{})
	require.NoError(t, err)
	e.chat.Fail(1)
	_, _ = e.ob.Reply(ctx, chan1, root, chatmodel.Message{Text: "first"}, delivery.Meta{})
	h, err := e.ob.Reply(ctx, chan1, root, chatmodel.Message{Text: "second"}, delivery.Meta{})
	require.NoError(t, err)
	assert.NotEmpty(t, h.Pending, "queued behind the failed first reply, not posted before it")
	e.run(ctx, 5*time.Second)
	assert.Equal(t, []string{"root", "first", "second"}, texts(e.chat.Posts()))
}

// TestUpdate_CoalescesEdits: a storm of edits of one message gives at most
// one edit per EditEvery, the last state wins, and Drain sends the last.
func TestUpdate_CoalescesEdits(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	root, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "v0"}, delivery.Meta{})
	require.NoError(t, err)
	for i := 1; i <= 30; i++ {
		require.NoError(t, e.ob.Update(ctx, root, chatmodel.Message{Text: "v" + string(rune('0'+i%10))}, delivery.Meta{Coalesce: true}))
	}
	assert.Len(t, e.chat.Edits(), 1, "the first edit goes at once, the others wait")
	e.run(ctx, 2*time.Second)
	assert.Len(t, e.chat.Edits(), 1)
	e.run(ctx, 2*time.Second)
	edits := e.chat.Edits()
	require.Len(t, edits, 2)
	assert.Equal(t, "v0", edits[1].Message.Text, "the latest state (v30) wins")

	require.NoError(t, e.ob.Update(ctx, root, chatmodel.Message{Text: "final"}, delivery.Meta{Coalesce: true}))
	assert.Len(t, e.chat.Edits(), 2)
	e.ob.Drain(ctx)
	edits = e.chat.Edits()
	require.Len(t, edits, 3, "shutdown sends the held edit")
	assert.Equal(t, "final", edits[2].Message.Text)
}

// TestRateLimit_PausesPosting: a platform's "retry after 10s" pauses every
// post until then, counts no failed attempt, and loses nothing.
func TestRateLimit_PausesPosting(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	e.chat.RateLimit(10 * time.Second)
	_, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "one"}, delivery.Meta{})
	require.NoError(t, err)
	_, err = e.ob.Post(ctx, chatmodel.Conversation{Channel: "C2"}, chatmodel.Message{Text: "two"}, delivery.Meta{})
	require.NoError(t, err)
	assert.Equal(t, 1, e.chat.Calls(), "the second post is not tried while paused")
	e.run(ctx, 9*time.Second)
	assert.Equal(t, 1, e.chat.Calls())
	e.run(ctx, 2*time.Second)
	assert.ElementsMatch(t, []string{"one", "two"}, texts(e.chat.Posts()))
	for _, it := range e.ob.Pending(ctx) {
		t.Errorf("left in the outbox: %+v", it)
	}
}

// TestGivesUp: a post that keeps failing is given up after MaxAttempts
// and kept, marked, for status; ErrCannotPost gives up at once.
func TestGivesUp(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	e.chat.Down()
	_, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "x"}, delivery.Meta{})
	require.NoError(t, err)
	for range 40 {
		e.clock.Advance(10 * time.Minute)
		e.ob.Flush(ctx)
	}
	items := e.ob.Pending(ctx)
	require.Len(t, items, 1)
	assert.True(t, items[0].GaveUp)
	assert.Equal(t, delivery.DefaultMaxAttempts, items[0].Attempts)
}

// TestStoreRefusesTheQueue: a failed post the store cannot save is kept
// in memory and still delivered.
func TestStoreRefusesTheQueue(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	e.store.FailPuts = 100
	e.chat.Fail(1)
	_, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: "x"}, delivery.Meta{})
	require.NoError(t, err)
	e.run(ctx, 5*time.Second)
	assert.Equal(t, []string{"x"}, texts(e.chat.Posts()))
}

// TestStorm_ChatCalls counts chat calls for a storm: 100 roots, each
// edited 10 times within a second (repeats of 100 alert groups). Without
// coalescing that is 1,100 calls; with it, one post and at most two edits
// per root, the last edit carrying the last state.
func TestStorm_ChatCalls(t *testing.T) {
	ctx := context.Background()
	e := newEnv()
	roots := make([]delivery.Handle, 100)
	for i := range roots {
		h, err := e.ob.Post(ctx, chan1, chatmodel.Message{Text: fmt.Sprintf("group %d", i)}, delivery.Meta{From: "incident"})
		require.NoError(t, err)
		roots[i] = h
	}
	for rep := 1; rep <= 10; rep++ {
		for i, h := range roots {
			require.NoError(t, e.ob.Update(ctx, h, chatmodel.Message{Text: fmt.Sprintf("group %d repeat %d", i, rep)}, delivery.Meta{From: "incident", Coalesce: true}))
		}
		e.clock.Advance(100 * time.Millisecond)
	}
	e.run(ctx, 5*time.Second)
	t.Logf("storm: %d chat calls for 100 posts and 1,000 edits", e.chat.Calls())
	assert.LessOrEqual(t, e.chat.Calls(), 100+2*100)
	last := map[string]string{}
	for _, ed := range e.chat.Edits() {
		last[ed.Ref.ID] = ed.Message.Text
	}
	require.Len(t, last, 100)
	for i, h := range roots {
		assert.Equal(t, fmt.Sprintf("group %d repeat 10", i), last[h.Ref.ID], "the latest state wins")
	}
}
