package bot_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// hangingChat is bottest.Chat behind a server that took the connection
// and does not answer: every post, edit and private answer waits until
// Release, or until its call's context ends.
type hangingChat struct {
	*bottest.Chat
	mu      sync.Mutex
	hung    chan struct{}
	waiting int // calls waiting on the hung server now
	tried   int // calls that reached it while it hung
}

func (c *hangingChat) hang() {
	c.mu.Lock()
	c.hung = make(chan struct{})
	c.mu.Unlock()
}

func (c *hangingChat) release() {
	c.mu.Lock()
	if c.hung != nil {
		close(c.hung)
		c.hung = nil
	}
	c.mu.Unlock()
}

func (c *hangingChat) wait(ctx context.Context) error {
	c.mu.Lock()
	ch := c.hung
	if ch != nil {
		c.tried++
		c.waiting++
	}
	c.mu.Unlock()
	if ch == nil {
		return nil
	}
	defer func() {
		c.mu.Lock()
		c.waiting--
		c.mu.Unlock()
	}()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *hangingChat) Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	if err := c.wait(ctx); err != nil {
		return chatmodel.MessageRef{}, err
	}
	return c.Chat.Post(ctx, to, m)
}

func (c *hangingChat) Update(ctx context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	return c.Chat.Update(ctx, ref, m)
}

func (c *hangingChat) Ephemeral(ctx context.Context, to chatmodel.Conversation, u chatmodel.User, m chatmodel.Message) error {
	if err := c.wait(ctx); err != nil {
		return err
	}
	return c.Chat.Ephemeral(ctx, to, u, m)
}

// TestHungChat_EngineKeepsWorking: chat hangs while a run starts, waits at
// its gate and is approved. Every chat call ends at its own deadline (the
// outbox's CallTimeout), a channel that failed gets its next posts queued
// without a try, the tick only wakes the outbox's goroutine, and the vote
// is taken and the run finishes meanwhile. When chat answers, the thread
// appears once, in order.
func TestHungChat_EngineKeepsWorking(t *testing.T) {
	hc := &hangingChat{}
	var out *delivery.Outbox
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		hc.Chat = o.Chat.(*bottest.Chat)
		o.Chat = hc
		out = delivery.New(delivery.Options{Chat: hc, Store: o.Store, Now: o.Now, CallTimeout: 300 * time.Millisecond})
		o.Delivery = out
		o.Capabilities = bot.CapabilitiesOf(o.Store, hc.Chat)
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- out.Run(ctx) }()
	t.Cleanup(func() { hc.release(); cancel(); <-done })
	require.Eventually(t, out.Running, 5*time.Second, time.Millisecond)

	hc.hang()
	start := time.Now()
	h.cmd(alice, "run toucher target=infra-prd")
	assert.Less(t, time.Since(start), 5*time.Second, "the start waited for one chat deadline at most")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, "the run reached its gate with chat hung")

	start = time.Now()
	h.eng.Tick(h.ctx)
	assert.Less(t, time.Since(start), 200*time.Millisecond, "the tick does not wait for chat")

	start = time.Now()
	h.cmd(bob, "approve "+r.ID)
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, "the vote was taken and the run finished while chat hung")
	assert.Equal(t, 1, h.world.CallCount("fake.touch"))
	assert.Empty(t, hc.Posts(), "nothing reached the hung chat")

	hc.release()
	require.Eventually(t, func() bool { return len(out.Pending(h.ctx)) == 0 }, 20*time.Second, 20*time.Millisecond, "the outbox empties once chat answers")
	r = h.onlyRun()
	require.False(t, r.Root.IsZero(), "the run knows its root")
	roots := 0
	for _, p := range hc.Posts() {
		if p.Msg.Role == chatmodel.RoleRoot {
			roots++
		}
		if p.To.Thread != "" {
			assert.Equal(t, r.Root.ID, p.To.Thread, "in the run's thread: %s", p.Msg.Text)
		}
	}
	assert.Equal(t, 1, roots, "the root once:\n%s", hc.Transcript())
	hc.mu.Lock()
	defer hc.mu.Unlock()
	assert.Positive(t, hc.tried, "the hung server was called")
	assert.Less(t, hc.tried, len(hc.Posts()), "after a call failed, the posts were queued without a try each")
	assert.Zero(t, hc.waiting, "no call is left waiting")
	assert.True(t, strings.Contains(hc.Transcript(), "touched x"), hc.Transcript())
}
