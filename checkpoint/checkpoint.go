// Package checkpoint publishes the head of the audit chain outside the
// store, where the store cannot rewrite it: in the bot's log at start and
// after each run, and in a chat channel on a schedule. A hash chain
// detects an edited or deleted entry but not a cut tail; a published head
// does (`groundcrew audit verify --expect <count>:<hash>`), as transparency
// logs do with their signed tree heads.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Heads reads the head of the audit chain (the store).
type Heads interface {
	AuditHead(ctx context.Context) (runmodel.AuditHead, error)
}

// Poster posts a message to a channel (the chat adapter).
type Poster interface {
	Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error)
}

// Outbox is the durable outbox heads are posted through
// (*delivery.Outbox): a head posted while chat is down goes out once it
// is back, across restarts.
type Outbox interface {
	Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message, meta delivery.Meta) (delivery.Handle, error)
	Flush(ctx context.Context)
}

// From names the checkpoint's posts in the outbox.
const From = "checkpoint"

// DefaultEvery is how often the head is posted when a channel is set and
// no period is given.
const DefaultEvery = time.Hour

// Options configure a Checkpointer.
type Options struct {
	Heads Heads
	// Outbox and Channel: where heads are posted; no channel, no posts.
	// Without an Outbox, Chat is used through an outbox of its own, kept
	// in memory (tests).
	Outbox   Outbox
	Chat     Poster
	Channel  string
	Platform string
	// Every is the posting period (default DefaultEvery).
	Every time.Duration
	// Ticks, when set, replaces the ticker of Run (tests).
	Ticks  <-chan time.Time
	Now    func() time.Time
	Logger *slog.Logger
}

// Checkpointer logs and posts audit heads.
type Checkpointer struct {
	o Options
	// posted is the last head posted; an unchanged head is not posted again.
	posted *runmodel.AuditHead
	// own: the outbox is the checkpointer's own (flushed by it).
	own bool
}

// New returns a Checkpointer.
func New(o Options) *Checkpointer {
	if o.Every <= 0 {
		o.Every = DefaultEvery
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := &Checkpointer{o: o}
	if o.Outbox == nil && o.Chat != nil {
		c.o.Outbox = delivery.New(delivery.Options{Chat: postOnly{o.Chat}, Logger: o.Logger, Now: o.Now})
		c.own = true
	}
	return c
}

// postOnly is a Poster as a chat that cannot edit.
type postOnly struct{ Poster }

func (postOnly) Update(context.Context, chatmodel.MessageRef, chatmodel.Message) error {
	return errors.New("checkpoint: cannot edit")
}

func (p postOnly) Ephemeral(ctx context.Context, to chatmodel.Conversation, _ chatmodel.User, m chatmodel.Message) error {
	_, err := p.Post(ctx, to, m)
	return err
}

// Log writes the current head to the log; why says when ("start", "run
// r-7f3a ended"). A failure to read the head is logged as an error.
func (c *Checkpointer) Log(ctx context.Context, why string) {
	h, err := c.o.Heads.AuditHead(ctx)
	if err != nil {
		c.o.Logger.Error("audit head unreadable", "when", why, "err", err)
		return
	}
	c.o.Logger.Info("audit head", "head", h.String(), "when", why,
		"verify", "groundcrew audit verify --expect "+h.String())
}

// Post posts the head to the checkpoint channel unless it was already
// posted unchanged. Without a channel it does nothing.
func (c *Checkpointer) Post(ctx context.Context) error {
	if c.o.Channel == "" || c.o.Outbox == nil {
		return nil
	}
	if c.own {
		c.o.Outbox.Flush(ctx)
	}
	h, err := c.o.Heads.AuditHead(ctx)
	if err != nil {
		return fmt.Errorf("reading the audit head: %w", err)
	}
	if c.posted != nil && *c.posted == h {
		return nil
	}
	// Queued: the checkpoint never waits for chat (serve posts it from the
	// outbox's goroutine; without one it is tried at once).
	posted, err := c.o.Outbox.Post(ctx, chatmodel.Conversation{Platform: c.o.Platform, Channel: c.o.Channel}, Message(h, c.o.Now()), delivery.Meta{From: From, Key: h.String(), Queue: true})
	if err != nil {
		return fmt.Errorf("posting the audit head to %s: %w", c.o.Channel, err)
	}
	c.posted = &h
	if posted.Ref.IsZero() {
		c.o.Logger.Info("audit head queued for chat: the outbox posts it", "head", h.String(), "channel", c.o.Channel)
		return nil
	}
	c.o.Logger.Info("audit head posted", "head", h.String(), "channel", c.o.Channel)
	return nil
}

// Message is the checkpoint message for head h at now.
func Message(h runmodel.AuditHead, now time.Time) chatmodel.Message {
	entries := "entries"
	if h.Count == 1 {
		entries = "entry"
	}
	return chatmodel.Message{Text: fmt.Sprintf("🧾 *Audit checkpoint* %s UTC — %d %s, head `%s`\nCheck the log still holds it: `groundcrew audit verify --expect %s`",
		now.UTC().Format("2006-01-02 15:04"), h.Count, entries, h.String(), h.String())}
}

// Run posts the head at start and then every period until ctx ends.
// Without a channel it returns at once. A post chat did not take is
// retried by the outbox.
func (c *Checkpointer) Run(ctx context.Context) error {
	if c.o.Channel == "" || c.o.Outbox == nil {
		return nil
	}
	ticks := c.o.Ticks
	if ticks == nil {
		t := time.NewTicker(c.o.Every)
		defer t.Stop()
		ticks = t.C
	}
	for {
		if err := c.Post(ctx); err != nil && ctx.Err() == nil {
			c.o.Logger.Error("audit checkpoint not posted", "channel", c.o.Channel, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
		}
	}
}

// Store wraps the engine's store so that the head is logged after every
// run that ends (succeeded, failed or cancelled). Nothing else changes.
func (c *Checkpointer) Store(s runmodel.Store) runmodel.Store { return &runEnds{Store: s, c: c} }

type runEnds struct {
	runmodel.Store
	c *Checkpointer
}

// UpdateRun implements runmodel.Runs: it notices the transition to a terminal
// state inside the transaction and logs the head once it is committed.
func (s *runEnds) UpdateRun(ctx context.Context, id string, fn func(r *runmodel.Run, b *runmodel.Batch) error) (*runmodel.Run, error) {
	ended := false
	r, err := s.Store.UpdateRun(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error {
		before := r.State
		if err := fn(r, b); err != nil {
			return err
		}
		ended = !before.Terminal() && r.State.Terminal()
		return nil
	})
	if err == nil && ended {
		s.c.Log(ctx, fmt.Sprintf("run %s %s", r.ID, r.State))
	}
	return r, err
}
