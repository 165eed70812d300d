package concourse

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// The abort benchmarks measure the operations manual's "abort every
// pending build" against the simulator with 20 ms of latency per request:
//
//	go test -run '^$' -bench Abort -benchtime 1x ./adapters/concourse/
//
// Each iteration aborts benchBuilds pending builds in a fresh simulator.
// ns/build is the cost per build; PERFORMANCE.md records the numbers.

const (
	benchLatency = 20 * time.Millisecond
	benchBuilds  = 5000
	// the one-at-a-time loop takes 2 × 20 ms per build: measure fewer
	benchSequentialBuilds = 250
)

func benchEnv(b *testing.B, n int) (*Client, []int, func()) {
	b.Helper()
	w := concoursesim.NewWorld().RunningWorkers("w", 2).PendingBuilds("main", "app", "deploy", n)
	srv, err := concoursesim.New(*w, concoursesim.WithAbortDelay(0))
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(TargetConfig{Name: "bench", URL: srv.URL(), Username: "admin", Password: "admin"},
		WithPollInterval(50*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Login(context.Background()); err != nil {
		b.Fatal(err)
	}
	var ids []int
	for _, bs := range srv.Builds() {
		if bs.Status == "pending" {
			ids = append(ids, bs.ID)
		}
	}
	srv.SetLatency(benchLatency)
	return c, ids, srv.Close
}

func reportPerBuild(b *testing.B, elapsed time.Duration, builds int) {
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(builds*b.N), "ns/build")
	b.ReportMetric(0, "ns/op") // per-build is the meaningful unit
}

// BenchmarkAbortBulk sends the 5,000 aborts with the adaptive per-target
// limit (starts at 8, cap DefaultMaxInFlight; AbortBuilds, no
// verification).
func BenchmarkAbortBulk(b *testing.B) {
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, ids, done := benchEnv(b, benchBuilds)
		b.StartTimer()
		start := time.Now()
		res := c.AbortBuilds(context.Background(), ids, AbortOptions{})
		elapsed += time.Since(start)
		b.StopTimer()
		for _, r := range res {
			if r.Outcome != AbortRequested {
				b.Fatalf("build %d: %s %v", r.ID, r.Outcome, r.Err)
			}
		}
		done()
	}
	reportPerBuild(b, elapsed, benchBuilds)
}

// BenchmarkAbortAndWaitBulk aborts the 5,000 builds and verifies that each
// one stopped, from the list of builds (one request per page of 500).
func BenchmarkAbortAndWaitBulk(b *testing.B) {
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, ids, done := benchEnv(b, benchBuilds)
		b.StartTimer()
		start := time.Now()
		res, err := c.AbortAndWait(context.Background(), ids, AbortOptions{Timeout: time.Minute})
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Outcome != AbortAborted {
				b.Fatalf("build %d: %s %v", r.ID, r.Outcome, r.Err)
			}
		}
		done()
	}
	reportPerBuild(b, elapsed, benchBuilds)
}

// BenchmarkAbortSequential is the manual's loop: for each build,
// `fly abort-build -b ID`, which reads the build then aborts it, one
// request at a time.
func BenchmarkAbortSequential(b *testing.B) {
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c, ids, done := benchEnv(b, benchSequentialBuilds)
		ctx := context.Background()
		b.StartTimer()
		start := time.Now()
		for _, id := range ids {
			if _, err := c.Build(ctx, id); err != nil {
				b.Fatal(err)
			}
			if err := c.AbortBuild(ctx, id, false); err != nil {
				b.Fatal(err)
			}
		}
		elapsed += time.Since(start)
		b.StopTimer()
		done()
	}
	reportPerBuild(b, elapsed, benchSequentialBuilds)
}

