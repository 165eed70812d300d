// Package retry retries what must eventually succeed for the process to go
// on — the reads a leader makes as it starts (the active runs, the open
// incidents) — across a store that is briefly away (PostgreSQL restarting,
// a failover), instead of ending the process on the first error.
package retry

import (
	"context"
	"log/slog"
	"time"
)

// Pauses between attempts: doubling from First up to Max.
const (
	First = 100 * time.Millisecond
	Max   = 5 * time.Second
)

// Until calls f until it returns nil or ctx ends, pausing First, 2×First, …
// up to Max between attempts. Each failure is logged at warning level
// (what, the attempt, the error); the first success after a failure is
// logged too. It returns nil once f succeeded, or ctx's error.
func Until(ctx context.Context, log *slog.Logger, what string, f func(context.Context) error) error {
	pause := First
	for attempt := 1; ; attempt++ {
		err := f(ctx)
		if err == nil {
			if attempt > 1 {
				log.Info("succeeded after retrying", "what", what, "attempts", attempt)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Warn("failed; retrying", "what", what, "attempt", attempt, "retry_in", pause, "err", err)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		pause = min(2*pause, Max)
	}
}
