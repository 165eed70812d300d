package concourse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// historyWorld has finished builds spread over two days, pending builds and
// a second team.
func historyWorld() *concoursesim.World {
	w := concoursesim.NewWorld().RunningWorkers("w", 2)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}, {Name: "deploy"}}})
	w.AddPipeline(concoursesim.Pipeline{Name: "ops", Team: "deploy", Jobs: []concoursesim.Job{{Name: "run"}}})
	w.AddBuilds(
		concoursesim.Build{Pipeline: "app", Job: "unit", Status: "succeeded", Count: 30, Age: concoursesim.Duration(40 * time.Hour)},
		concoursesim.Build{Pipeline: "app", Job: "unit", Status: "failed", Count: 5, Age: concoursesim.Duration(2 * time.Hour)},
		concoursesim.Build{Pipeline: "ops", Job: "run", Status: "errored", Count: 4, Age: concoursesim.Duration(time.Hour)},
	)
	return w.PendingBuilds("main", "app", "deploy", 12)
}

func collect(t *testing.T, c *Client, f BuildFilter) []Build {
	t.Helper()
	bs, err := c.Builds(context.Background(), f)
	require.NoError(t, err)
	return bs
}

func TestEachBuild_Filters(t *testing.T) {
	env := newSimEnv(t, historyWorld(), nil)
	now := env.clock.Now()
	tests := []struct {
		name string
		f    BuildFilter
		want int
	}{
		{"all builds, small pages", BuildFilter{PageSize: 7}, 30 + 5 + 4 + 1 + 12},
		{"limit", BuildFilter{PageSize: 7, Limit: 10}, 10},
		{"pending", BuildFilter{Statuses: []string{StatusPending}, PageSize: 5}, 12},
		{"pending since 24h: pending builds always count", BuildFilter{Statuses: []string{StatusPending}, Since: now.Add(-24 * time.Hour)}, 12},
		{"failed and errored in 3h (timestamps=true)", BuildFilter{Statuses: []string{StatusFailed, StatusErrored}, Since: now.Add(-3 * time.Hour)}, 9},
		{"window excludes old builds", BuildFilter{Statuses: []string{StatusSucceeded}, Since: now.Add(-24 * time.Hour)}, 0},
		{"until", BuildFilter{Statuses: []string{StatusSucceeded}, Until: now.Add(-24 * time.Hour)}, 30},
		{"team", BuildFilter{Team: "deploy"}, 4},
		{"pipeline of the default team", BuildFilter{Pipeline: "app", Statuses: []string{StatusFailed}}, 5},
		{"job", BuildFilter{Pipeline: "app", Job: "deploy"}, 13},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bs := collect(t, env.c, tt.f)
			assert.Len(t, bs, tt.want)
			for i := 1; i < len(bs); i++ {
				assert.Greater(t, bs[i-1].ID, bs[i].ID, "newest first")
			}
		})
	}
}

func TestEachBuild_UsesTimestampsWhenTheyFindEverything(t *testing.T) {
	env := newSimEnv(t, historyWorld(), nil)
	since := env.clock.Now().Add(-3 * time.Hour)
	collect(t, env.c, BuildFilter{Statuses: []string{StatusErrored}, Since: since})
	calls := env.srv.Calls()
	last := calls[len(calls)-1].Path
	assert.Contains(t, last, "timestamps=true")
	assert.Contains(t, last, "limit=50000")

	env.srv.ResetCalls()
	collect(t, env.c, BuildFilter{Statuses: []string{StatusPending}, Since: since})
	for _, c := range env.srv.Calls() {
		assert.NotContains(t, c.Path, "timestamps", "pending builds have no start time: page by id")
	}
}

func TestEachBuild_StopsPagingOutsideTheWindow(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddBuilds(
		concoursesim.Build{Pipeline: "app", Job: "unit", Status: "succeeded", Count: 200, Age: concoursesim.Duration(72 * time.Hour)},
		concoursesim.Build{Pipeline: "app", Job: "unit", Status: "aborted", Count: 3, Age: concoursesim.Duration(time.Hour)},
	)
	env := newSimEnv(t, w, nil)
	bs := collect(t, env.c, BuildFilter{Statuses: []string{StatusAborted}, Since: env.clock.Now().Add(-24 * time.Hour), PageSize: 10})
	assert.Len(t, bs, 3)
	assert.LessOrEqual(t, env.srv.CountCalls("GET", "/api/v1/builds"), 2, "one page past the window is enough")
}

