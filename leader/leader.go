// Package leader elects one leader among the replicas sharing a store.
//
// Leadership is a lease in the store with an epoch (a fencing token): the
// leader renews the lease every Renew (2 s) for TTL (10 s); a standby
// takes the lease when it expired or was released, which increments the
// epoch. The store refuses every write whose transaction does not see
// the epoch this process holds (pgstore.Options.Fenced), so a leader that
// was paused or cut off and lost the lease cannot write — in particular
// it cannot journal the intent of a destructive call, so it cannot make
// one.
//
// On losing the lease the elector drops its epoch at once (OnEpoch(0):
// writes are refused from that instant) and cancels the leader's work; on
// shutdown it waits for the work to stop, then releases the lease so a
// standby leads within its Retry interval.
package leader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Lease is the lease in the store. Times are the store's clock, so the
// replicas' clocks need not agree.
type Lease interface {
	// Acquire takes the lease for holder when it is free (expired or
	// released) and returns the new epoch; ok is false when another holder
	// has it (then holder is who).
	Acquire(ctx context.Context, holder string, ttl time.Duration) (epoch int64, ok bool, current string, err error)
	// Renew extends the lease of holder at epoch; false when it is no
	// longer theirs (expired or taken over).
	Renew(ctx context.Context, holder string, epoch int64, ttl time.Duration) (bool, error)
	// Release gives the lease up (hand over): a standby may take it at once.
	Release(ctx context.Context, holder string, epoch int64) error
}

// Options configure an Elector.
type Options struct {
	Lease Lease
	// Holder names this process in the lease and the logs (host/pid).
	Holder string
	// TTL is how long a lease lasts without renewal (default 10 s).
	TTL time.Duration
	// Renew is how often the leader renews (default 2 s).
	Renew time.Duration
	// Retry is how often a standby tries to take the lease (default 500 ms).
	Retry time.Duration
	// Margin is taken off the lease for the calls it fences (default
	// TTL/5): HeldUntil is the start of the last successful renewal + TTL
	// − Margin. It covers what the store's clock and this one may drift
	// apart and a request's way to the server.
	Margin time.Duration
	// OnEpoch is called with the epoch when this process starts leading and
	// with 0 the instant it stops (before the work is told to stop).
	OnEpoch func(epoch int64)
	Logger  *slog.Logger
	// Registerer gets groundcrew_leader and groundcrew_leader_changes_total.
	Registerer prometheus.Registerer
}

// Elector runs the work of the leader while this process holds the lease.
type Elector struct {
	o       Options
	leading atomic.Bool
	epoch   atomic.Int64
	// heldFrom is when the last successful acquisition or renewal of the
	// lease started (with its monotonic reading); nil while not leading.
	heldFrom atomic.Pointer[time.Time]
	gauge    prometheus.Gauge
	changes  prometheus.Counter

	mu      sync.Mutex
	current string // the holder last seen (standby)
	stepped string // this holder, after it stepped down and before it saw another
}

// New returns an elector.
func New(o Options) *Elector {
	if o.TTL <= 0 {
		o.TTL = 10 * time.Second
	}
	if o.Renew <= 0 {
		o.Renew = 2 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = 500 * time.Millisecond
	}
	if o.Margin <= 0 {
		o.Margin = o.TTL / 5
	}
	if o.OnEpoch == nil {
		o.OnEpoch = func(int64) {}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	e := &Elector{o: o,
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "groundcrew_leader",
			Help: "1 while this process is the leader (runs, gates, chat), 0 on a standby."}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{Name: "groundcrew_leader_changes_total",
			Help: "Times this process started or stopped leading."}),
	}
	if o.Registerer != nil {
		o.Registerer.MustRegister(e.gauge, e.changes)
	}
	return e
}

// Leading reports whether this process leads now.
func (e *Elector) Leading() bool { return e.leading.Load() }

// Epoch is the epoch held (0 on a standby).
func (e *Elector) Epoch() int64 { return e.epoch.Load() }

// HeldUntil implements opmodel.Lease: the instant until which this
// process surely holds the lease, on the monotonic clock — the start of
// its last successful renewal (or acquisition) + TTL − Margin. The store
// counts the lease from when the renewal reached it, which is later, so a
// standby cannot take it before. Zero while this process does not lead.
func (e *Elector) HeldUntil() time.Time {
	from := e.heldFrom.Load()
	if from == nil {
		return time.Time{}
	}
	return from.Add(e.o.TTL - e.o.Margin)
}

// CallTimeout implements opmodel.Lease: the least HeldUntil leaves ahead
// between two renewals, with one renewal late: TTL − Margin − 2 × Renew
// (4 s with the defaults), and at least Renew.
func (e *Elector) CallTimeout() time.Duration {
	return max(e.o.TTL-e.o.Margin-2*e.o.Renew, e.o.Renew)
}

// Holder is this process's name in the lease.
func (e *Elector) Holder() string { return e.o.Holder }

// Current is who led when this standby last looked ("" if nobody).
func (e *Elector) Current() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current
}

