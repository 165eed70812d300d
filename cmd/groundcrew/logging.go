package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// newLogger returns the logger of log: {format: text|json, level}. Every
// line that names a run ("run" attribute) also gets its runbook and target
// once the engine has committed a change of it (runIndex).
func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.Log.Level))
	ho := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewTextHandler(w, ho)
	if cfg.Log.Format == "json" {
		h = slog.NewJSONHandler(w, ho)
	}
	return slog.New(runHandler{next: h, runs: theRunIndex})
}

// runIndex remembers the runbook and target of recent runs, for the log.
// The engine tells it through bot.Observer.
type runIndex struct {
	mu   sync.RWMutex
	runs map[string][2]string
}

// theRunIndex is shared by every logger of the process.
var theRunIndex = &runIndex{runs: map[string][2]string{}}

const runIndexMax = 10000

// RunCommitted implements bot.Observer.
func (x *runIndex) RunCommitted(r *runmodel.Run, _ *runmodel.Batch) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, ok := x.runs[r.ID]; !ok && len(x.runs) >= runIndexMax {
		for k := range x.runs { // forget an arbitrary run: the log loses detail, never lines
			delete(x.runs, k)
			break
		}
	}
	x.runs[r.ID] = [2]string{r.Runbook, r.Target}
}

func (x *runIndex) lookup(id string) ([2]string, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	v, ok := x.runs[id]
	return v, ok
}

// runHandler adds runbook and target to records with a "run" attribute.
type runHandler struct {
	next slog.Handler
	runs *runIndex
	// has is set when the logger's own attributes already name them; run
	// is the run the logger's own attributes name.
	has bool
	run string
}

func (h runHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h runHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.has {
		return h.next.Handle(ctx, r)
	}
	id := h.run
	hasRunbook := false
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "run":
			id = a.Value.String()
		case "runbook":
			hasRunbook = true
		}
		return true
	})
	if id != "" && !hasRunbook {
		if v, ok := h.runs.lookup(id); ok {
			r = r.Clone()
			r.AddAttrs(slog.String("runbook", v[0]), slog.String("target", v[1]))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h runHandler) WithAttrs(as []slog.Attr) slog.Handler {
	has, run := h.has, h.run
	for _, a := range as {
		switch a.Key {
		case "runbook":
			has = true
		case "run":
			run = a.Value.String()
		}
	}
	return runHandler{next: h.next.WithAttrs(as), runs: h.runs, has: has, run: run}
}

func (h runHandler) WithGroup(name string) slog.Handler {
	return runHandler{next: h.next.WithGroup(name), runs: h.runs, has: h.has, run: h.run}
}

// runLog logs the start and end of every run (bot.Observer), with its id,
// runbook and target.
type runLog struct{ log *slog.Logger }

func (l runLog) RunCommitted(r *runmodel.Run, b *runmodel.Batch) {
	for _, e := range b.Journal {
		switch e.Type {
		case runmodel.JRunStarted:
			l.log.Info("run started", "run", r.ID, "runbook", r.Runbook, "target", r.Target, "by", r.Requester.ID, "dry_run", r.DryRun)
		case runmodel.JRunFinished:
			l.log.Info("run finished", "run", r.ID, "runbook", r.Runbook, "target", r.Target, "state", r.State,
				"duration", r.FinishedAt.Sub(r.CreatedAt).Round(time.Second).String(), "error", r.Error)
		}
	}
}

// observers calls every observer in turn.
type observers []runmodel.Observer

func (os observers) RunCommitted(r *runmodel.Run, b *runmodel.Batch) {
	for _, o := range os {
		o.RunCommitted(r, b)
	}
}