func TestEachBuild_ContinuesPastATruncatedTimestampsAnswer(t *testing.T) {
	env := newSimEnv(t, historyWorld(), nil)
	f := BuildFilter{Statuses: []string{StatusFailed, StatusErrored}, Since: env.clock.Now().Add(-3 * time.Hour), PageSize: 3}
	bs := collect(t, env.c, f)
	assert.Len(t, bs, 9, "the server's answer was cut at 3: the rest comes from id pages")
	seen := map[int]bool{}
	for _, b := range bs {
		assert.False(t, seen[b.ID], "build %d twice", b.ID)
		seen[b.ID] = true
	}
	f.Limit = 4
	assert.Len(t, collect(t, env.c, f), 4)
}

func TestEachBuild_StreamsFiftyThousandBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("large history")
	}
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddBuilds(concoursesim.Build{Pipeline: "app", Job: "unit", Status: "succeeded", Count: 50000})
	env := newSimEnv(t, w, nil)
	n, maxID := 0, 0
	err := env.c.EachBuild(context.Background(), BuildFilter{}, func(b Build) error {
		n++
		maxID = max(maxID, b.ID)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 50000, n)
	assert.Equal(t, 100, env.srv.CountCalls("GET", "/api/v1/builds"), "pages of 500 following Link")
}

