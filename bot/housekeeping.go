package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// housekeeping has one concern: running the store's housekeeping (old
// dedupe entries and finished runs past the retention are forgotten) when
// it is due, every HousekeepEvery and first on the first Tick, in the
// background. Without Capabilities.Housekeeper the store is left alone.
type housekeeping struct {
	store runmodel.Housekeeper // nil: the store keeps house itself
	every time.Duration
	log   *slog.Logger

	mu      sync.Mutex
	last    time.Time // when the store was last housekept
	running bool      // a pass is under way: the next one waits for it
}

// maybe runs the housekeeping with background when it is due at now.
func (h *housekeeping) maybe(ctx context.Context, now time.Time, background func(func())) {
	if h.store == nil {
		return
	}
	h.mu.Lock()
	due := !h.running && (h.last.IsZero() || now.Sub(h.last) >= h.every)
	if due {
		h.last, h.running = now, true
	}
	h.mu.Unlock()
	if !due {
		return
	}
	background(func() {
		defer func() {
			h.mu.Lock()
			h.running = false
			h.mu.Unlock()
		}()
		start := time.Now()
		res, err := h.store.Housekeep(ctx, now)
		took := time.Since(start)
		if err != nil {
			h.log.Error("store housekeeping failed; retrying at the next pass", "err", err,
				"deleted_runs", res.Runs, "forgotten_event_ids", res.Events, "took", took)
			return
		}
		h.log.Info("store housekeeping", "deleted_runs", res.Runs, "forgotten_event_ids", res.Events,
			"deleted_message_refs", res.Messages, "batches", res.Batches, "writer_time", res.WriterTime, "longest_batch", res.LongestBatch, "took", took)
	})
}
