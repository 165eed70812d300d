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

// postThread posts a message in the run's thread (see postRun).
func (e *Engine) postThread(ctx context.Context, r *Run, role MessageRole, step string, m Message) MessageRef {
	return e.postRun(ctx, threadOf(r), r.ID, role, step, m)
}

// postRun posts a message of run runID. The reference of a message people
// answer (root, step, gate) is stored before the post counts as finished:
// a reaction or click that arrives meanwhile waits for it (messageTarget),
// however quick it is. A failed post goes to the durable outbox.
func (e *Engine) postRun(ctx context.Context, to Conversation, runID string, role MessageRole, step string, m Message) MessageRef {
	m.RunID, m.Role, m.Step = runID, role, step
	done := e.posting()
	defer done()
	ref, err := e.o.Chat.Post(ctx, to, m.Clean())
	if err != nil {
		e.toOutbox(ctx, OutboxItem{To: to, Message: m, RunID: runID, Step: step, Role: role}, err)
		return MessageRef{}
	}
	if role.indexed() {
		e.saveRef(ctx, runID, role, step, ref)
	}
	return ref
}

// Outbox retry limits: a post is tried at most maxPostAttempts times, with
// an exponential backoff capped at maxPostBackoff (about 40 minutes in
// all); then it is given up, which is logged and shown in /runbook status.
const (
	maxPostAttempts = 10
	maxPostBackoff  = 8 * time.Minute
)

// toOutbox stores a failed post or update for a later retry, or gives it
// up once it has failed maxPostAttempts times or cannot succeed.
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
	it.LastErr = UserMessage(cause)
	backoff := min(time.Duration(1<<min(it.Attempts, 10))*time.Second, maxPostBackoff)
	it.NextTry = now.Add(backoff)
	if it.Attempts >= maxPostAttempts || errors.Is(cause, ErrCannotPost) {
		it.GaveUp = true
		e.log.Error("chat post failed; gave up", "run", it.RunID, "role", it.Role, "attempts", it.Attempts, "err", cause)
	} else {
		e.log.Warn("chat post failed; queued for retry", "run", it.RunID, "role", it.Role, "attempts", it.Attempts, "next_try", it.NextTry, "err", cause)
	}
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
		if it.GaveUp || it.NextTry.After(now) {
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
		done := e.posting()
		ref, err := e.o.Chat.Post(ctx, it.To, it.Message.Clean())
		if err != nil {
			done()
			e.toOutbox(ctx, it, err)
			continue
		}
		e.deleteOutbox(ctx, it.ID, it.RunID)
		if it.RunID != "" && it.Role.indexed() {
			e.saveRef(ctx, it.RunID, it.Role, it.Step, ref)
		}
		done()
	}
}

// saveRef remembers where a run's message was posted. Without it every
// reaction on the message would be ignored, so a failed write is retried
// and then reported in the thread with the typed command to use instead.
func (e *Engine) saveRef(ctx context.Context, runID string, role MessageRole, step string, ref MessageRef) {
	if ref.IsZero() {
		return
	}
	what := "the reference of the " + string(role) + " message"
	if step != "" {
		what += " of step " + step
	}
	what += " (reactions and buttons on it are not seen; type the `/runbook` command instead)"
	_, _ = e.updateDurably(ctx, runID, what, func(r *Run, b *Batch) error {
		switch role {
		case RoleRoot:
			r.Root = ref
		case RoleStep:
			if st := r.step(step); st != nil {
				st.Message = ref
			}
		case RoleGate:
			if r.Gate != nil && r.Gate.StepID == step && r.Gate.Message.IsZero() {
				r.Gate.Message = ref
			}
		}
		b.Messages = append(b.Messages, MessageIndex{Ref: ref, RunID: runID, Step: step, Role: role})
		return nil
	})
}

// updateOrPost updates ref in place, or posts when there is no ref yet.
func (e *Engine) updateOrPost(ctx context.Context, r *Run, ref MessageRef, role MessageRole, step string, m Message) {
	if ref.IsZero() {
		e.postThread(ctx, r, role, step, m)
		return
	}
	e.update1(ctx, r, ref, role, step, m)
}

// update1 updates one posted message of r; a failed update is retried.
func (e *Engine) update1(ctx context.Context, r *Run, ref MessageRef, role MessageRole, step string, m Message) {
	m.RunID, m.Role, m.Step = r.ID, role, step
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
	e.updateOrPost(ctx, r, st.Message, RoleStep, stepID, e.renderStep(r, st))
	if st.Detail != "" && st.Status.Done() {
		e.postThread(ctx, r, RoleDetail, stepID, Message{Text: st.Detail})
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
	e.postThread(ctx, r, RoleGate, g.StepID, m)
	if g.Plan != nil && len(g.Plan.Items) > planInline {
		e.postThread(ctx, r, RoleDetail, g.StepID, Message{Text: fmt.Sprintf("Full plan of `%s` (%d items, plan hash `%s`):", g.ID, len(g.Plan.Items), short(g.PlanHash)), Detail: renderPlanItems(g.Plan, 100000)})
	}
}

// updateGateMessage refreshes a gate message in place.
func (e *Engine) updateGateMessage(ctx context.Context, r *Run, g *Gate) {
	if g == nil || g.Message.IsZero() {
		return
	}
	e.update1(ctx, r, g.Message, RoleGate, g.StepID, e.renderGate(r, g))
}

// refreshRoot updates the run's root message with its current status.
func (e *Engine) refreshRoot(ctx context.Context, r *Run) {
	if r.Root.IsZero() {
		return
	}
	e.update1(ctx, r, r.Root, RoleRoot, "", e.renderRoot(r))
}

// reply answers a user: ephemerally where the platform allows.
func (e *Engine) reply(ctx context.Context, to Conversation, user User, text string) {
	if err := e.o.Chat.Ephemeral(ctx, to, user, Message{Text: text}.Clean()); err != nil {
		e.log.Warn("ephemeral reply failed", "user", user.ID, "err", err)
	}
}

// posting marks a post in flight until the returned function is called,
// which the poster does only after it stored the message's reference.
func (e *Engine) posting() func() {
	e.mu.Lock()
	e.postSeq++
	id, ch := e.postSeq, make(chan struct{})
	e.posts[id] = ch
	e.mu.Unlock()
	return func() {
		e.mu.Lock()
		delete(e.posts, id)
		e.mu.Unlock()
		close(ch)
	}
}

// messageTarget finds the run a message belongs to. A reaction or a click
// can only be on a message whose post has returned to its poster; if the
// message is not known, it waits for the posts in flight when it was
// called (their references are stored before they finish), then looks
// again. It never waits for later posts.
func (e *Engine) messageTarget(ctx context.Context, ref MessageRef) (MessageIndex, error) {
	idx, err := e.o.Store.RunByMessage(ctx, ref)
	if !errors.Is(err, ErrNotFound) {
		return idx, err
	}
	e.mu.Lock()
	pending := make([]chan struct{}, 0, len(e.posts))
	for _, ch := range e.posts {
		pending = append(pending, ch)
	}
	e.mu.Unlock()
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
	return e.o.Store.RunByMessage(ctx, ref)
}
