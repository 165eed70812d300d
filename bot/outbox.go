package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// Outbox retry limits: a post is tried at most maxPostAttempts times, with
// an exponential backoff capped at maxPostBackoff (about 40 minutes in
// all); then it is given up, which is logged and shown in /runbook status.
const (
	maxPostAttempts = 10
	maxPostBackoff  = 8 * time.Minute
)

// outbox has one concern: the chat posts and edits that failed. It keeps
// them in the store for a later retry with backoff, gives them up loudly
// after maxPostAttempts, and never loses or repeats one when the store
// itself fails: a post it could not save is kept in memory and still
// retried, a delivered post it could not delete is never posted again.
type outbox struct {
	store  Store
	writes *durableWriter
	log    *slog.Logger
	now    func() time.Time

	mu sync.Mutex
	// delivered are items that were posted but could not be deleted from
	// the store: they are never posted again.
	delivered map[string]bool
	// unsaved are failed posts that could not be saved to the store, so
	// they are still retried while the process lives.
	unsaved map[string]OutboxItem
}

func newOutbox(store Store, writes *durableWriter, log *slog.Logger, now func() time.Time) *outbox {
	return &outbox{store: store, writes: writes, log: log, now: now, delivered: map[string]bool{}, unsaved: map[string]OutboxItem{}}
}

// queue stores a failed post or update for a later retry, or gives it up
// once it has failed maxPostAttempts times or cannot succeed.
func (o *outbox) queue(ctx context.Context, it OutboxItem, cause error) {
	now := o.now()
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
		o.log.Error("chat post failed; gave up", "run", it.RunID, "role", it.Role, "attempts", it.Attempts, "err", cause)
	} else {
		o.log.Warn("chat post failed; queued for retry", "run", it.RunID, "role", it.Role, "attempts", it.Attempts, "next_try", it.NextTry, "err", cause)
	}
	o.put(ctx, it)
}

// put saves a failed post durably; when the store refuses it the post is
// kept in memory and still retried.
func (o *outbox) put(ctx context.Context, it OutboxItem) {
	err := o.writes.do(ctx, it.RunID, "a chat message waiting to be re-sent", func() (bool, error) {
		return false, o.store.PutOutbox(ctx, it)
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		o.unsaved[it.ID] = it
	} else {
		delete(o.unsaved, it.ID)
	}
}

// done removes a delivered post from the outbox. If the store refuses, the
// item is remembered as delivered so it is never posted twice, and its
// deletion is tried again at the next flush.
func (o *outbox) done(ctx context.Context, id, runID string) {
	err := o.writes.do(ctx, runID, "the removal of a delivered message from the outbox", func() (bool, error) {
		return false, o.store.DeleteOutbox(ctx, id)
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.unsaved, id)
	if err != nil {
		o.delivered[id] = true
	} else {
		delete(o.delivered, id)
	}
}

// due returns the items to try now (the store's outbox plus the items kept
// in memory, oldest first), after retrying the deletion of delivered ones.
func (o *outbox) due(ctx context.Context) []OutboxItem {
	items, redelete, err := o.items(ctx)
	if err != nil {
		o.log.Error("reading the outbox", "err", err)
	}
	for _, id := range redelete {
		o.done(ctx, id, "")
	}
	now := o.now()
	var out []OutboxItem
	for _, it := range items {
		if it.GaveUp || it.NextTry.After(now) {
			continue
		}
		out = append(out, it)
	}
	return out
}

// items returns the store's outbox plus the items kept in memory, oldest
// first, and the delivered ids whose deletion must be retried.
func (o *outbox) items(ctx context.Context) ([]OutboxItem, []string, error) {
	items, err := o.store.ListOutbox(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[string]bool{}
	var out []OutboxItem
	var redelete []string
	for _, it := range items {
		seen[it.ID] = true
		if o.delivered[it.ID] {
			redelete = append(redelete, it.ID)
			continue
		}
		out = append(out, it)
	}
	for id, it := range o.unsaved {
		if !seen[id] && !o.delivered[id] {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, redelete, err
}
