package slack

import (
	"context"
	"sync"
	"time"
)

// lanes serialises writes per channel: one FIFO lane per channel, writes
// spaced at least interval apart, 429s waited out inside the lane so later
// writes to the channel queue behind them. Nothing is ever dropped: a caller
// waits for its turn until its ctx ends.
type lanes struct {
	interval time.Duration
	retry    *retrier

	mu sync.Mutex
	m  map[string]*lane
}

func newLanes(interval time.Duration, retry *retrier) *lanes {
	return &lanes{interval: interval, retry: retry, m: map[string]*lane{}}
}

// lane is a FIFO mutex with the time of its last write.
type lane struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan struct{}
	last    time.Time // guarded by holding the lane
}

// laneSession is the right to write to one channel, held for a sequence of
// writes (a message and its detail replies stay together).
type laneSession struct {
	l  *lanes
	ln *lane
}

// with runs fn holding channel's lane.
func (l *lanes) with(ctx context.Context, channel string, fn func(s *laneSession) error) error {
	l.mu.Lock()
	ln, ok := l.m[channel]
	if !ok {
		ln = &lane{}
		l.m[channel] = ln
	}
	l.mu.Unlock()
	if err := ln.acquire(ctx); err != nil {
		return err
	}
	defer ln.release()
	return fn(&laneSession{l: l, ln: ln})
}

// call makes one write, waiting for the lane's spacing before each attempt.
func (s *laneSession) call(ctx context.Context, method string, p retryPolicy, fn func(context.Context) error) error {
	return s.l.retry.do(ctx, method, p, func(ctx context.Context) error {
		if wait := time.Until(s.ln.last.Add(s.l.interval)); wait > 0 {
			if err := sleepCtx(ctx, wait); err != nil {
				return err
			}
		}
		defer func() { s.ln.last = time.Now() }()
		return fn(ctx)
	})
}

func (ln *lane) acquire(ctx context.Context) error {
	ln.mu.Lock()
	if !ln.busy {
		ln.busy = true
		ln.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	ln.waiters = append(ln.waiters, ch)
	ln.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		ln.mu.Lock()
		for i, w := range ln.waiters {
			if w == ch {
				ln.waiters = append(ln.waiters[:i], ln.waiters[i+1:]...)
				ln.mu.Unlock()
				return ctx.Err()
			}
		}
		ln.mu.Unlock()
		// The lane was handed to us as ctx ended: pass it on.
		ln.release()
		return ctx.Err()
	}
}

func (ln *lane) release() {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if len(ln.waiters) > 0 {
		ch := ln.waiters[0]
		ln.waiters = ln.waiters[1:]
		close(ch)
		return
	}
	ln.busy = false
}