func TestEachBuild_CallbackStop(t *testing.T) {
	env := newSimEnv(t, historyWorld(), nil)
	n := 0
	err := env.c.EachBuild(context.Background(), BuildFilter{PageSize: 5}, func(Build) error {
		n++
		if n == 3 {
			return ErrStop
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	boom := errors.New("boom")
	err = env.c.EachBuild(context.Background(), BuildFilter{}, func(Build) error { return boom })
	assert.ErrorIs(t, err, boom)
}

func TestEachBuild_RejectsBadFilters(t *testing.T) {
	c, err := New(TargetConfig{Name: "x", URL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	now := time.Now()
	err = c.EachBuild(context.Background(), BuildFilter{Job: "unit"}, func(Build) error { return nil })
	assert.ErrorContains(t, err, "a job filter needs its pipeline")
	err = c.EachBuild(context.Background(), BuildFilter{Since: now, Until: now.Add(-time.Hour)}, func(Build) error { return nil })
	assert.ErrorContains(t, err, "is after until")
}

// stuckWorld: pending builds, a build started on a worker that died, and a
// finished one.
func stuckWorld() *concoursesim.World {
	w := concoursesim.NewWorld().RunningWorkers("w", 2).StalledWorker("w-dead")
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "deploy", Serial: true}, {Name: "unit"}}})
	w.AddBuilds(
		concoursesim.Build{ID: 1, Pipeline: "app", Job: "unit", Status: "succeeded"},
		concoursesim.Build{ID: 2, Pipeline: "app", Job: "unit", Status: "started", Worker: "w-dead"},
		concoursesim.Build{ID: 3, Pipeline: "app", Job: "deploy", Status: "started", Worker: "w-0"},
		concoursesim.Build{ID: 10, Pipeline: "app", Job: "deploy", Status: "pending", Count: 20},
	)
	return w
}

func TestAbortAndWait_Outcomes(t *testing.T) {
	env := newSimEnv(t, stuckWorld(), []concoursesim.Option{concoursesim.WithAbortDelay(0)})
	ids := []int{10, 11, 12, 1, 2, 999}
	res, err := env.c.AbortAndWait(context.Background(), ids, AbortOptions{Timeout: 50 * time.Millisecond})
	require.NoError(t, err)
	require.Len(t, res, len(ids))
	got := map[int]AbortOutcome{}
	for _, r := range res {
		got[r.ID] = r.Outcome
	}
	assert.Equal(t, map[int]AbortOutcome{
		10: AbortAborted, 11: AbortAborted, 12: AbortAborted,
		1: AbortAlreadyFinished, 2: AbortNotStopped, 999: AbortFailed,
	}, got)
	assert.Equal(t, []int{2}, NotStopped(res))
	assert.ErrorContains(t, res[4].Err, "build 2 is still started: its worker does not answer")
	assert.NotContains(t, res[4].Err.Error(), "force", "no runbook parameter is hinted: the op does not know the runbook's")
	assert.ErrorIs(t, res[5].Err, ErrNotFound)

	t.Run("force stops the stuck build", func(t *testing.T) {
		res, err := env.c.AbortAndWait(context.Background(), []int{2}, AbortOptions{Force: true, Timeout: time.Second})
		require.NoError(t, err)
		assert.Equal(t, AbortAborted, res[0].Outcome)
		b, _ := env.srv.Build(2)
		assert.Equal(t, "aborted", b.Status)
	})
}

func TestAbortBuilds_BoundedConcurrency(t *testing.T) {
	env := newSimEnv(t, stuckWorld(), []concoursesim.Option{concoursesim.WithLatency(20 * time.Millisecond)}, WithConcurrency(4))
	ids := make([]int, 20)
	for i := range ids {
		ids[i] = 10 + i
	}
	_, err := env.c.Info(context.Background()) // log in outside the measure
	require.NoError(t, err)
	start := time.Now()
	res := env.c.AbortBuilds(context.Background(), ids, AbortOptions{})
	took := time.Since(start)
	for _, r := range res {
		assert.Equal(t, AbortRequested, r.Outcome, "build %d: %v", r.ID, r.Err)
	}
	// 20 requests × 20 ms / 4 in flight = 100 ms; sequential would be 400 ms
	assert.GreaterOrEqual(t, took, 90*time.Millisecond, "never more than 4 in flight")
	assert.Less(t, took, 350*time.Millisecond, "requests overlap")
}

// The ATC finishes aborted pending builds in id order and stops at the
// first older pending build that is not aborted: AbortBuilds sends the
// oldest first whatever the order it is given (a plan lists builds newest
// first), so builds show aborted while sending goes on.
func TestAbortBuilds_SendsOldestFirst(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1).PendingBuilds("main", "queue", "deploy", 40)
	env := newSimEnv(t, w, []concoursesim.Option{concoursesim.WithAbortDelay(0)}, WithConcurrency(1))
	var ids []int
	for _, b := range env.srv.Builds() {
		if b.Status == "pending" {
			ids = append([]int{b.ID}, ids...) // newest first, as listed
		}
	}
	require.Len(t, ids, 40)
	env.srv.ResetCalls()
	var mu sync.Mutex
	abortedWhileSending := 0
	res := env.c.AbortBuilds(context.Background(), ids, AbortOptions{Progress: func(p AbortProgress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Done == len(ids)/2 {
			abortedWhileSending = env.srv.CountBuilds("queue")["aborted"]
		}
	}})
	require.Len(t, res, len(ids))
	for i, r := range res {
		require.Equal(t, ids[i], r.ID, "results in the order given")
		require.Equal(t, AbortRequested, r.Outcome)
	}
	var sent []int
	for _, c := range env.srv.Calls() {
		var id int
		if _, err := fmt.Sscanf(c.Path, "/api/v1/builds/%d/abort", &id); err == nil && c.Method == "PUT" {
			sent = append(sent, id)
		}
	}
	assert.True(t, slices.IsSorted(sent), "oldest first: %v", sent)
	assert.Equal(t, len(ids)/2, abortedWhileSending, "half sent, half aborted")
	assert.Equal(t, len(ids), env.srv.CountBuilds("queue")["aborted"])
}

func TestAbortBuilds_ContextCancelFailsTheRest(t *testing.T) {
	env := newSimEnv(t, stuckWorld(), []concoursesim.Option{concoursesim.WithLatency(30 * time.Millisecond)}, WithConcurrency(1))
	_, err := env.c.Info(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Millisecond)
	defer cancel()
	ids := []int{10, 11, 12, 13, 14, 15}
	res := env.c.AbortBuilds(ctx, ids, AbortOptions{})
	failed := 0
	for _, r := range res {
		if r.Outcome == AbortFailed {
			failed++
			assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
		}
	}
	assert.GreaterOrEqual(t, failed, 4)
	assert.Len(t, res, len(ids))
}

