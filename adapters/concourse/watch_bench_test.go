package concourse

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/watch"
)

// BenchmarkWatch20Targets polls 20 targets, each with 50,000 builds in the
// window (and a queue of 200 pending builds), with watch rules at the
// minimum `every: 10s`, as serve does (concourse.WatchSource, polls spread
// over the period, so one at a time):
//
//	go test -run '^$' -bench Watch20Targets -benchtime 1x -timeout 30m ./adapters/concourse/
//
// The 20 targets are 20 clients of one in-process simulator (20 × 50,000
// simulated builds would not fit the test machine); between two rounds of
// polls 20 builds are created, 5 of them pending. Reported: the first
// poll of a target (it reads the window), a steady poll, the CPU a round
// of 20 polls takes (bot and simulator, both in this process) as a share
// of one core over the 10 s period, and for comparison a poll that
// collects the whole window (the digest's collection, what every poll did
// before).
func BenchmarkWatch20Targets(b *testing.B) {
	const targets, builds, rounds = 20, 50000, 6
	w := concoursesim.NewWorld().RunningWorkers("w", 3).StalledWorker("w-dead")
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddPipeline(concoursesim.Pipeline{Name: "queue", Jobs: []concoursesim.Job{{Name: "deploy", Serial: true}}})
	for k := 0; k < 50; k++ { // spread over the last 24 h
		w.AddBuilds(concoursesim.Build{Pipeline: "app", Job: "unit", Status: "succeeded", Count: builds / 50,
			Age: concoursesim.Duration(time.Duration(50-k) * 28 * time.Minute)})
	}
	w.AddBuilds(concoursesim.Build{Pipeline: "queue", Job: "deploy", Status: "pending", Count: 200})
	srv, err := concoursesim.New(*w, concoursesim.WithSchedulerInterval(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	clients := map[string]*Client{}
	var rules []watch.Rule
	for i := range targets {
		name := fmt.Sprintf("t%02d", i)
		c, err := New(TargetConfig{Name: name, URL: srv.URL(), Username: "admin", Password: "admin"})
		if err != nil {
			b.Fatal(err)
		}
		clients[name] = c
		rules = append(rules, watch.Rule{Target: name, Channel: "#ci-ops", Every: 10 * time.Second,
			WorkerStalledFor: 5 * time.Minute, PendingBuilds: 100, OldestPending: 30 * time.Minute})
	}
	ds, err := NewDigestSource(clients, DigestOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for i := 0; i < b.N; i++ {
		wt, err := watch.New(watch.Options{Rules: rules, Source: NewWatchSource(ds), Sink: nopSink{}})
		if err != nil {
			b.Fatal(err)
		}
		var first, steady time.Duration
		var steadyCPU time.Duration
		start := time.Now()
		for r := range targets {
			if err := wt.Poll(ctx, r); err != nil {
				b.Fatal(err)
			}
		}
		first = time.Since(start) / targets
		for round := 0; round < rounds; round++ {
			if err := srv.AddBuilds(concoursesim.Build{Pipeline: "app", Job: "unit", Status: "succeeded", Count: 15},
				concoursesim.Build{Pipeline: "queue", Job: "deploy", Status: "pending", Count: 5}); err != nil {
				b.Fatal(err)
			}
			c0, t0 := cpu(), time.Now()
			for r := range targets {
				if err := wt.Poll(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			steady += time.Since(t0)
			steadyCPU += cpu() - c0
		}
		// what every poll cost before: the digest's whole-window collection
		t0 := time.Now()
		if _, err := ds.Collect(ctx, "t00", nil, 24*time.Hour, nil); err != nil {
			b.Fatal(err)
		}
		full := time.Since(t0)
		b.ReportMetric(float64(first.Milliseconds()), "ms/first-poll")
		b.ReportMetric(float64(steady.Microseconds())/1000/float64(rounds*targets), "ms/poll")
		b.ReportMetric(100*steadyCPU.Seconds()/float64(rounds)/10, "%core")
		b.ReportMetric(float64(full.Milliseconds()), "ms/full-collection")
	}
	b.ReportMetric(0, "ns/op")
}

type nopSink struct{}

func (nopSink) Signal(context.Context, incident.Signal) (*incident.Incident, error) {
	return &incident.Incident{}, nil
}
func (nopSink) Open(context.Context) ([]*incident.Incident, error) { return nil, nil }

var _ digest.Source = (*WatchSource)(nil)