// BenchmarkAbortRequestsPerBuild counts the requests a bulk abort of 2,000
// pending builds of one pipeline costs the web node, send and verify, with
// the simulator applying aborts at 60 builds per second as a Concourse
// 8.2.5 web node does (the run lasts ≈ 35 s of real time):
//
//	go test -run '^$' -bench AbortRequestsPerBuild -benchtime 1x ./adapters/concourse/
//
// Goal: ≤ 1.3 requests per build (per-build polling cost ≈ 8).
func BenchmarkAbortRequestsPerBuild(b *testing.B) {
	const n = 2000
	var reqs, elapsed float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		w := concoursesim.NewWorld().RunningWorkers("w", 2).PendingBuilds("main", "app", "deploy", n)
		srv, err := concoursesim.New(*w, concoursesim.WithAbortRate(60))
		if err != nil {
			b.Fatal(err)
		}
		c, err := New(TargetConfig{Name: "bench", URL: srv.URL(), Username: "admin", Password: "admin"})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Login(context.Background()); err != nil {
			b.Fatal(err)
		}
		var ids []int
		scopes := map[int]BuildScope{}
		for _, bs := range srv.Builds() {
			if bs.Status == "pending" {
				ids = append(ids, bs.ID)
				scopes[bs.ID] = BuildScope{Team: bs.Team, Pipeline: bs.Pipeline}
			}
		}
		srv.ResetCalls()
		b.StartTimer()
		start := time.Now()
		res, err := c.AbortAndWait(context.Background(), ids, AbortOptions{Timeout: VerifyTimeout(time.Minute, n), Scopes: scopes})
		elapsed += time.Since(start).Seconds()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Outcome != AbortAborted {
				b.Fatalf("build %d: %s %v", r.ID, r.Outcome, r.Err)
			}
		}
		reqs += float64(len(srv.Calls()))
		srv.Close()
	}
	b.ReportMetric(reqs/float64(n*b.N), "requests/build")
	b.ReportMetric(elapsed/float64(b.N), "s/abort")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkAbortSaturated sends 2,000 aborts to a web node that saturates
