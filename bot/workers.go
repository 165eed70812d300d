package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// workers has one concern: the goroutines that advance runs. A run is
// advanced by one goroutine at a time — concurrent kicks of the same run
// coalesce into one more pass —, background work is counted so that
// WaitIdle can wait for all of it, and the operation call in flight of a
// run can be cancelled.
type workers struct {
	log       *slog.Logger
	advance   func(ctx context.Context, runID string)
	opTimeout time.Duration

	mu      sync.Mutex
	ctx     context.Context               // the context runs are advanced in (Run's)
	active  map[string]bool               // runs being advanced
	again   map[string]bool               // runs to advance once more
	cancels map[string]context.CancelFunc // in-flight calls per run
	idle    *sync.Cond
	busy    int
}

func newWorkers(log *slog.Logger, opTimeout time.Duration, advance func(ctx context.Context, runID string)) *workers {
	w := &workers{log: log, advance: advance, opTimeout: opTimeout, ctx: context.Background(),
		active: map[string]bool{}, again: map[string]bool{}, cancels: map[string]context.CancelFunc{}}
	w.idle = sync.NewCond(&w.mu)
	return w
}

// setContext sets the context later kicks advance runs in.
func (w *workers) setContext(ctx context.Context) {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
}

// wait blocks until no run is being advanced and no background work runs.
func (w *workers) wait() {
	w.mu.Lock()
	for w.busy > 0 {
		w.idle.Wait()
	}
	w.mu.Unlock()
}

// kick advances a run in the background; concurrent kicks of the same run
// coalesce into one more pass.
func (w *workers) kick(id string) {
	w.mu.Lock()
	if w.active[id] {
		w.again[id] = true
		w.mu.Unlock()
		return
	}
	w.active[id] = true
	w.busy++
	ctx := w.ctx
	w.mu.Unlock()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				w.log.Error("panic while advancing run", "run", id, "panic", p)
			}
			w.mu.Lock()
			delete(w.active, id)
			w.busy--
			w.idle.Broadcast()
			w.mu.Unlock()
		}()
		for {
			w.advance(ctx, id)
			w.mu.Lock()
			if !w.again[id] || ctx.Err() != nil {
				w.mu.Unlock()
				return
			}
			w.again[id] = false
			w.mu.Unlock()
		}
	}()
}

// background runs fn in a goroutine that wait waits for.
func (w *workers) background(fn func()) {
	w.mu.Lock()
	w.busy++
	w.mu.Unlock()
	go func() {
		defer func() {
			if p := recover(); p != nil {
				w.log.Error("panic in background work", "panic", p)
			}
			w.mu.Lock()
			w.busy--
			w.idle.Broadcast()
			w.mu.Unlock()
		}()
		fn()
	}()
}

// callCtx bounds one operation call and, when cancellable, registers it so
// that cancel interrupts it.
func (w *workers) callCtx(ctx context.Context, runID string, cancellable bool) (context.Context, func()) {
	cctx, cancel := context.WithTimeout(ctx, w.opTimeout)
	if cancellable {
		w.mu.Lock()
		w.cancels[runID] = cancel
		w.mu.Unlock()
	}
	return cctx, func() {
		cancel()
		if cancellable {
			w.mu.Lock()
			delete(w.cancels, runID)
			w.mu.Unlock()
		}
	}
}

// cancel interrupts the run's cancellable call in flight, if any.
func (w *workers) cancel(runID string) {
	w.mu.Lock()
	if c := w.cancels[runID]; c != nil {
		c()
	}
	w.mu.Unlock()
}