// Run waits for the lease and runs lead while it holds it, until ctx ends.
// lead's context is cancelled when the lease is lost or ctx ends; when
// lead returns after a loss, Run goes back to waiting. An error of lead
// (other than after a loss) releases the lease and ends Run with it.
func (e *Elector) Run(ctx context.Context, lead func(ctx context.Context) error) error {
	log := e.o.Logger
	log.Info("standby: waiting for the leader lease", "holder", e.o.Holder)
	var lastErr string
	for {
		if ctx.Err() != nil {
			return nil
		}
		asked := time.Now() // the lease counts from a moment after this
		epoch, ok, cur, err := e.o.Lease.Acquire(ctx, e.o.Holder, e.o.TTL)
		switch {
		case err != nil && ctx.Err() == nil:
			if err.Error() != lastErr {
				log.Warn("standby: cannot read the leader lease; retrying", "err", err)
				lastErr = err.Error()
			}
		case err == nil && !ok:
			e.mu.Lock()
			if cur != e.current {
				log.Info("standby", "leader", cur)
			}
			e.current = cur
			e.mu.Unlock()
			lastErr = ""
		case err == nil && ok:
			lastErr = ""
			if err := e.term(ctx, epoch, asked, lead); err != nil {
				return err
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(e.o.Retry):
		}
	}
}

// errLost says why the lease was lost.
type errLost struct{ why string }

func (e errLost) Error() string { return e.why }

// term is one term as leader.
func (e *Elector) term(ctx context.Context, epoch int64, asked time.Time, lead func(ctx context.Context) error) error {
	log := e.o.Logger.With("holder", e.o.Holder, "epoch", epoch)
	e.heldFrom.Store(&asked)
	e.epoch.Store(epoch)
	e.o.OnEpoch(epoch)
	e.leading.Store(true)
	e.gauge.Set(1)
	e.changes.Inc()
	e.mu.Lock()
	prev := nonEmpty(e.current, e.stepped) // who led last, as far as this process knows
	e.current, e.stepped = e.o.Holder, ""
	e.mu.Unlock()
	log.Info("leading: took the leader lease", "previous", nonEmpty(prev, "none"))

	leadCtx, cancelLead := context.WithCancelCause(ctx)
	var lost atomic.Pointer[errLost]
	stepDown := func(why string) {
		if lost.CompareAndSwap(nil, &errLost{why}) {
			e.heldFrom.Store(nil) // outside calls are refused from here on
			e.epoch.Store(0)
			e.o.OnEpoch(0) // writes are refused from here on
			e.leading.Store(false)
			e.gauge.Set(0)
			e.mu.Lock()
			e.current, e.stepped = "", e.o.Holder // not this process; who leads is read again
			e.mu.Unlock()
			log.Warn("stepping down: lost the leader lease", "why", why)
			cancelLead(errLost{why})
		}
	}
	// The renewal runs until the work has stopped, also while it shuts
	// down after ctx ended: the lease is held until it is released.
	renewCtx, stopRenew := context.WithCancel(context.WithoutCancel(ctx))
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		e.renew(renewCtx, epoch, asked, stepDown)
	}()
	err := lead(leadCtx)
	stopRenew()
	<-renewed
	cancelLead(nil)
	if l := lost.Load(); l != nil {
		e.changes.Inc()
		log.Info("standby: the work of the leader stopped", "why", l.why)
		return nil
	}
	e.heldFrom.Store(nil)
	e.epoch.Store(0)
	e.o.OnEpoch(0)
	e.leading.Store(false)
	e.gauge.Set(0)
	e.changes.Inc()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if rerr := e.o.Lease.Release(rctx, e.o.Holder, epoch); rerr != nil {
		log.Warn("could not release the leader lease; a standby takes over when it expires", "err", rerr, "ttl", e.o.TTL)
	} else {
		log.Info("released the leader lease (hand over)")
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("leader: %w", err)
	}
	if ctx.Err() == nil {
		return errors.New("leader: the work ended by itself")
	}
	return nil
}

// renew renews the lease every Renew until ctx ends, and steps down when
// the lease is taken over or could not be renewed before it expired.
func (e *Elector) renew(ctx context.Context, epoch int64, held time.Time, stepDown func(string)) {
	t := time.NewTicker(e.o.Renew)
	defer t.Stop()
	// held: the lease is valid until held + TTL at the least (the store
	// counts from when the acquisition or renewal reached it).
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(held) >= e.o.TTL {
			stepDown(fmt.Sprintf("the lease was not renewed for %s (paused or cut off from the store)", time.Since(held).Round(time.Millisecond)))
			return
		}
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, e.o.Renew)
		ok, err := e.o.Lease.Renew(rctx, e.o.Holder, epoch, e.o.TTL)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			e.o.Logger.Warn("leader lease not renewed; retrying", "err", err, "expires_in", (e.o.TTL - time.Since(held)).Round(time.Millisecond))
		case !ok:
			stepDown("another process holds the lease now (it expired: this process was paused or cut off)")
			return
		default:
			held = start
			e.heldFrom.Store(&start)
		}
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
