package scenario

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// posted is a message as the scenario's chat holds it.
type posted struct {
	Ref chatmodel.MessageRef
	To  chatmodel.Conversation
	Msg chatmodel.Message
	// History is every version of the message, the first post included.
	History []chatmodel.Message
}

// chat is the in-memory chat a scenario runs in: it records every message
// (current text after edits) and every ephemeral reply, so expectations can
// be checked against the thread. It is part of `groundcrew test`, not a
// test fake.
type chat struct {
	mu         sync.Mutex
	posts      []*posted
	ephemerals []string
	groups     map[string][]string
}

var (
	_ chatmodel.Chat          = (*chat)(nil)
	_ chatmodel.GroupResolver = (*chat)(nil)
)

func (c *chat) Post(_ context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ref := chatmodel.MessageRef{Platform: to.Platform, Channel: to.Channel, Thread: to.Thread, ID: fmt.Sprintf("m%d", len(c.posts)+1)}
	c.posts = append(c.posts, &posted{Ref: ref, To: to, Msg: m, History: []chatmodel.Message{m}})
	return ref, nil
}

func (c *chat) Update(_ context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.posts {
		if p.Ref.ID == ref.ID {
			p.Msg = m
			p.History = append(p.History, m)
			return nil
		}
	}
	return fmt.Errorf("update: no message %s", ref.ID)
}

func (c *chat) Ephemeral(_ context.Context, _ chatmodel.Conversation, _ chatmodel.User, m chatmodel.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ephemerals = append(c.ephemerals, m.Text)
	return nil
}

func (c *chat) GroupMembers(_ context.Context, group string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.groups[group], nil
}

// Posts returns a snapshot of the posted messages.
func (c *chat) Posts() []posted {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]posted, len(c.posts))
	for i, p := range c.posts {
		out[i] = *p
	}
	return out
}

// Ephemerals returns every ephemeral reply, in order.
func (c *chat) Ephemerals() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ephemerals...)
}

// Transcript renders every message (current text) in order.
func (c *chat) Transcript() string {
	var b strings.Builder
	for _, p := range c.Posts() {
		fmt.Fprintf(&b, "[%s thread=%s] %s\n", p.Ref.ID, p.To.Thread, p.Msg.Text)
	}
	for _, e := range c.Ephemerals() {
		fmt.Fprintf(&b, "(to %s) %s\n", "user", e)
	}
	return b.String()
}

// clock is the scenario's settable clock (`advance` moves it).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

// Now returns the current scenario time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