// (WithSaturation: 8 requests at full speed, 10 ms each, latency growing
// with the queue beyond, 503 beyond 32 in flight), with fixed limits and
// with the adaptive one (default cap 32, and cap 128):
//
//	go test -run '^$' -bench AbortSaturated -benchtime 1x ./adapters/concourse/
//
// Goal: adaptive no more than 1.2× slower than the best fixed limit, and
// no 5xx storm (failed/build ≈ 0).
func BenchmarkAbortSaturated(b *testing.B) {
	const n = 2000
	run := func(b *testing.B, opt Option, maxInFlight int) {
		var elapsed time.Duration
		failed, overloads := 0, 0
		var st LimitStats
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			w := concoursesim.NewWorld().RunningWorkers("w", 2).PendingBuilds("main", "app", "deploy", n)
			srv, err := concoursesim.New(*w, concoursesim.WithAbortDelay(0), concoursesim.WithSaturation(8, 10*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			opts := []Option{}
			if opt != nil {
				opts = append(opts, opt)
			}
			c, err := New(TargetConfig{Name: "bench", URL: srv.URL(), Username: "admin", Password: "admin", MaxInFlight: maxInFlight}, opts...)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Login(context.Background()); err != nil {
				b.Fatal(err)
			}
			var ids []int
			for _, bs := range srv.Builds() {
				if bs.Status == "pending" {
					ids = append(ids, bs.ID)
				}
			}
			b.StartTimer()
			start := time.Now()
			res := c.AbortBuilds(context.Background(), ids, AbortOptions{})
			elapsed += time.Since(start)
			b.StopTimer()
			for _, r := range res {
				if r.Outcome != AbortRequested {
					failed++
				}
			}
			overloads += srv.Overloads()
			st = c.LimitStats()
			srv.Close()
		}
		reportPerBuild(b, elapsed, n)
		b.ReportMetric(float64(failed)/float64(n*b.N), "failed/build")
		b.ReportMetric(float64(overloads)/float64(b.N), "503s")
		b.ReportMetric(float64(st.Peak), "peak-limit")
	}
	for _, k := range []int{4, 8, 16, 32, 64} {
		b.Run(fmt.Sprintf("fixed-%d", k), func(b *testing.B) { run(b, WithConcurrency(k), 0) })
	}
	b.Run("adaptive-cap-32", func(b *testing.B) { run(b, nil, 0) })
	b.Run("adaptive-cap-128", func(b *testing.B) { run(b, nil, 128) })
}

// BenchmarkAbortInATCOrder measures how long pending builds take to show
// aborted, not only to be sent: the ATC finishes aborted pending builds in
// id order and stops at the first older pending build that is not aborted
// and cannot start (a busy serial job), so the order of the aborts decides
// when the builds turn aborted. The simulator stands in for the web node
// as measured (../shared/concourse/README.md): it receives aborts at about
// 64 a second (15.7 ms per build with a few in flight on Concourse's newest
// source: WithSaturation(2, 31.4ms)), its scheduler finishes aborted builds
// at 60 a second (Concourse 8.2.5) a moment (0.5 s) after their abort, in
// id order. The builds are fresh pending builds of a serial job behind one
// long started build.
//
//	go test -run '^$' -bench AbortInATCOrder -benchtime 1x ./adapters/concourse/
//
// Reported: send-s (first abort to last answer), all-aborted-s (to the
// last build turned aborted), ratio (all-aborted / send; goal ≤ 1.2),
// requests/build (send and verify, login included). "fly-loop" is the
// manual's loop: fly abort-build -b ID for each build of `fly builds`
// (newest first), 3 requests each (info, build, abort), one at a time.
func BenchmarkAbortInATCOrder(b *testing.B) {
	env := func(b *testing.B, n int) (*concoursesim.Server, *Client, []int, map[int]BuildScope) {
		b.Helper()
		w := concoursesim.NewWorld().RunningWorkers("w", 1).PendingBuilds("main", "queue", "deploy", n)
		srv, err := concoursesim.New(*w, concoursesim.WithAbortRate(60), concoursesim.WithSaturation(2, 31400*time.Microsecond))
		if err != nil {
			b.Fatal(err)
		}
		c, err := New(TargetConfig{Name: "bench", URL: srv.URL(), Username: "admin", Password: "admin"})
		if err != nil {
			b.Fatal(err)
		}
		var ids []int
		scopes := map[int]BuildScope{}
		for _, bs := range srv.Builds() {
			if bs.Status == "pending" {
				ids = append([]int{bs.ID}, ids...) // as a plan lists them: newest first
				scopes[bs.ID] = BuildScope{Team: bs.Team, Pipeline: bs.Pipeline}
			}
		}
		srv.ResetCalls()
		return srv, c, ids, scopes
	}
	// lastAborted is when the last of ids turned aborted (the simulator
	// records the scheduler's time of each).
	lastAborted := func(b *testing.B, srv *concoursesim.Server, ids []int) time.Time {
		var last time.Time
		for _, id := range ids {
			bs, _ := srv.Build(id)
			if bs.Status != "aborted" {
				b.Fatalf("build %d is %s", id, bs.Status)
			}
			if bs.End.After(last) {
				last = bs.End
			}
		}
		return last
	}
	report := func(b *testing.B, send, all time.Duration, reqs, n int) {
		b.ReportMetric(send.Seconds()/float64(b.N), "send-s")
		b.ReportMetric(all.Seconds()/float64(b.N), "all-aborted-s")
		b.ReportMetric(all.Seconds()/send.Seconds(), "ratio")
		b.ReportMetric(float64(reqs)/float64(n*b.N), "requests/build")
		b.ReportMetric(0, "ns/op")
	}
	for _, n := range []int{200, 2000} {
		b.Run(fmt.Sprintf("groundcrew-%d", n), func(b *testing.B) {
			var send, all time.Duration
			reqs := 0
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				srv, c, ids, scopes := env(b, n)
				b.StartTimer()
				start := time.Now()
				var sentAt time.Time
				res, err := c.AbortAndWait(context.Background(), ids, AbortOptions{Timeout: VerifyTimeout(time.Minute, n), Scopes: scopes,
					Progress: func(p AbortProgress) {
						if p.Phase == "sending" && p.Done == p.Total {
							sentAt = time.Now()
						}
					}})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range res {
					if r.Outcome != AbortAborted {
						b.Fatalf("build %d: %s %v", r.ID, r.Outcome, r.Err)
					}
				}
				send += sentAt.Sub(start)
				all += lastAborted(b, srv, ids).Sub(start)
				reqs += len(srv.Calls())
				srv.Close()
			}
			report(b, send, all, reqs, n)
		})
	}
	b.Run("fly-loop-200", func(b *testing.B) {
		const n = 200
		var send, all time.Duration
		reqs := 0
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			srv, c, ids, _ := env(b, n)
			ctx := context.Background()
			b.StartTimer()
			start := time.Now()
			for _, id := range ids {
				if _, err := c.Info(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Build(ctx, id); err != nil {
					b.Fatal(err)
				}
				if err := c.AbortBuild(ctx, id, false); err != nil {
					b.Fatal(err)
				}
			}
			send += time.Since(start)
			reqs += len(srv.Calls())
			for { // the loop does not wait; measure when they all show aborted
				if srv.CountBuilds("queue")["pending"] == 0 {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			b.StopTimer()
			all += lastAborted(b, srv, ids).Sub(start)
			srv.Close()
		}
		report(b, send, all, reqs, n)
	})
}