func TestBuildEvents_FromSimulator(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1).ErroredBuilds("main", "app", "unit", 1, "image fetching failed")
	env := newSimEnv(t, w, nil)
	evs, err := env.c.AllBuildEvents(context.Background(), 1)
	require.NoError(t, err)
	types := []string{}
	for _, e := range evs {
		types = append(types, e.Type)
	}
	assert.Equal(t, []string{"status", "initialize-task", "selected-worker", "log", "log", "error", "status"}, types)
	assert.Equal(t, StatusErrored, evs[len(evs)-1].Status)

	ms, err := env.c.ScanBuildEvents(context.Background(), 1, regexp.MustCompile("image fetching failed"), 4)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, EventError, ms[0].Line.EventType)
	assert.NotEmpty(t, ms[0].Line.Origin.ID)
	assert.Equal(t, []string{"selected worker: w-0", concoursesim.ImageFetchLog[0], concoursesim.ImageFetchLog[1]}, ms[0].Before)
	assert.Equal(t, []string{"errored"}, ms[0].After)
}

func TestBuildEvents_FollowsARunningBuild(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit", Log: []string{"running"}}}})
	w.AddBuilds(concoursesim.Build{ID: 1, Pipeline: "app", Job: "unit", Status: "started"})
	env := newSimEnv(t, w, []concoursesim.Option{concoursesim.WithAbortDelay(0)})
	s, err := env.c.BuildEvents(context.Background(), 1)
	require.NoError(t, err)
	defer s.Close()
	var seen []string
	for len(seen) < 5 {
		ev, err := s.Next()
		require.NoError(t, err)
		seen = append(seen, ev.Type)
	}
	require.NoError(t, env.c.AbortBuild(context.Background(), 1, false))
	for {
		ev, err := s.Next()
		if err != nil {
			require.ErrorIs(t, err, errEOF())
			break
		}
		seen = append(seen, ev.Type+":"+ev.Status)
	}
	assert.Equal(t, "status:aborted", seen[len(seen)-1])
}

func errEOF() error { return io.EOF }

// A real Concourse turns aborted builds aborted at about 60 per second: the
// simulator models it, the verification waits for all of them (its default
// wait grows with the plan) and progress reports how many remain.
func TestAbortAndWait_AtTheServersRate(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "queue", Jobs: []concoursesim.Job{{Name: "deploy", Serial: true}}})
	w.AddBuilds(concoursesim.Build{ID: 1, Pipeline: "queue", Job: "deploy", Status: "pending", Count: 600})
	env := newSimEnv(t, w, []concoursesim.Option{concoursesim.WithAbortDelay(0), concoursesim.WithAbortRate(60)})
	env.c.sleep = func(_ context.Context, d time.Duration) error { env.clock.Advance(d); return nil }
	ids := make([]int, 600)
	for i := range ids {
		ids[i] = i + 1
	}
	var mu sync.Mutex
	var pending []int
	sent := 0
	progress := func(p AbortProgress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Phase == "verifying" {
			pending = append(pending, p.Pending)
		} else {
			sent = max(sent, p.Done)
		}
	}

	t.Run("a fixed short wait reports what remains", func(t *testing.T) {
		res, err := env.c.AbortAndWait(context.Background(), ids[:300], AbortOptions{Timeout: 2 * time.Second, PollInterval: time.Second, Progress: progress})
		require.NoError(t, err)
		stopped := 300 - len(NotStopped(res))
		assert.InDelta(t, 120, stopped, 70, "about 60 per second for 2 s")
		assert.NotEmpty(t, NotStopped(res))
	})
	t.Run("the default wait scales with the plan", func(t *testing.T) {
		pending, sent = nil, 0
		timeout := VerifyTimeout(5*time.Second, 300)
		assert.Equal(t, 5*time.Second, VerifyTimeout(5*time.Second, 30))
		assert.Equal(t, 10*time.Second, timeout)
		res, err := env.c.AbortAndWait(context.Background(), ids[300:], AbortOptions{Timeout: timeout, PollInterval: time.Second, Progress: progress})
		require.NoError(t, err)
		assert.Empty(t, NotStopped(res), "300 builds at 60/s stop within the scaled wait")
		assert.Equal(t, 300, sent)
		require.Greater(t, len(pending), 2)
		assert.Greater(t, pending[0], pending[len(pending)-2], "what remains goes down")
		assert.Equal(t, 0, pending[len(pending)-1])
	})
}

func TestAbortProgressLine(t *testing.T) {
	assert.Equal(t, "aborting 1,200 / 5,000 · 300/s", abortProgressLine(AbortProgress{Phase: "sending", Done: 1200, Total: 5000, Elapsed: 4 * time.Second}))
	assert.Equal(t, "aborting 3 / 5,000", abortProgressLine(AbortProgress{Phase: "sending", Done: 3, Total: 5000}))
	assert.Equal(t, "verifying: 3,800 of 5,000 still pending or started · 60/s",
		abortProgressLine(AbortProgress{Phase: "verifying", Done: 1200, Pending: 3800, Total: 5000, Elapsed: 20 * time.Second}))
}

