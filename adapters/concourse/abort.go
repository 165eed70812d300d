package concourse

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// AbortOutcome is what happened to one build of a bulk abort.
type AbortOutcome string

// Abort outcomes.
const (
	// AbortRequested: the server accepted the abort (204); not verified.
	AbortRequested AbortOutcome = "requested"
	// AbortAborted: the build's status is now aborted.
	AbortAborted AbortOutcome = "aborted"
	// AbortAlreadyFinished: the build finished with another status before
	// the abort took effect.
	AbortAlreadyFinished AbortOutcome = "already_finished"
	// AbortNotStopped: the build was still pending or started when the wait
	// ended (typically a build stuck on a dead worker; try Force).
	AbortNotStopped AbortOutcome = "not_stopped"
	// AbortFailed: the request failed; Err says why.
	AbortFailed AbortOutcome = "failed"
)

// AbortResult is the outcome for one build.
type AbortResult struct {
	ID      int
	Outcome AbortOutcome
	// Status is the last status read (empty if never read).
	Status string
	Err    error
}

// AbortOptions tune AbortBuilds and AbortAndWait.
type AbortOptions struct {
	// Force makes Concourse mark pending and started builds aborted at once
	// (PUT …/abort?force), for builds stuck on a worker that is gone.
	Force bool
	// Timeout bounds the wait for statuses to change (default 60s).
	Timeout time.Duration
	// PollInterval overrides the client's poll interval.
	PollInterval time.Duration
	// Scopes names the pipeline of each build id, as a plan listed it: the
	// verification then reads the pipeline's builds list (one request per
	// page of up to 500 builds) instead of each build. Builds without a
	// scope are read from the list of all builds.
	Scopes map[int]BuildScope
	// Progress, when set, is called as the aborts are sent (Phase
	// "sending", Done of Total) and after each verification poll (Phase
	// "verifying", Pending builds not stopped yet). It may be called from
	// several goroutines at once.
	Progress func(AbortProgress)
}

// BuildScope is where a build is listed: its team and pipeline.
type BuildScope struct {
	Team, Pipeline string
}

// AbortProgress is how far a bulk abort is.
type AbortProgress struct {
	Phase   string // "sending" or "verifying"
	Done    int    // aborts sent (sending) or builds stopped (verifying)
	Total   int
	Pending int // builds not stopped yet (verifying)
	// Elapsed is the time since the phase started, on the client's clock.
	Elapsed time.Duration
}

// VerifyRate is the rate, in builds per second, the abort verification
// counts on when it sizes its wait: half the ~60/s at which a Concourse
// 8.2.5 web node turns aborted builds aborted.
const VerifyRate = 30

// VerifyTimeout is how long to wait for n aborted builds to stop: base, or
// the time n builds take at VerifyRate when that is longer (5,000 builds:
// 2m47s).
func VerifyTimeout(base time.Duration, n int) time.Duration {
	return max(base, (time.Duration(n) * time.Second / VerifyRate).Round(time.Second))
}

// AbortBuilds sends the abort requests with the per-target concurrency
// limit and returns one result per id, in the order of ids. Outcomes are
// AbortRequested or AbortFailed. When ctx ends, the ids not yet sent fail
// with ctx's error.
//
// The aborts are sent oldest first, whatever the order of ids: the ATC
// finishes aborted pending builds in id order and stops at the first older
// pending build that is not aborted and cannot start (a busy serial job),
// so a build aborted before the older ones stays pending until they are
// aborted too. Oldest first, builds show aborted while sending goes on.
func (c *Client) AbortBuilds(ctx context.Context, ids []int, opts AbortOptions) []AbortResult {
	results := make([]AbortResult, len(ids))
	order := make([]int, len(ids))
	for i, id := range ids {
		results[i] = AbortResult{ID: id}
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return ids[order[a]] < ids[order[b]] })
	start := c.now()
	var sent atomic.Int64
	c.forEach(ctx, len(order), func(ctx context.Context, k int) {
		i := order[k]
		err := c.AbortBuild(ctx, ids[i], opts.Force)
		if opts.Progress != nil {
			opts.Progress(AbortProgress{Phase: "sending", Done: int(sent.Add(1)), Total: len(ids), Elapsed: c.now().Sub(start)})
		}
		if err != nil {
			results[i].Outcome, results[i].Err = AbortFailed, err
			return
		}
		results[i].Outcome = AbortRequested
	}, func(k int, err error) {
		results[order[k]].Outcome, results[order[k]].Err = AbortFailed, err
	})
	return results
}

