package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Hub is the process's one source of changes: the store's commits come
// in (Publish: from a store wrapper on bbolt, from PostgreSQL's
// LISTEN/NOTIFY on every replica), and every live page waiting for that
// run hears of it. A subscriber's channel holds one pending signal, so a
// burst of commits is one wake-up, never a queue; nothing polls.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
	gen  map[string]uint64
	all  uint64 // bumped by Resync
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{subs: map[string]map[chan struct{}]struct{}{}, gen: map[string]uint64{}}
}

func hubKey(kind, id string) string { return kind + ":" + strings.ToLower(id) }

// Publish says that kind ("run", "incident") id was committed.
func (h *Hub) Publish(kind, id string) {
	if h == nil {
		return
	}
	k := hubKey(kind, id)
	h.mu.Lock()
	h.gen[k]++
	if len(h.gen) > 100_000 {
		// generations only need to differ from the one a snapshot read:
		// forgetting them all makes every snapshot stale once, no more
		clear(h.gen)
		h.all++
	}
	for ch := range h.subs[k] {
		signal(ch)
	}
	h.mu.Unlock()
}

// Resync wakes every subscriber (the source of changes lost commits: a
// dropped LISTEN connection): each page reads its run again.
func (h *Hub) Resync() {
	if h == nil {
		return
	}
	h.mu.Lock()
	h.all++
	for _, subs := range h.subs {
		for ch := range subs {
			signal(ch)
		}
	}
	h.mu.Unlock()
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default: // one signal pending is enough
	}
}

// generation is a number that changes whenever kind id is published (or
// on a resync).
func (h *Hub) generation(kind, id string) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gen[hubKey(kind, id)] + h.all<<40
}

// Subscribe returns a channel signalled after each commit of kind id,
// and the function that ends the subscription.
func (h *Hub) Subscribe(kind, id string) (<-chan struct{}, func()) {
	w := h.watch()
	w.set([]string{hubKey(kind, id)})
	return w.C, w.stop
}

// watcher is one live page's subscription to several keys (an incident,
// its thread and its runs) on one channel; its set of keys changes as the
// page's content does.
type watcher struct {
	h    *Hub
	C    chan struct{}
	keys []string
}

func (h *Hub) watch() *watcher { return &watcher{h: h, C: make(chan struct{}, 1)} }

// set replaces the keys watched (hubKey values); it reports whether a key
// was added.
func (w *watcher) set(keys []string) bool {
	h := w.h
	h.mu.Lock()
	defer h.mu.Unlock()
	added := false
	for _, k := range keys {
		if !slices.Contains(w.keys, k) {
			added = true
		}
	}
	for _, k := range w.keys {
		if !slices.Contains(keys, k) {
			h.unsubscribe(k, w.C)
		}
	}
	for _, k := range keys {
		if h.subs[k] == nil {
			h.subs[k] = map[chan struct{}]struct{}{}
		}
		h.subs[k][w.C] = struct{}{}
	}
	w.keys = slices.Clone(keys)
	return added
}

// stop ends the subscription.
func (w *watcher) stop() {
	w.h.mu.Lock()
	defer w.h.mu.Unlock()
	for _, k := range w.keys {
		w.h.unsubscribe(k, w.C)
	}
	w.keys = nil
}

func (h *Hub) unsubscribe(k string, ch chan struct{}) {
	delete(h.subs[k], ch)
	if len(h.subs[k]) == 0 {
		delete(h.subs, k)
	}
}

// Subscribers is how many live pages wait for changes (tests, metrics).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[chan struct{}]bool{}
	for _, s := range h.subs {
		for ch := range s {
			seen[ch] = true
		}
	}
	return len(seen)
}

// RunCommitted implements runmodel.Observer: the engine's commits of a
// run (the wiring may use a store wrapper instead; both only publish).
func (h *Hub) RunCommitted(r *runmodel.Run, _ *runmodel.Batch) { h.Publish("run", r.ID) }

// snapshots shares the reads of a run between the pages that show it: a
// run is read once per change (per Hub generation), however many people
// watch it, and readers that arrive during a read wait for it.
type snapshots struct {
	read func(ctx context.Context, id string) (*runSnapshot, error)
	hub  *Hub

	mu sync.Mutex
	m  map[string]*snapEntry
}

type snapEntry struct {
	done chan struct{}
	snap *runSnapshot
	err  error
	gen  uint64
	at   time.Time
}

// snapMaxAge bounds how long a snapshot is reused without a change
// signal (a commit the source of changes missed is seen by then).
const snapMaxAge = 2 * time.Second

func newSnapshots(read func(ctx context.Context, id string) (*runSnapshot, error)) *snapshots {
	return &snapshots{read: read, m: map[string]*snapEntry{}}
}

func (c *snapshots) get(ctx context.Context, id string) (*runSnapshot, error) {
	if c.hub == nil {
		return c.read(ctx, id)
	}
	gen := c.hub.generation("run", id)
	c.mu.Lock()
	e, ok := c.m[id]
	if ok && e.gen == gen && time.Since(e.at) < snapMaxAge {
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil {
			return e.snap, nil
		}
		return c.read(ctx, id) // a failed read is not shared with later readers
	}
	e = &snapEntry{done: make(chan struct{}), gen: gen, at: time.Now()}
	if len(c.m) > 1000 {
		clear(c.m)
	}
	c.m[id] = e
	c.mu.Unlock()
	e.snap, e.err = c.read(ctx, id)
	close(e.done)
	if e.err != nil {
		c.mu.Lock()
		if c.m[id] == e {
			delete(c.m, id)
		}
		c.mu.Unlock()
	}
	return e.snap, e.err
}

