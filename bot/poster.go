package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// threadOf is where a run's replies go.
func threadOf(r *runmodel.Run) chatmodel.Conversation {
	c := r.Conversation
	if c.Thread == "" {
		c.Thread = r.Root.ID
	}
	return c
}

// poster has one concern: getting the engine's messages to chat. It renders
// a run's messages (root, steps, gate: plain functions in render.go), posts
// and edits them, stores the reference of every message people answer
// (root, step, gate) before its post counts as finished, keeps track of the
// posts in flight so a reaction that outruns its message's reference waits
// for it (messageTarget), and hands every failed post or edit to the
// outbox, which it flushes on each tick.
type poster struct {
	delivery *delivery.Outbox      // sanitises, posts, and queues what fails
	check    chatmodel.PostChecker // nil: the platform cannot tell
	store    runmodel.Store
	writes   *durableWriter
	log      *slog.Logger
	now      func() time.Time
	hints    hints
	// runLink gives a run's page (Options.RunLink), or nil.
	runLink func(id string, started time.Time) string

	mu sync.Mutex
	// inFlight are the posts whose message reference is not stored yet;
	// each channel is closed once it is (see posting).
	inFlight map[uint64]chan struct{}
	seq      uint64
}

func newPoster(d *delivery.Outbox, caps Capabilities, store runmodel.Store, writes *durableWriter, log *slog.Logger, now func() time.Time) *poster {
	p := &poster{delivery: d, check: caps.PostChecker, store: store, writes: writes, log: log, now: now,
		hints: hintsFor(caps.Reactions), inFlight: map[uint64]chan struct{}{}}
	recv := delivery.Receiver{
		Delivered: func(ctx context.Context, it runmodel.OutboxItem, ref chatmodel.MessageRef) {
			if it.RunID != "" && it.Role.Indexed() {
				p.saveRef(ctx, it.RunID, it.Role, it.Step, ref)
			}
		},
		Posting: p.posting,
		Save: func(ctx context.Context, runID, what string, write func() error) error {
			return writes.do(ctx, runID, what, func() (bool, error) { return false, write() })
		},
	}
	d.Register(fromRun, recv)
	d.Register("", recv) // items queued before senders were named
	return p
}

// fromRun names the engine's messages in the outbox.
const fromRun = "run"

func runMeta(runID string, role chatmodel.MessageRole, step string) delivery.Meta {
	return delivery.Meta{From: fromRun, RunID: runID, Role: role, Step: step}
}

// thread posts a message in the run's thread (see post). While the root
// message waits in the outbox, the reply waits behind it and goes in its
// thread once it is posted.
func (p *poster) thread(ctx context.Context, r *runmodel.Run, role chatmodel.MessageRole, step string, m chatmodel.Message) chatmodel.MessageRef {
	if r.Root.IsZero() && r.RootPending != "" {
		to := r.Conversation
		return p.send(ctx, r.ID, role, step, m, func(m chatmodel.Message, meta delivery.Meta) (delivery.Handle, error) {
			return p.delivery.Reply(ctx, to, delivery.Handle{Pending: r.RootPending}, m, meta)
		})
	}
	return p.post(ctx, threadOf(r), r.ID, role, step, m)
}

// post posts a message of run runID. The reference of a message people
// answer (root, step, gate) is stored before the post counts as finished:
// a reaction or click that arrives meanwhile waits for it (messageTarget),
// however quick it is. A failed post goes to the durable outbox.
func (p *poster) post(ctx context.Context, to chatmodel.Conversation, runID string, role chatmodel.MessageRole, step string, m chatmodel.Message) chatmodel.MessageRef {
	return p.send(ctx, runID, role, step, m, func(m chatmodel.Message, meta delivery.Meta) (delivery.Handle, error) {
		return p.delivery.Post(ctx, to, m, meta)
	})
}

// send posts one message of a run through deliver and stores its
// reference (or, for a root chat did not take, its outbox item).
func (p *poster) send(ctx context.Context, runID string, role chatmodel.MessageRole, step string, m chatmodel.Message, deliver func(chatmodel.Message, delivery.Meta) (delivery.Handle, error)) chatmodel.MessageRef {
	m.RunID, m.Role, m.Step = runID, role, step
	done := p.posting()
	defer done()
	h, _ := deliver(m, runMeta(runID, role, step))
	ref := h.Ref
	if ref.IsZero() {
		if role == chatmodel.RoleRoot && h.Pending != "" {
			p.savePendingRoot(ctx, runID, h.Pending)
		}
		return chatmodel.MessageRef{} // queued: saved when it is delivered
	}
	if role.Indexed() {
		p.saveRef(ctx, runID, role, step, ref)
	}
	return ref
}

// savePendingRoot remembers the outbox item of a root chat did not take,
// so the run's replies wait for it.
func (p *poster) savePendingRoot(ctx context.Context, runID, item string) {
	_, _ = p.writes.updateRun(ctx, runID, "the queued root message", func(r *runmodel.Run, _ *runmodel.Batch) error {
		if r.Root.IsZero() {
			r.RootPending = item
		}
		return nil
	})
}

// plain posts a message that belongs to no run (summaries, digests).
func (p *poster) plain(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) {
	_, _ = p.delivery.Post(ctx, to, m, delivery.Meta{From: fromRun})
}

// update updates one posted message of r; a failed update is retried.
func (p *poster) update(ctx context.Context, r *runmodel.Run, ref chatmodel.MessageRef, role chatmodel.MessageRole, step string, m chatmodel.Message) {
	m.RunID, m.Role, m.Step = r.ID, role, step
	_ = p.delivery.Update(ctx, delivery.Handle{Ref: ref}, m, runMeta(r.ID, role, step))
}

