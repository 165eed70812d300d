package bot

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// threadOf is where a run's replies go.
func threadOf(r *Run) Conversation {
	c := r.Conversation
	if c.Thread == "" {
		c.Thread = r.Root.ID
	}
	return c
}

// postThread posts a message in the run's thread; a failed post goes to the
// durable outbox and is retried by Tick.
func (e *Engine) postThread(ctx context.Context, r *Run, role, step string, m Message) MessageRef {
	to := threadOf(r)
	ref, err := e.o.Chat.Post(ctx, to, m.Clean())
	if err != nil {
		e.toOutbox(ctx, OutboxItem{To: to, Message: m, RunID: r.ID, Step: step, Role: role}, err)
		return MessageRef{}
	}
	return ref
}

// toOutbox stores a failed post or update for a later retry.
func (e *Engine) toOutbox(ctx context.Context, it OutboxItem, cause error) {
	now := e.o.Now()
	if it.ID == "" {
		if !it.Update.IsZero() {
			it.ID = "u|" + it.Update.Channel + "|" + it.Update.ID // a newer update replaces an older one
		} else {
			it.ID = fmt.Sprintf("p|%020d", now.UnixNano())
		}
	}
	if it.Queued.IsZero() {
		it.Queued = now
	}
	it.Attempts++
	it.LastErr = userMessage(cause)
	backoff := time.Duration(1<<min(it.Attempts, 8)) * time.Second
	it.NextTry = now.Add(backoff)
	e.log.Warn("chat post failed; queued for retry", "run", it.RunID, "attempts", it.Attempts, "err", cause)
	e.putOutbox(ctx, it)
}

// flushOutbox retries queued posts that are due.
func (e *Engine) flushOutbox(ctx context.Context) {
	items, redelete, err := e.outboxItems(ctx)
	if err != nil {
		e.log.Error("reading the outbox", "err", err)
	}
	for _, id := range redelete {
		e.deleteOutbox(ctx, id, "")
	}
	now := e.o.Now()
	for _, it := range items {
		if it.NextTry.After(now) {
			continue
		}
		if !it.Update.IsZero() {
			if err := e.o.Chat.Update(ctx, it.Update, it.Message.Clean()); err != nil {
				e.toOutbox(ctx, it, err)
				continue
			}
			e.deleteOutbox(ctx, it.ID, it.RunID)
			continue
		}
		ref, err := e.o.Chat.Post(ctx, it.To, it.Message.Clean())
		if err != nil {
			e.toOutbox(ctx, it, err)
			continue
		}
		e.deleteOutbox(ctx, it.ID, it.RunID)
		if it.RunID != "" {
			e.saveRef(ctx, it.RunID, it.Role, it.Step, ref)
		}
	}
}

// saveRef remembers where a run's message was posted. Without it every
// reaction on the message would be ignored, so a failed write is retried
// and then reported in the thread with the typed command to use instead.
func (e *Engine) saveRef(ctx context.Context, runID, role, step string, ref MessageRef) {
	if ref.IsZero() {
		return
	}
	what := "the reference of the " + role + " message"
	if step != "" {
		what += " of step " + step
	}
	what += " (reactions and buttons on it are not seen; type the `/runbook` command instead)"
	_, _ = e.updateDurably(ctx, runID, what, func(r *Run, b *Batch) error {
		switch role {
		case "root":
			r.Root = ref
		case "step":
			if st := r.step(step); st != nil {
				st.Message = ref
			}
		case "gate":
			if r.Gate != nil && r.Gate.StepID == step && r.Gate.Message.IsZero() {
				r.Gate.Message = ref
			}
		}
		b.Messages = append(b.Messages, MessageIndex{Ref: ref, RunID: runID, Step: step, Role: role})
		return nil
	})
}

// updateOrPost updates ref in place, or posts when there is no ref yet.
func (e *Engine) updateOrPost(ctx context.Context, r *Run, ref MessageRef, role, step string, m Message) {
	if ref.IsZero() {
		defer e.posting()()
		e.saveRef(ctx, r.ID, role, step, e.postThread(ctx, r, role, step, m))
		return
	}
	if err := e.o.Chat.Update(ctx, ref, m.Clean()); err != nil {
		e.toOutbox(ctx, OutboxItem{Update: ref, Message: m, RunID: r.ID, Step: step, Role: role}, err)
	}
}

// postStep posts or updates the message of one step.
func (e *Engine) postStep(ctx context.Context, r *Run, stepID string) {
	st := r.step(stepID)
	if st == nil || st.Branch && st.Message.IsZero() {
		return
	}
	e.updateOrPost(ctx, r, st.Message, "step", stepID, e.renderStep(r, st))
	if st.Detail != "" && st.Status.Done() {
		e.postThread(ctx, r, "detail", stepID, Message{Text: st.Detail})
	}
}

// postGate posts the gate message of the run's open gate.
func (e *Engine) postGate(ctx context.Context, r *Run) {
	g := r.Gate
	if g == nil {
		return
	}
	m := e.renderGate(r, g)
	m.Broadcast = true
	done := e.posting()
	ref := e.postThread(ctx, r, "gate", g.StepID, m)
	e.saveRef(ctx, r.ID, "gate", g.StepID, ref)
	done()
	if g.Plan != nil && len(g.Plan.Items) > planInline {
		e.postThread(ctx, r, "detail", g.StepID, Message{Text: fmt.Sprintf("Full plan of `%s` (%d items, plan hash `%s`):", g.ID, len(g.Plan.Items), short(g.PlanHash)), Detail: renderPlanItems(g.Plan, 100000)})
	}
}

// updateGateMessage refreshes a gate message in place.
func (e *Engine) updateGateMessage(ctx context.Context, r *Run, g *Gate) {
	if g == nil || g.Message.IsZero() {
		return
	}
	if err := e.o.Chat.Update(ctx, g.Message, e.renderGate(r, g).Clean()); err != nil {
		e.toOutbox(ctx, OutboxItem{Update: g.Message, Message: e.renderGate(r, g), RunID: r.ID}, err)
	}
}

// refreshRoot updates the run's root message with its current status.
func (e *Engine) refreshRoot(ctx context.Context, r *Run) {
	if r.Root.IsZero() {
		return
	}
	m := e.renderRoot(r)
	if err := e.o.Chat.Update(ctx, r.Root, m.Clean()); err != nil {
		e.toOutbox(ctx, OutboxItem{Update: r.Root, Message: m, RunID: r.ID}, err)
	}
}

// reply answers a user: ephemerally where the platform allows.
func (e *Engine) reply(ctx context.Context, to Conversation, user User, text string) {
	if err := e.o.Chat.Ephemeral(ctx, to, user, Message{Text: text}.Clean()); err != nil {
		e.log.Warn("ephemeral reply failed", "user", user.ID, "err", err)
	}
}

// posting marks a post whose reference is not stored yet; the returned
// function ends it. A reaction can arrive between the two (people are
// quick, chat servers quicker): reactionTarget waits for these.
func (e *Engine) posting() func() {
	e.mu.Lock()
	e.inFlight++
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		e.inFlight--
		e.idle.Broadcast()
		e.mu.Unlock()
	}
}

// reactionTarget finds the run a reacted message belongs to, waiting a
// little while posts are in flight, so an early reaction is not lost.
func (e *Engine) reactionTarget(ctx context.Context, ref MessageRef) (MessageIndex, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		idx, err := e.o.Store.RunByMessage(ctx, ref)
		if !errors.Is(err, ErrNotFound) {
			return idx, err
		}
		e.mu.Lock()
		pending := e.inFlight
		e.mu.Unlock()
		if pending == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return idx, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