// Verifying a bulk abort reads the pipeline's builds list, one request per
// page, with backoff between rounds — not each build: on a real web node
// per-build polling cost ≈ 8 requests per build during an incident that is
// often an overloaded web node.
func TestAbortAndWait_VerifiesFromListings(t *testing.T) {
	const n = 2000
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "queue", Jobs: []concoursesim.Job{{Name: "deploy", Serial: true}}})
	w.AddPipeline(concoursesim.Pipeline{Name: "other", Jobs: []concoursesim.Job{{Name: "unit", Serial: true}}})
	w.AddPipeline(concoursesim.Pipeline{Name: "late", Jobs: []concoursesim.Job{{Name: "unit", Serial: true}}})
	for k := 0; k < n/100; k++ { // the neighbour's builds interleave with ours
		w.AddBuilds(concoursesim.Build{Pipeline: "queue", Job: "deploy", Status: "pending", Count: 100},
			concoursesim.Build{Pipeline: "other", Job: "unit", Status: "pending", Count: 5})
	}
	env := newSimEnv(t, w, []concoursesim.Option{concoursesim.WithAbortDelay(0), concoursesim.WithAbortRate(60)})
	var pauses []time.Duration
	env.c.sleep = func(_ context.Context, d time.Duration) error {
		pauses = append(pauses, d)
		env.clock.Advance(d)
		return nil
	}
	var ids []int
	scopes := map[int]BuildScope{}
	for _, b := range env.srv.Builds() {
		if b.Pipeline == "queue" {
			ids = append(ids, b.ID)
			scopes[b.ID] = BuildScope{Team: "main", Pipeline: "queue"}
		}
	}
	require.Len(t, ids, n)
	env.srv.ResetCalls()
	res, err := env.c.AbortAndWait(context.Background(), ids, AbortOptions{
		Timeout: VerifyTimeout(time.Minute, n), PollInterval: time.Second, Scopes: scopes})
	require.NoError(t, err)
	assert.Empty(t, NotStopped(res))
	for _, r := range res {
		require.Equal(t, AbortAborted, r.Outcome, "build %d", r.ID)
	}
	assert.Equal(t, n, env.srv.CountCalls("PUT", "/api/v1/builds/*"))
	assert.Zero(t, env.srv.CountCalls("GET", "/api/v1/builds/*"), "no per-build reads")
	lists := env.srv.CountCalls("GET", "/api/v1/teams/main/pipelines/queue/builds")
	t.Logf("%d requests for %d builds (%d listings, %d rounds)", len(env.srv.Calls()), n, lists, len(pauses))
	assert.Less(t, float64(len(env.srv.Calls()))/n, 1.3, "requests per build, send and verify (%d listings)", lists)
	assert.Zero(t, env.srv.CountBuilds("other")["aborted"], "the neighbour is untouched")
	require.Greater(t, len(pauses), 3)
	assert.Greater(t, pauses[3], pauses[0], "rounds back off")
	assert.LessOrEqual(t, slices.Max(pauses), 5*time.Second)

	t.Run("builds without a pipeline are read from the list of all builds", func(t *testing.T) {
		// (a job of their own: aborted pending builds behind the neighbour's
		// older pending ones would stay pending, as on a real ATC)
		require.NoError(t, env.srv.AddBuilds(concoursesim.Build{Pipeline: "late", Job: "unit", Status: "pending", Count: 3}))
		var more []int
		for _, b := range env.srv.Builds() {
			if b.Pipeline == "late" && b.Status == "pending" {
				more = append(more, b.ID)
			}
		}
		env.srv.ResetCalls()
		res, err := env.c.AbortAndWait(context.Background(), more, AbortOptions{Timeout: time.Minute, PollInterval: time.Second})
		require.NoError(t, err)
		for _, r := range res {
			assert.Equal(t, AbortAborted, r.Outcome)
		}
		assert.Zero(t, env.srv.CountCalls("GET", "/api/v1/builds/*"))
		assert.Positive(t, env.srv.CountCalls("GET", "/api/v1/builds"))
	})
}