// updateOrPost updates ref in place, or posts when there is no ref yet.
func (p *poster) updateOrPost(ctx context.Context, r *runmodel.Run, ref chatmodel.MessageRef, role chatmodel.MessageRole, step string, m chatmodel.Message) {
	if ref.IsZero() {
		p.thread(ctx, r, role, step, m)
		return
	}
	p.update(ctx, r, ref, role, step, m)
}

// reply answers a user: ephemerally where the platform allows.
func (p *poster) reply(ctx context.Context, to chatmodel.Conversation, user chatmodel.User, text string) {
	if err := p.delivery.Ephemeral(ctx, to, user, chatmodel.Message{Text: text}); err != nil {
		p.log.Warn("ephemeral reply failed", "user", user.ID, "err", err)
	}
}

// replyMessage answers a user with a message (buttons and all):
// ephemerally where the platform allows.
func (p *poster) replyMessage(ctx context.Context, to chatmodel.Conversation, user chatmodel.User, m chatmodel.Message) {
	if err := p.delivery.Ephemeral(ctx, to, user, m); err != nil {
		p.log.Warn("ephemeral reply failed", "user", user.ID, "err", err)
	}
}

// runFor loads a run named in a command, answering the user when it cannot.
func (p *poster) runFor(ctx context.Context, id string, conv chatmodel.Conversation, user chatmodel.User) (*runmodel.Run, bool) {
	r, err := p.store.GetRun(ctx, id)
	switch {
	case errors.Is(err, chatmodel.ErrNotFound):
		p.reply(ctx, conv, user, fmt.Sprintf("There is no run `%s`. `/runbook status` lists the active runs.", id))
		return nil, false
	case err != nil:
		p.reply(ctx, conv, user, "⚠️ Could not read run `"+id+"`: "+chatmodel.UserMessage(err))
		return nil, false
	}
	return r, true
}

// flush retries the outbox's posts and updates that are due.
func (p *poster) flush(ctx context.Context) { p.delivery.Flush(ctx) }

// saveRef remembers where a run's message was posted. Without it every
// reaction on the message would be ignored, so a failed write is retried
// and then reported in the thread with the typed command to use instead.
func (p *poster) saveRef(ctx context.Context, runID string, role chatmodel.MessageRole, step string, ref chatmodel.MessageRef) {
	if ref.IsZero() {
		return
	}
	what := "the reference of the " + string(role) + " message"
	if step != "" {
		what += " of step " + step
	}
	what += " (reactions and buttons on it are not seen; type the `/runbook` command instead)"
	_, _ = p.writes.updateRun(ctx, runID, what, func(r *runmodel.Run, b *runmodel.Batch) error {
		switch role {
		case chatmodel.RoleRoot:
			r.Root, r.RootPending = ref, ""
		case chatmodel.RoleStep:
			if st := r.Step(step); st != nil {
				st.Message = ref
			}
		case chatmodel.RoleGate:
			if r.Gate != nil && r.Gate.StepID == step && r.Gate.Message.IsZero() {
				r.Gate.Message = ref
			}
		}
		b.Messages = append(b.Messages, runmodel.MessageIndex{Ref: ref, RunID: runID, Step: step, Role: role})
		return nil
	})
}

// posting marks a post in flight until the returned function is called,
// which the poster does only after it stored the message's reference.
func (p *poster) posting() func() {
	p.mu.Lock()
	p.seq++
	id, ch := p.seq, make(chan struct{})
	p.inFlight[id] = ch
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.inFlight, id)
		p.mu.Unlock()
		close(ch)
	}
}

// messageTarget finds the run a message belongs to. A reaction or a click
// can only be on a message whose post has returned to its poster; if the
// message is not known, it waits for the posts in flight when it was
// called (their references are stored before they finish), then looks
// again. It never waits for later posts.
func (p *poster) messageTarget(ctx context.Context, ref chatmodel.MessageRef) (runmodel.MessageIndex, error) {
	idx, err := p.store.RunByMessage(ctx, ref)
	if !errors.Is(err, chatmodel.ErrNotFound) {
		return idx, err
	}
	p.mu.Lock()
	pending := make([]chan struct{}, 0, len(p.inFlight))
	for _, ch := range p.inFlight {
		pending = append(pending, ch)
	}
	p.mu.Unlock()
	if len(pending) == 0 {
		return idx, err
	}
	for _, ch := range pending {
		select {
		case <-ch:
		case <-ctx.Done():
			return idx, ctx.Err()
		}
	}
	return p.store.RunByMessage(ctx, ref)
}

// canPost refuses a run the bot could not post (#19.5): a channel it is
// not in. The adapter's answer says how to invite it. A check that could
// not be made (the platform unreachable) does not refuse: the outbox
// retries then.
func (p *poster) canPost(ctx context.Context, to chatmodel.Conversation) error {
	if p.check == nil {
		return nil
	}
	err := p.check.CanPost(ctx, to)
	if err == nil {
		return nil
	}
	var ue *chatmodel.UserError
	if errors.As(err, &ue) || errors.Is(err, chatmodel.ErrCannotPost) {
		p.log.Warn("run refused: the bot cannot post in the channel", "channel", to.Channel, "err", err)
		if ue != nil {
			return ue
		}
		return &chatmodel.UserError{Msg: "I cannot post in this channel: " + chatmodel.UserMessage(err)}
	}
	p.log.Warn("could not check that the bot can post in the channel; starting the run anyway", "channel", to.Channel, "err", err)
	return nil
}
