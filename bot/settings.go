package bot

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// settings is what a configuration reload changes in the engine: the
// approval policy. A run keeps the runbook it started with (Run.Spec); it
// also keeps the policy it started with: the runs active at a reload are
// pinned to the policy before it until they end (or the bot restarts,
// which reads the file again for everyone).
type settings struct {
	mu  sync.RWMutex
	cur policy.Config
	// pinned are the runs started before a reload, with the policy they
	// started with and when the reload happened.
	pinned map[string]pinnedPolicy
}

type pinnedPolicy struct {
	cfg policy.Config
	at  time.Time
}

func newSettings(cfg policy.Config) *settings {
	return &settings{cur: cfg, pinned: map[string]pinnedPolicy{}}
}

// approvals is the current policy, for runs that start now.
func (s *settings) approvals() policy.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// forRun is the policy run id started with.
func (s *settings) forRun(id string) policy.Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if p, ok := s.pinned[id]; ok {
		return p.cfg
	}
	return s.cur
}

// reloadedAt says when the configuration was reloaded under run id, if it
// was since the run started.
func (s *settings) reloadedAt(id string) (time.Time, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pinned[id]
	return p.at, ok
}

// swap makes cfg the policy of new runs; the runs in active that are not
// pinned yet keep the policy they run under. Pins of runs no longer
// active are forgotten.
func (s *settings) swap(cfg policy.Config, active []string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keep := make(map[string]pinnedPolicy, len(active))
	for _, id := range active {
		if p, ok := s.pinned[id]; ok {
			keep[id] = p
		} else {
			keep[id] = pinnedPolicy{cfg: s.cur, at: at}
		}
	}
	s.pinned, s.cur = keep, cfg
}

// Reload makes approvals the policy of the runs that start from now on.
// The runs already started keep the policy (and the runbook) they started
// with; `/runbook status` says so. The caller swaps the Library it gave
// in Options itself (the engine reads runbooks only to start runs) and
// validates both first, as `config check` does.
func (e *Engine) Reload(ctx context.Context, approvals policy.Config) error {
	runs, err := e.opts.Store.ListRuns(ctx, runmodel.RunQuery{Active: true})
	if err != nil {
		return fmt.Errorf("listing the active runs to keep their policy: %w", err)
	}
	ids := make([]string, 0, len(runs))
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	e.set.swap(approvals, ids, e.opts.Now())
	e.chans.forget()
	e.dir.resolveNames(ctx, approvals, e.opts.Library)
	e.log.Info("approval policy reloaded", "runs_keeping_their_policy", len(ids))
	return nil
}
