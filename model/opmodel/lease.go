package opmodel

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Lease is this process's hold on the right to change the outside world:
// the leader lease of a replica sharing a PostgreSQL store (package
// leader). The store's fence stops a deposed leader from journaling; the
// lease in a call's context stops it from making the call itself — a
// leader paused between the intent and the call (GC pause, SIGSTOP, a VM
// frozen) wakes with its lease lapsed and sends nothing. A process alone
// on its store has no Lease: its calls are not fenced.
type Lease interface {
	// HeldUntil is the instant until which this process surely holds the
	// lease, on the monotonic clock: the start of its last successful
	// renewal (or acquisition) + the lease's TTL − a safety margin. The
	// zero time when it does not lead.
	HeldUntil() time.Time
	// CallTimeout is the longest an outside call may take under the
	// lease: what is left of it at the least between two renewals.
	CallTimeout() time.Duration
}

type leaseKey struct{}

// WithLease returns ctx carrying the lease that fences the outside calls
// made under it (Hold, Guard).
func WithLease(ctx context.Context, l Lease) context.Context {
	if l == nil {
		return ctx
	}
	return context.WithValue(ctx, leaseKey{}, l)
}

// LeaseOf is the lease ctx carries, or nil.
func LeaseOf(ctx context.Context) Lease {
	l, _ := ctx.Value(leaseKey{}).(Lease)
	return l
}

// ErrLeaseLapsed is what a fenced call returns when this process does not
// surely hold the leader lease for as long as the call may take: the call
// was not made. errors.Is matches every *LapsedError.
var ErrLeaseLapsed = errors.New("this process does not surely hold the leader lease")

// LapsedError says why a fenced call was not made (or was cut off).
type LapsedError struct {
	// Left is how long the lease is surely held for still; zero or
	// negative: it lapsed that long ago.
	Left time.Duration
	// Need is how long the call may take.
	Need time.Duration
	// NotLeading: this process does not lead (it stepped down).
	NotLeading bool
}

func (e *LapsedError) Error() string {
	switch {
	case e.NotLeading:
		return "this process does not lead any more (it stepped down); the leader reconciles the step"
	case e.Left <= 0:
		return fmt.Sprintf("the leader lease lapsed %s ago (this process was paused or cut off from the store); the leader reconciles the step",
			(-e.Left).Round(time.Millisecond))
	}
	return fmt.Sprintf("the leader lease is surely held for %s more, less than the call may take (%s): its renewal is late",
		e.Left.Round(time.Millisecond), e.Need.Round(time.Millisecond))
}

// Is makes errors.Is(err, ErrLeaseLapsed) true.
func (e *LapsedError) Is(target error) bool { return target == ErrLeaseLapsed }

// check refuses when l is not surely held for longer than need.
func check(l Lease, need time.Duration) error {
	until := l.HeldUntil()
	if until.IsZero() {
		return &LapsedError{NotLeading: true}
	}
	if left := time.Until(until); left <= need {
		return &LapsedError{Left: left, Need: need}
	}
	return nil
}

// Hold is called right before a call that changes the outside world (a
// write or destructive operation), on the monotonic clock: it refuses
// when the lease ctx carries is not surely held for longer than a call
// may take (Lease.CallTimeout), and otherwise returns a context for the
// call that ends the moment the lease would lapse — that moment moves
// on with every renewal, so a long call (thousands of aborts) goes on
// while the lease is renewed and stops when it is not. Without a lease
// in ctx, Hold returns ctx as is.
func Hold(ctx context.Context) (context.Context, context.CancelFunc, error) {
	l := LeaseOf(ctx)
	if l == nil {
		return ctx, func() {}, nil
	}
	if err := check(l, l.CallTimeout()); err != nil {
		return nil, nil, err
	}
	cctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		for {
			until := l.HeldUntil()
			left := time.Until(until)
			if until.IsZero() || left <= 0 {
				cancel(&LapsedError{Left: left, NotLeading: until.IsZero()})
				return
			}
			t.Reset(left)
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return cctx, func() { cancel(context.Canceled) }, nil
}

// Guard is called by an operation's client right before each request that
// changes the outside world, with the request's timeout: it refuses when
// the lease ctx carries is not surely held for longer than the request
// may take (the shorter of timeout and Lease.CallTimeout), and otherwise
// returns a context for the request that ends when the lease would
// lapse. It checks the clock itself rather than trusting ctx alone: a
// process that wakes from a pause sends nothing before its timers fire.
// Without a lease in ctx, Guard returns ctx as is.
func Guard(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, error) {
	l := LeaseOf(ctx)
	if l == nil {
		return ctx, func() {}, nil
	}
	need := l.CallTimeout()
	if timeout > 0 && timeout < need {
		need = timeout
	}
	if err := check(l, need); err != nil {
		return nil, nil, err
	}
	until := l.HeldUntil()
	cctx, cancel := context.WithDeadlineCause(ctx, until, &LapsedError{Left: 0, Need: need})
	return cctx, cancel, nil
}
