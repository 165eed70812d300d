package bot

import (
	"log/slog"
	"sync"
	"time"
)

// failing logs a failure that repeats every tick (the store down for a
// while) when it starts, every failingRemind while it lasts and once when
// it ends — not once a second.
type failing struct {
	what string

	mu     sync.Mutex
	n      int
	since  time.Time
	remind time.Time
}

// failingRemind is how often a failure that lasts is logged again.
const failingRemind = 10 * time.Minute

func (f *failing) fail(log *slog.Logger, now time.Time, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	switch {
	case f.n == 1:
		f.since, f.remind = now, now.Add(failingRemind)
		log.Error(f.what, "err", err, "repeats", "logged again when it works, or in "+failingRemind.String())
	case !now.Before(f.remind):
		f.remind = now.Add(failingRemind)
		log.Error(f.what+": still failing", "err", err, "failures", f.n, "for", now.Sub(f.since).Round(time.Second).String())
	}
}

func (f *failing) ok(log *slog.Logger, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 {
		log.Info(f.what+": works again", "failures", f.n, "for", now.Sub(f.since).Round(time.Second).String())
		f.n = 0
	}
}
