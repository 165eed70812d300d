// Package deliverytest has test doubles for package delivery: a chat that
// fails for a while and then recovers (or answers "slow down"), and an
// in-memory outbox store.
package deliverytest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// ErrDown is what a Chat that is down returns.
var ErrDown = errors.New("chat is down: connection refused")

// Posted is one message a Chat received.
type Posted struct {
	Ref     chatmodel.MessageRef
	To      chatmodel.Conversation
	Message chatmodel.Message
}

// Chat is a recording chatmodel.Chat. Fail(n) makes the next n calls fail;
// Down and Up make every call fail until Up ("chat fails for a while, then
// recovers"); RateLimit makes the next call answer a RateLimitedError;
// Hang makes every call wait, as a chat server that took the connection
// and never answers, until Release (or the call's context ends).
type Chat struct {
	mu        sync.Mutex
	hung      chan struct{} // closed by Release; nil when not hanging
	waiting   int
	posts     []Posted
	edits     []Posted
	failNext  int
	down      bool
	rateLimit time.Duration
	limited   bool
	calls     int
	seq       int
}

// Fail makes the next n posts and edits fail.
func (c *Chat) Fail(n int) { c.mu.Lock(); c.failNext = n; c.mu.Unlock() }

// Down makes every post and edit fail until Up.
func (c *Chat) Down() { c.mu.Lock(); c.down = true; c.mu.Unlock() }

// Up ends Down (and Fail).
func (c *Chat) Up() { c.mu.Lock(); c.down, c.failNext = false, 0; c.mu.Unlock() }

// RateLimit makes the next call answer "retry after d".
func (c *Chat) RateLimit(d time.Duration) {
	c.mu.Lock()
	c.rateLimit, c.limited = d, true
	c.mu.Unlock()
}

// Hang makes every later call wait until Release, or until the call's
// context ends (then it fails with the context's error, as an HTTP client
// whose deadline passed).
func (c *Chat) Hang() {
	c.mu.Lock()
	if c.hung == nil {
		c.hung = make(chan struct{})
	}
	c.mu.Unlock()
}

// Release ends Hang: the waiting calls go on (and succeed, unless the chat
// is Down or failing).
func (c *Chat) Release() {
	c.mu.Lock()
	if c.hung != nil {
		close(c.hung)
		c.hung = nil
	}
	c.mu.Unlock()
}

// Waiting is how many calls wait in Hang now.
func (c *Chat) Waiting() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting
}

// hang waits while the chat hangs (c.mu held; released while waiting).
func (c *Chat) hang(ctx context.Context) error {
	for c.hung != nil {
		ch := c.hung
		c.waiting++
		c.mu.Unlock()
		var err error
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
		c.mu.Lock()
		c.waiting--
		if err != nil {
			c.calls++
			return err
		}
	}
	return nil
}

func (c *Chat) fail() error {
	c.calls++
	switch {
	case c.limited:
		c.limited = false
		return &chatmodel.RateLimitedError{RetryAfter: c.rateLimit}
	case c.down:
		return ErrDown
	case c.failNext > 0:
		c.failNext--
		return ErrDown
	}
	return nil
}

// Post implements chatmodel.Chat.
func (c *Chat) Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.hang(ctx); err != nil {
		return chatmodel.MessageRef{}, err
	}
	if err := c.fail(); err != nil {
		return chatmodel.MessageRef{}, err
	}
	c.seq++
	ref := chatmodel.MessageRef{Platform: to.Platform, Channel: to.Channel, ID: fmt.Sprintf("m%d", c.seq), Thread: to.Thread}
	c.posts = append(c.posts, Posted{Ref: ref, To: to, Message: m})
	return ref, nil
}

// Update implements chatmodel.Chat.
func (c *Chat) Update(ctx context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.hang(ctx); err != nil {
		return err
	}
	if err := c.fail(); err != nil {
		return err
	}
	c.edits = append(c.edits, Posted{Ref: ref, Message: m})
	return nil
}

// Ephemeral implements chatmodel.Chat (recorded as a post).
func (c *Chat) Ephemeral(ctx context.Context, to chatmodel.Conversation, _ chatmodel.User, m chatmodel.Message) error {
	_, err := c.Post(ctx, to, m)
	return err
}

// Posts returns the messages posted, in order.
func (c *Chat) Posts() []Posted {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Posted(nil), c.posts...)
}

// Edits returns the edits made, in order.
func (c *Chat) Edits() []Posted {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Posted(nil), c.edits...)
}

// Calls is how many posts and edits were tried, failed ones included.
func (c *Chat) Calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// Store is an in-memory runmodel.Outbox. FailPuts makes the next n puts fail.
type Store struct {
	mu       sync.Mutex
	items    map[string]runmodel.OutboxItem
	FailPuts int
}

// PutOutbox implements runmodel.Outbox.
func (s *Store) PutOutbox(_ context.Context, it runmodel.OutboxItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.FailPuts > 0 {
		s.FailPuts--
		return errors.New("disk full")
	}
	if s.items == nil {
		s.items = map[string]runmodel.OutboxItem{}
	}
	s.items[it.ID] = it
	return nil
}

// ListOutbox implements runmodel.Outbox, oldest first.
func (s *Store) ListOutbox(context.Context) ([]runmodel.OutboxItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]runmodel.OutboxItem, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteOutbox implements runmodel.Outbox.
func (s *Store) DeleteOutbox(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, id)
	return nil
}
