package concourse

import (
	"context"
	"math"
	"sync"
	"time"
)

// Adaptive concurrency for bulk calls (aborts, verifications, scans).
//
// The limit is AIMD on latency and errors, after Netflix's
// concurrency-limits (AIMDLimit, with the latency floor of its gradient
// limiters) and Envoy's adaptive concurrency filter (a minimum RTT as the
// reference): every answer is a sample; while the limit is used and answers
// come back near the lowest latency seen, it grows by one per round trip
// (+1/limit per answer); an answer slower than twice the floor shrinks it
// by a tenth, a 5xx, a 429 or a transport error by half — at most once per
// round trip (only answers to requests sent after the last decrease count),
// so one slow burst is one step down. The limit stays within [1, max].

const (
	// DefaultMaxInFlight is the default cap of the adaptive limit
	// (targets.<name>.max_in_flight).
	DefaultMaxInFlight = 32
	// MaxMaxInFlight bounds targets.<name>.max_in_flight.
	MaxMaxInFlight = 256
	// initialInFlight is where the adaptive limit starts: what 8.2.5 took
	// without errors on loopback.
	initialInFlight = 8
	// latencyTolerance: an answer slower than this × the floor is a sign
	// the web node queues.
	latencyTolerance = 2.0
	// latencySlack is added to the threshold so that sub-millisecond
	// jitter on a fast link is not mistaken for queueing.
	latencySlack = 2 * time.Millisecond
)

type limiter struct {
	mu       sync.Mutex
	limit    float64
	max      int
	fixed    bool
	inflight int
	freed    chan struct{} // closed when a slot frees or the limit grows
	floor    time.Duration // lowest latency seen (0: none yet)
	lastDrop time.Time     // requests sent before it do not shrink the limit again
	drops    int
	peak     float64
}

// newFixedLimiter never adapts (WithConcurrency).
func newFixedLimiter(n int) *limiter {
	return &limiter{limit: float64(n), max: n, fixed: true, freed: make(chan struct{}), peak: float64(n)}
}

// newAdaptiveLimiter starts at min(8, max) and adapts within [1, max].
func newAdaptiveLimiter(max int) *limiter {
	if max <= 0 {
		max = DefaultMaxInFlight
	}
	start := float64(min(initialInFlight, max))
	return &limiter{limit: start, max: max, freed: make(chan struct{}), peak: start}
}

func (l *limiter) allowed() int { return max(1, int(l.limit)) }

// acquire waits for a slot.
func (l *limiter) acquire(ctx context.Context) error {
	for {
		l.mu.Lock()
		if l.inflight < l.allowed() {
			l.inflight++
			l.mu.Unlock()
			return nil
		}
		ch := l.freed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *limiter) release() {
	l.mu.Lock()
	l.inflight--
	l.wakeLocked()
	l.mu.Unlock()
}

func (l *limiter) wakeLocked() {
	close(l.freed)
	l.freed = make(chan struct{})
}

// observe takes one answer: sent is when the request left, rtt how long
// the answer took, overload whether it was a 5xx, a 429 or a transport
// error.
func (l *limiter) observe(sent time.Time, rtt time.Duration, overload bool) {
	if l == nil || l.fixed {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !overload && (l.floor == 0 || rtt < l.floor) {
		l.floor = rtt
	}
	slow := !overload && float64(rtt) > float64(l.floor)*latencyTolerance+float64(latencySlack)
	switch {
	case overload || slow:
		if sent.Before(l.lastDrop) {
			return // sent under the old limit: already accounted for
		}
		f := 0.9
		if overload {
			f = 0.5
		}
		l.limit = math.Max(1, l.limit*f)
		l.lastDrop = time.Now()
		l.drops++
	case l.inflight >= l.allowed()-1 && l.limit < float64(l.max):
		// the limit is in use and answers are fast: one more per round trip
		before := l.allowed()
		l.limit = math.Min(float64(l.max), l.limit+1/l.limit)
		l.peak = math.Max(l.peak, l.limit)
		if l.allowed() > before {
			l.wakeLocked()
		}
	}
}

// LimitStats is a snapshot of a client's bulk concurrency limit.
type LimitStats struct {
	// Limit is the current number of requests allowed in flight.
	Limit int
	// Max is the cap (max_in_flight, or the fixed WithConcurrency value).
	Max int
	// Peak is the highest limit reached; Decreases counts the steps down.
	Peak      int
	Decreases int
	// Floor is the lowest latency seen.
	Floor    time.Duration
	Adaptive bool
}

// LimitStats reports the bulk concurrency limit (for benchmarks and
// diagnostics).
func (c *Client) LimitStats() LimitStats {
	l := c.lim
	l.mu.Lock()
	defer l.mu.Unlock()
	return LimitStats{Limit: l.allowed(), Max: l.max, Peak: int(l.peak), Decreases: l.drops, Floor: l.floor, Adaptive: !l.fixed}
}