// AbortAndWait aborts the builds (AbortBuilds), then polls them until each
// is aborted or finished, or until opts.Timeout. Builds still running at the
// deadline are AbortNotStopped. The error is non-nil only when ctx ended;
// the results are complete either way.
func (c *Client) AbortAndWait(ctx context.Context, ids []int, opts AbortOptions) ([]AbortResult, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = c.poll
	}
	results := c.AbortBuilds(ctx, ids, opts)
	start, realStart := c.now(), time.Now()
	// the wait ends when the timeout passed on the client's clock or in
	// real time, whichever comes first (tests may hold either still)
	over := func() bool { return c.now().Sub(start) >= opts.Timeout || time.Since(realStart) >= opts.Timeout }
	waiting := make([]int, 0, len(results))
	for i := range results {
		if results[i].Outcome == AbortRequested {
			waiting = append(waiting, i)
		}
	}
	total := len(waiting)
	delay, maxDelay := opts.PollInterval, verifyMaxDelay(opts)
	for len(waiting) > 0 {
		if err := c.sleep(ctx, delay); err != nil {
			c.markNotStopped(results, waiting, fmt.Errorf("%s: waiting for builds to stop: %w", c.cfg.Name, err))
			return results, err
		}
		// back off between rounds: the web node is often what is struggling
		delay = min(delay*3/2, maxDelay)
		waiting = c.verifyRound(ctx, results, waiting, opts.Scopes)
		if opts.Progress != nil {
			opts.Progress(AbortProgress{Phase: "verifying", Done: total - len(waiting), Total: total, Pending: len(waiting), Elapsed: c.now().Sub(start)})
		}
		if ctx.Err() != nil {
			c.markNotStopped(results, waiting, fmt.Errorf("%s: waiting for builds to stop: %w", c.cfg.Name, ctx.Err()))
			return results, ctx.Err()
		}
		if len(waiting) > 0 && over() {
			c.markNotStopped(results, waiting, nil)
			break
		}
	}
	return results, nil
}

// verifyMaxDelay caps the pause between two verification rounds: a tenth
// of the wait, within [PollInterval, 5s].
func verifyMaxDelay(opts AbortOptions) time.Duration {
	return max(opts.PollInterval, min(opts.Timeout/10, 5*time.Second))
}

// listPageMax is the largest page a verification listing asks for.
const listPageMax = 500

