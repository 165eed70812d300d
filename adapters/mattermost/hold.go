package mattermost

import (
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/bot"
)

// holds keeps back events on a message whose Post call has not returned
// yet (plus a short settle time), because the engine can only match an
// event to its run once Post returned the message's ref and the engine
// stored it. A gate with buttons is visible (and clickable) a moment before
// Post returns; without the hold an early ✅ would be dropped as a reaction
// on an unknown message — and, already recorded as seen, never replayed.
type holds struct {
	mu    sync.Mutex
	posts map[string]*hold
}

type hold struct {
	queue    []bot.Event
	released chan struct{}
}

// begin holds events on post until release.
func (h *holds) begin(post string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.posts == nil {
		h.posts = map[string]*hold{}
	}
	h.posts[post] = &hold{released: make(chan struct{})}
}

// release delivers the queued events in order after settle, then lets
// later events through directly.
func (h *holds) release(post string, settle time.Duration, deliver func(bot.Event)) {
	time.AfterFunc(settle, func() {
		for {
			h.mu.Lock()
			hd := h.posts[post]
			if hd == nil {
				h.mu.Unlock()
				return
			}
			batch := hd.queue
			hd.queue = nil
			if len(batch) == 0 {
				delete(h.posts, post)
				close(hd.released)
				h.mu.Unlock()
				return
			}
			h.mu.Unlock()
			for _, e := range batch {
				deliver(e)
			}
		}
	})
}

// enqueue queues e if post is held and reports whether it did.
func (h *holds) enqueue(post string, e bot.Event) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	hd := h.posts[post]
	if hd == nil {
		return false
	}
	hd.queue = append(hd.queue, e)
	return true
}

// wait blocks until post is released (at most max).
func (h *holds) wait(post string, max time.Duration) {
	h.mu.Lock()
	hd := h.posts[post]
	h.mu.Unlock()
	if hd == nil {
		return
	}
	select {
	case <-hd.released:
	case <-time.After(max):
	}
}