// liveDebounce is the least time between two updates sent to one page:
// a bulk call's progress lands every 2 s, votes come in bursts.
const liveDebounce = 300 * time.Millisecond

// liveState is one read of a live page: what it shows now and what to
// wait for before reading it again.
type liveState struct {
	// version changes whenever the page's body would (its Last-Event-ID).
	version string
	// body renders the page's live part (called only for a new version).
	body func() ([]byte, error)
	// keys are the changes (hubKey) after which the page is read again.
	keys []string
	// ended, when set, says why the page can no longer change (the end
	// event's words): the stream stops after sending the body.
	ended string
	// recheck, when set, is when to read again without a change (the end
	// of a resolved incident's reopen window).
	recheck time.Time
}

// runEvents serves /runs/<id>/events: the run's page body, sent at once
// and after each commit of the run, until the run ends.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(r.PathValue("id"))
	s.events(w, r, RunScope(id), "run", []string{hubKey("run", id)}, func(ctx context.Context, v viewer) (*liveState, error) {
		snap, err := s.cache.get(ctx, id)
		if err != nil {
			return nil, err
		}
		st := &liveState{version: fmt.Sprint(snap.Run.UpdatedAt.UnixNano()), keys: []string{hubKey("run", id)},
			body: func() ([]byte, error) { return s.runBody(snap, v) }}
		if snap.Run.State.Terminal() {
			st.ended = "the run has ended"
		}
		return st, nil
	})
}

// events serves the server-sent event stream of a live page of scope: its
// body (event name) at once and after each change of the keys its last
// read named, until it can no longer change (then an "end" event), the
// link expires or the client goes. It sets X-Accel-Buffering: no (nginx)
// and flushes every event; an idle stream gets a comment line every
// Heartbeat, so proxies keep it open. keys are watched before the first
// read (a change during it is not missed).
func (s *Server) events(w http.ResponseWriter, r *http.Request, scope, name string, keys []string, read func(ctx context.Context, v viewer) (*liveState, error)) {
	v, ref := s.authorize(r, scope)
	if ref != nil {
		http.Error(w, ref.Title, http.StatusForbidden)
		return
	}
	if s.o.Changes == nil {
		http.Error(w, "live updates are off", http.StatusNotFound)
		return
	}
	select {
	case s.streams <- struct{}{}:
		defer func() { <-s.streams }()
	default:
		w.Header().Set("Retry-After", "30")
		http.Error(w, "too many live pages open; reload in a minute", http.StatusServiceUnavailable)
		return
	}
	ctx := r.Context()
	watch := s.o.Changes.watch()
	defer watch.stop()
	watch.set(keys)
	st, err := read(ctx, v)
	if err != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.o.Heartbeat + 10*time.Second))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 3000\n\n")) {
		return
	}
	sent := r.Header.Get("Last-Event-ID")
	heartbeat := time.NewTicker(s.o.Heartbeat)
	defer heartbeat.Stop()
	var expire <-chan time.Time
	if !v.Exp.IsZero() {
		t := time.NewTimer(v.Exp.Sub(s.o.Now()) + time.Second) // on the pages' clock (Options.Now), as the token was checked
		defer t.Stop()
		expire = t.C
	}
	var recheckTimer *time.Timer
	defer func() {
		if recheckTimer != nil {
			recheckTimer.Stop()
		}
	}()
	for {
		if st.version != sent {
			body, err := st.body()
			if err != nil {
				s.o.Logger.Error("web: rendering a live update", "page", scope, "err", err)
				return
			}
			if !write(sseEvent(name, st.version, body)) {
				return
			}
			sent = st.version
		}
		if st.ended != "" {
			write([]byte("event: end\ndata: " + st.ended + "\n\n"))
			return
		}
		again := watch.set(st.keys) // a key added: read once more, its change may have come before
		if recheckTimer != nil {
			recheckTimer.Stop()
		}
		var recheck <-chan time.Time
		if !st.recheck.IsZero() {
			recheckTimer = time.NewTimer(max(st.recheck.Sub(s.o.Now()), 0))
			recheck = recheckTimer.C
		}
		last := time.Now()
	wait:
		for !again {
			select {
			case <-ctx.Done():
				return
			case <-s.done:
				return
			case <-expire:
				write([]byte("event: expired\ndata: the link has expired\n\n"))
				return
			case <-heartbeat.C:
				if !write([]byte(": ping\n\n")) {
					return
				}
			case <-recheck:
				break wait
			case <-watch.C:
				if d := liveDebounce - time.Since(last); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return
					}
				}
				break wait
			}
		}
		if !v.Exp.IsZero() && !s.o.Now().Before(v.Exp) {
			write([]byte("event: expired\ndata: the link has expired\n\n"))
			return
		}
		next, err := read(ctx, v)
		if err != nil {
			if ctx.Err() == nil {
				s.o.Logger.Warn("web: reading a live page", "page", scope, "err", err)
				write([]byte("event: problem\ndata: could not read the page; retrying\n\n"))
			}
			return // the client reconnects (retry: 3 s) and reads again
		}
		st = next
	}
}

// runBody renders the live part of a run's page.
func (s *Server) runBody(snap *runSnapshot, v viewer) ([]byte, error) {
	rv := s.buildRun(snap, v)
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, "run-body", rv); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// sseEvent formats one event: each line of data its own data: line.
func sseEvent(name, id string, data []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "id: %s\nevent: %s\n", id, name)
	for _, l := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimRight(l, "\r"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// Close ends the live streams (call it when the HTTP server shuts down:
// Shutdown waits for handlers, and a stream would hold it).
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.done) })
}