// verifyRound reads the statuses of the waiting builds and returns those
// still pending or started. Builds are read from listings, not one by one:
// each scope's (pipeline's) builds between the lowest and highest waiting
// id, newest first, one request per page of up to 500 builds; builds
// without a scope from the list of all builds. A build the listing did not
// show (deleted, or not visible there) is read on its own. A listing that
// fails leaves its builds waiting for the next round.
func (c *Client) verifyRound(ctx context.Context, results []AbortResult, waiting []int, scopes map[int]BuildScope) []int {
	groups := map[BuildScope][]int{}
	var order []BuildScope
	for _, i := range waiting {
		sc := scopes[results[i].ID]
		if sc.Pipeline == "" {
			sc = BuildScope{}
		}
		if _, ok := groups[sc]; !ok {
			order = append(order, sc)
		}
		groups[sc] = append(groups[sc], i)
	}
	still := waiting[:0:0]
	var unseen []int
	for _, sc := range order {
		idx := groups[sc]
		byID := make(map[int]int, len(idx))
		lo, hi := results[idx[0]].ID, results[idx[0]].ID
		for _, i := range idx {
			id := results[i].ID
			byID[id] = i
			lo, hi = min(lo, id), max(hi, id)
		}
		seen := make(map[int]bool, len(idx))
		err := c.listRange(ctx, sc, lo, hi, func(b Build) {
			i, ok := byID[b.ID]
			if !ok || seen[b.ID] {
				return
			}
			seen[b.ID] = true
			r := &results[i]
			r.Status, r.Err = b.Status, nil
			switch {
			case b.Status == StatusAborted:
				r.Outcome = AbortAborted
			case b.Finished():
				r.Outcome = AbortAlreadyFinished
			default:
				still = append(still, i)
			}
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			for _, i := range idx {
				if !seen[results[i].ID] {
					results[i].Err = err // transient: keep waiting
					still = append(still, i)
				}
			}
			continue
		}
		for _, i := range idx {
			if !seen[results[i].ID] {
				unseen = append(unseen, i)
			}
		}
	}
	if len(unseen) == 0 {
		return still
	}
	var mu sync.Mutex
	c.forEach(ctx, len(unseen), func(ctx context.Context, k int) {
		i := unseen[k]
		b, err := c.Build(ctx, results[i].ID)
		mu.Lock()
		defer mu.Unlock()
		r := &results[i]
		switch {
		case errors.Is(err, ErrNotFound):
			r.Outcome, r.Err = AbortFailed, err
		case err != nil:
			r.Err = err
			still = append(still, i)
		case b.Status == StatusAborted:
			r.Outcome, r.Status, r.Err = AbortAborted, b.Status, nil
		case b.Finished():
			r.Outcome, r.Status, r.Err = AbortAlreadyFinished, b.Status, nil
		default:
			r.Status, r.Err = b.Status, nil
			still = append(still, i)
		}
	}, func(k int, err error) {
		mu.Lock()
		defer mu.Unlock()
		still = append(still, unseen[k])
	})
	return still
}

// BuildsNow reads the builds ids as they are now, from listings as the
// abort verification does: each scope's (pipeline's) builds between the
// lowest and highest id, one request per page of up to 500 builds; a build
// no listing showed is read on its own. A build that no longer exists is
// absent from the map.
func (c *Client) BuildsNow(ctx context.Context, ids []int, scopes map[int]BuildScope) (map[int]Build, error) {
	out := make(map[int]Build, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	groups := map[BuildScope][]int{}
	var order []BuildScope
	for _, id := range ids {
		sc := scopes[id]
		if sc.Pipeline == "" {
			sc = BuildScope{}
		}
		if _, ok := groups[sc]; !ok {
			order = append(order, sc)
		}
		groups[sc] = append(groups[sc], id)
	}
	want := make(map[int]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	for _, sc := range order {
		g := groups[sc]
		lo, hi := slices.Min(g), slices.Max(g)
		err := c.listRange(ctx, sc, lo, hi, func(b Build) {
			if want[b.ID] {
				out[b.ID] = b
			}
		})
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	var unseen []int
	for _, id := range ids {
		if _, ok := out[id]; !ok {
			unseen = append(unseen, id)
		}
	}
	var mu sync.Mutex
	var firstErr error
	c.forEach(ctx, len(unseen), func(ctx context.Context, k int) {
		b, err := c.Build(ctx, unseen[k])
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			out[b.ID] = b
		case !errors.Is(err, ErrNotFound) && firstErr == nil:
			firstErr = err
		}
	}, func(_ int, err error) {
		mu.Lock()
		defer mu.Unlock()
		if firstErr == nil {
			firstErr = err
		}
	})
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// listRange streams the builds of the scope with ids in [lo, hi], newest
// first, paging down from hi until a page reaches lo.
func (c *Client) listRange(ctx context.Context, sc BuildScope, lo, hi int, fn func(Build)) error {
	path, action := "/api/v1/builds", "list builds"
	if sc.Pipeline != "" {
		path = pipelinePath(c.team(sc.Team), sc.Pipeline) + "/builds"
		action = fmt.Sprintf("list builds of pipeline %q", sc.Pipeline)
	}
	limit := strconv.Itoa(min(hi-lo+1, listPageMax))
	q := url.Values{"to": {strconv.Itoa(hi)}, "limit": {limit}}
	for {
		pg, err := c.buildPage(ctx, path, q, action, func(b Build) error {
			if b.ID >= lo && b.ID <= hi {
				fn(b)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if pg.count == 0 || pg.minID <= lo || pg.next == nil {
			return nil
		}
		q = pg.next
		q.Set("limit", limit)
	}
}

func (c *Client) markNotStopped(results []AbortResult, idx []int, cause error) {
	for _, i := range idx {
		r := &results[i]
		r.Outcome = AbortNotStopped
		if cause != nil {
			r.Err = cause
		} else if r.Err == nil {
			r.Err = fmt.Errorf("%s: build %d %s", c.cfg.Name, r.ID, notStoppedWhy(r.Status))
		}
	}
}

// notStoppedWhy says what is true of a build still running after its
// abort: a pending build was never scheduled (its inputs have no versions
// yet, or a serial job or max_in_flight holds it); the ATC finishes a job's
// aborted pending builds oldest first and stops at the first pending build
// that is not aborted and cannot start, so it waits for that one or for
// the scheduler's next look at the job; no worker is involved. A started
// one is on a worker that does not answer.
func notStoppedWhy(status string) string {
	switch status {
	case StatusPending:
		return "is still pending: it never started, so no worker is involved; Concourse finishes a job's aborted pending builds oldest first when its scheduler looks at the job, never past an older pending build that is not aborted"
	case StatusStarted:
		return "is still started: its worker does not answer (stalled or gone); Concourse ends it when the worker comes back or is pruned"
	}
	return "is still " + orUnknown(status) + " after the abort"
}

func orUnknown(s string) string {
	if s == "" {
		return "in an unknown state"
	}
	return s
}

// NotStopped returns the ids whose outcome is AbortNotStopped.
func NotStopped(results []AbortResult) []int {
	var out []int
	for _, r := range results {
		if r.Outcome == AbortNotStopped {
			out = append(out, r.ID)
		}
	}
	return out
}

// forEach runs fn(i) for i in [0,n) with at most the per-target number of
// calls in flight (the limit is shared by all bulk calls on this client).
// Items not started because ctx ended are passed to skipped.
func (c *Client) forEach(ctx context.Context, n int, fn func(ctx context.Context, i int), skipped func(i int, err error)) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		if err := c.acquire(ctx); err != nil {
			for j := i; j < n; j++ {
				skipped(j, fmt.Errorf("%s: not attempted: %w", c.cfg.Name, err))
			}
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer c.release()
			fn(ctx, i)
		}(i)
	}
	wg.Wait()
}
