package concourse

import (
	"fmt"
	"sync"
	"time"
)

// What the ATC does to workers by itself (API.md §4.3, measured on
// Concourse's newest source): the worker collector, every --gc-interval
// (30 s by default), deletes an ephemeral worker whose heartbeat expired
// (it is never listed stalled), and — when the web node runs with
// --stalled-worker-timeout D (Concourse 8.3; 0s, never, by default) — a
// worker stalled longer than D. GET /api/v1/workers does not say since
// when a worker is stalled (stalled_since is a database column), so the
// client remembers when it first listed each worker stalled: the time the
// ATC removes it is then known at the latest (first seen + D + one GC pass).

// GCInterval is the worker collector's default pass interval
// (--gc-interval): the ATC removes a worker at the first pass after it is
// due.
const GCInterval = 30 * time.Second

// EphemeralGrace is about how long after its last heartbeat the ATC
// deletes an ephemeral worker: the 60 s heartbeat TTL and a GC pass.
const EphemeralGrace = 90 * time.Second

// WorkerMemory remembers, per worker name, what the lists of workers
// showed over time: since when it is listed stalled, and whether it was
// ephemeral (a worker gone from the list is remembered for a day). Share
// one between the clients of a target (operations, digests, watch rules),
// so each says the same time. It is safe for concurrent use.
type WorkerMemory struct {
	mu   sync.Mutex
	seen map[string]*workerSeen
}

type workerSeen struct {
	stalledSince time.Time // zero: not listed stalled
	ephemeral    bool
	last         time.Time // last listed
}

// NewWorkerMemory returns an empty memory.
func NewWorkerMemory() *WorkerMemory { return &WorkerMemory{seen: map[string]*workerSeen{}} }

// WithWorkerMemory makes the client record what it lists in m (shared by
// the clients of one target); by default each client has its own.
func WithWorkerMemory(m *WorkerMemory) Option {
	return func(c *Client) {
		if m != nil {
			c.memory = m
		}
	}
}

// observe records a full list of workers listed at now.
func (m *WorkerMemory) observe(ws []Worker, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range ws {
		s := m.seen[w.Name]
		if s == nil {
			s = &workerSeen{}
			m.seen[w.Name] = s
		}
		s.ephemeral, s.last = w.Ephemeral, now
		switch {
		case w.State != WorkerStalled:
			s.stalledSince = time.Time{}
		case s.stalledSince.IsZero():
			s.stalledSince = now
		}
	}
	for name, s := range m.seen {
		if now.Sub(s.last) > 24*time.Hour {
			delete(m.seen, name)
		}
	}
}

// get returns what m remembers of a worker.
func (m *WorkerMemory) get(name string) (workerSeen, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.seen[name]
	if !ok {
		return workerSeen{}, false
	}
	return *s, true
}

// AutoRemoval is what the ATC will do by itself to one worker.
type AutoRemoval struct {
	// Before is when the ATC will have removed the worker at the latest,
	// unless it heartbeats again; zero when it will not by itself (or the
	// time is not known: an ephemeral worker still listed running).
	Before time.Time
	// Text says it for people: "Concourse removes worker-1 by itself
	// before 14:32 UTC unless it heartbeats again"; "" when nothing.
	Text string
	// Overdue: Before has passed and the worker is still listed — the
	// configured timeout may not be the web node's.
	Overdue bool
}

// AutoRemoval says what the ATC will do by itself to w, listed at now:
// remove it once stalled longer than the target's stalled_worker_timeout,
// or, when it is ephemeral, soon after its heartbeat stops.
func (c *Client) AutoRemoval(w Worker, now time.Time) AutoRemoval {
	seen, _ := c.memory.get(w.Name)
	switch {
	case w.Ephemeral:
		if w.State == WorkerStalled && !seen.stalledSince.IsZero() {
			at := seen.stalledSince.Add(EphemeralGrace)
			return c.removal(w.Name, at, now, "it is ephemeral")
		}
		return AutoRemoval{Text: fmt.Sprintf("%s is ephemeral: Concourse removes it by itself about a minute after it stops heartbeating", w.Name)}
	case w.State != WorkerStalled || c.cfg.StalledWorkerTimeout <= 0 || seen.stalledSince.IsZero():
		return AutoRemoval{}
	}
	at := seen.stalledSince.Add(c.cfg.StalledWorkerTimeout + GCInterval)
	return c.removal(w.Name, at, now, "stalled-worker-timeout "+shortDuration(c.cfg.StalledWorkerTimeout))
}

func (c *Client) removal(name string, at, now time.Time, why string) AutoRemoval {
	if now.After(at) {
		return AutoRemoval{Before: at, Overdue: true, Text: fmt.Sprintf(
			"Concourse should have removed %s by itself by %s (%s on %s) and has not: check that targets.%s.stalled_worker_timeout is the web node's --stalled-worker-timeout",
			name, clockUTC(at), why, c.cfg.Name, c.cfg.Name)}
	}
	return AutoRemoval{Before: at, Text: fmt.Sprintf("Concourse removes %s by itself before %s unless it heartbeats again", name, clockUTC(at))}
}

// workerGone says that a worker of an approved plan is no longer
// registered when the plan is checked again before executing: someone or
// something removed it while the approval was asked — Concourse itself
// when it is ephemeral or when the web node runs with
// --stalled-worker-timeout (8.3), or a person.
func (c *Client) workerGone(name string) string {
	seen, ok := c.memory.get(name)
	switch {
	case ok && seen.ephemeral:
		return name + " is no longer registered: it was removed while the approval was asked (it is ephemeral: Concourse removes those about a minute after they stop heartbeating; or someone else)"
	case c.cfg.StalledWorkerTimeout > 0:
		return fmt.Sprintf("%s is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout of %s on %s, or someone else)",
			name, shortDuration(c.cfg.StalledWorkerTimeout), c.cfg.Name)
	}
	return name + " is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout or someone else)"
}

// clockUTC is a bound as people read it in a message that stays true:
// "14:32 UTC", rounded up to the minute (before 14:31:30 is said "before
// 14:32").
func clockUTC(t time.Time) string {
	if r := t.Truncate(time.Minute); !r.Equal(t) {
		t = r.Add(time.Minute)
	}
	return t.UTC().Format("15:04 UTC")
}

// shortDuration is a duration as configured: "5m", "1h30m", "2h".
func shortDuration(d time.Duration) string {
	s := d.Round(time.Second).String()
	for _, z := range []string{"m0s", "h0m"} {
		if len(s) > len(z) && s[len(s)-len(z):] == z {
			s = s[:len(s)-len(z)+1]
		}
	}
	return s
}
