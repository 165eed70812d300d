package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// housekeeping has one concern: running the store's housekeeping (old
// dedupe entries and finished runs past the retention are forgotten) when
// it is due, every HousekeepEvery and first on the first Tick, in the
// background. A store that is no Housekeeper is left alone.
type housekeeping struct {
	store Housekeeper // nil: the store keeps house itself
	every time.Duration
	log   *slog.Logger

	mu   sync.Mutex
	last time.Time // when the store was last housekept
}

// maybe runs the housekeeping with background when it is due at now.
func (h *housekeeping) maybe(ctx context.Context, now time.Time, background func(func())) {
	if h.store == nil {
		return
	}
	h.mu.Lock()
	due := h.last.IsZero() || now.Sub(h.last) >= h.every
	if due {
		h.last = now
	}
	h.mu.Unlock()
	if !due {
		return
	}
	background(func() {
		res, err := h.store.Housekeep(ctx, now)
		if err != nil {
			h.log.Error("store housekeeping failed; retrying at the next pass", "err", err)
			return
		}
		if res.Events > 0 || res.Runs > 0 {
			h.log.Info("store housekeeping", "forgotten_event_ids", res.Events, "deleted_finished_runs", res.Runs)
		}
	})
}
