package web

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
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
	k := hubKey(kind, id)
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[k] == nil {
		h.subs[k] = map[chan struct{}]struct{}{}
	}
	h.subs[k][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[k], ch)
		if len(h.subs[k]) == 0 {
			delete(h.subs, k)
		}
		h.mu.Unlock()
	}
}

// Subscribers is how many live pages wait for changes (tests, metrics).
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.subs {
		n += len(s)
	}
	return n
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

// runEvents serves /runs/<id>/events: a server-sent event stream of the
// run's page body, sent at once and after each commit of the run, until
// the run ends (then an "end" event), the link expires or the client goes.
// It sets X-Accel-Buffering: no (nginx) and flushes every event; an idle
// stream gets a comment line every Heartbeat, so proxies keep it open.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(r.PathValue("id"))
	v, ref := s.authorize(r, RunScope(id))
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
	changes, unsubscribe := s.o.Changes.Subscribe("run", id)
	defer unsubscribe()
	snap, err := s.cache.get(ctx, id)
	if err != nil {
		http.Error(w, "no such run", http.StatusNotFound)
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
		t := time.NewTimer(time.Until(v.Exp) + time.Second) // the link's own clock may differ: checked below too
		defer t.Stop()
		expire = t.C
	}
	for {
		version := fmt.Sprint(snap.Run.UpdatedAt.UnixNano())
		if version != sent {
			body, err := s.runBody(snap, v)
			if err != nil {
				s.o.Logger.Error("web: rendering a live update", "run", id, "err", err)
				return
			}
			if !write(sseEvent("run", version, body)) {
				return
			}
			sent = version
		}
		if snap.Run.State.Terminal() {
			write([]byte("event: end\ndata: finished\n\n"))
			return
		}
		last := time.Now()
	wait:
		for {
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
			case <-changes:
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
		next, err := s.cache.get(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				s.o.Logger.Warn("web: reading a run for its live page", "run", id, "err", err)
				write([]byte("event: problem\ndata: could not read the run; retrying\n\n"))
			}
			return // the client reconnects (retry: 3 s) and reads again
		}
		snap = next
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
