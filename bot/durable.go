package bot

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Durability: every store write the engine makes either succeeds, is
// retried, or fails loudly — logged at error level with the run id,
// remembered so `/runbook status` shows it, and announced in the run's
// thread so a person sees it. Nothing is dropped silently.

// writeRetries are the pauses before each further attempt of a failed
// store write (a full disk or a slow fsync is often over in a moment).
var writeRetries = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond}

// writeFailures remembers, per run, the writes that failed after every
// retry (in memory: the store is what failed).
type writeFailures struct {
	mu    sync.Mutex
	byRun map[string][]string
	// delivered are outbox items that were posted but could not be
	// deleted from the store: they are never posted again.
	delivered map[string]bool
	// outbox keeps failed posts that could not be saved to the store's
	// outbox, so they are still retried while the process lives.
	outbox map[string]OutboxItem
}

func (w *writeFailures) add(runID, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byRun == nil {
		w.byRun = map[string][]string{}
	}
	w.byRun[runID] = append(w.byRun[runID], what)
}

// For returns the failed writes of a run, oldest first.
func (w *writeFailures) For(runID string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.byRun[runID]...)
}

// FailedWrites returns the store writes of a run that failed after every
// retry since the process started (shown by /runbook status).
func (e *Engine) FailedWrites(runID string) []string { return e.writes.For(runID) }

// durably runs write, retrying a failure; permanent (a typed user error,
// errRunOver, ErrNotFound) ends the attempts at once. After the last
// failed attempt it fails loudly and returns the error.
func (e *Engine) durably(ctx context.Context, runID, what string, write func() (permanent bool, err error)) error {
	var err error
	for i := 0; ; i++ {
		var permanent bool
		permanent, err = write()
		if err == nil || permanent {
			return err
		}
		if i >= len(writeRetries) {
			break
		}
		e.log.Warn("store write failed; retrying", "run", runID, "what", what, "attempt", i+1, "err", err)
		time.Sleep(writeRetries[i])
	}
	e.writeFailed(ctx, runID, what, err)
	return err
}

// writeFailed makes a lost write visible: error log, the run's failure
// list, and a message in the run's thread.
func (e *Engine) writeFailed(ctx context.Context, runID, what string, err error) {
	e.log.Error("store write failed after retries: a person must check this run", "run", runID, "what", what, "attempts", len(writeRetries)+1, "err", err)
	if runID == "" {
		return
	}
	e.writes.add(runID, what)
	r, gerr := e.o.Store.GetRun(ctx, runID)
	if gerr != nil {
		return
	}
	text := fmt.Sprintf("⚠️ groundcrew could not save %s of run `%s` to its store (%d attempts): %s\nThe run may not show it. Check `/runbook status %s`; if you just voted or answered a step, do it again.",
		what, r.ID, len(writeRetries)+1, UserMessage(err), r.ID)
	if _, perr := e.o.Chat.Post(ctx, threadOf(r), Message{Text: text}.Clean()); perr != nil {
		e.log.Error("could not announce a failed store write", "run", runID, "err", perr)
	}
}

// updateDurably is Store.UpdateRun with retries of store failures: fn is
// run again on the freshly read run (nothing of a failed transaction was
// written). An error returned by fn, or ErrNotFound, is not retried.
func (e *Engine) updateDurably(ctx context.Context, id, what string, fn func(*Run, *Batch) error) (*Run, error) {
	var out *Run
	err := e.durably(ctx, id, what, func() (bool, error) {
		var fnErr error
		r, err := e.o.Store.UpdateRun(ctx, id, func(r *Run, b *Batch) error {
			fnErr = fn(r, b)
			return fnErr
		})
		if err != nil {
			return fnErr != nil || errors.Is(err, ErrNotFound) || ctx.Err() != nil, err
		}
		out = r
		return false, nil
	})
	return out, err
}

// putOutbox saves a failed post durably; when the store refuses it the
// post is kept in memory and still retried.
func (e *Engine) putOutbox(ctx context.Context, it OutboxItem) {
	err := e.durably(ctx, it.RunID, "a chat message waiting to be re-sent", func() (bool, error) {
		return false, e.o.Store.PutOutbox(ctx, it)
	})
	e.writes.mu.Lock()
	defer e.writes.mu.Unlock()
	if e.writes.outbox == nil {
		e.writes.outbox = map[string]OutboxItem{}
	}
	if err != nil {
		e.writes.outbox[it.ID] = it
	} else {
		delete(e.writes.outbox, it.ID)
	}
}

// deleteOutbox removes a delivered post from the outbox. If the store
// refuses, the item is remembered as delivered so it is never posted twice,
// and its deletion is tried again at the next flush.
func (e *Engine) deleteOutbox(ctx context.Context, id, runID string) {
	err := e.durably(ctx, runID, "the removal of a delivered message from the outbox", func() (bool, error) {
		return false, e.o.Store.DeleteOutbox(ctx, id)
	})
	e.writes.mu.Lock()
	defer e.writes.mu.Unlock()
	delete(e.writes.outbox, id)
	if e.writes.delivered == nil {
		e.writes.delivered = map[string]bool{}
	}
	if err != nil {
		e.writes.delivered[id] = true
	} else {
		delete(e.writes.delivered, id)
	}
}

// outboxItems returns the store's outbox plus the items kept in memory,
// oldest first, and the delivered ids whose deletion must be retried.
func (e *Engine) outboxItems(ctx context.Context) ([]OutboxItem, []string, error) {
	items, err := e.o.Store.ListOutbox(ctx)
	e.writes.mu.Lock()
	defer e.writes.mu.Unlock()
	seen := map[string]bool{}
	var out []OutboxItem
	var redelete []string
	for _, it := range items {
		seen[it.ID] = true
		if e.writes.delivered[it.ID] {
			redelete = append(redelete, it.ID)
			continue
		}
		out = append(out, it)
	}
	for id, it := range e.writes.outbox {
		if !seen[id] && !e.writes.delivered[id] {
			out = append(out, it)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, redelete, err
}
