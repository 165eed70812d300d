package concourse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/digest"
)

// Sizes of the digest benchmark (issue 9: 50,000 builds and 500 workers in
// well under 2 s and under 100 MiB).
const (
	digestBenchBuilds    = 50_000
	digestBenchWorkers   = 500
	digestBenchPipelines = 50
)

// digestBigWorld has digestBenchWorkers workers (one stalled) and digestBenchBuilds builds of
// the last 24 h over digestBenchPipelines pipelines: per pipeline 800 succeeded,
// 100 failed, 50 errored (half with image fetching failed), 30 aborted and
// 20 pending.
func digestBigWorld() *concoursesim.World {
	w := concoursesim.NewWorld().RunningWorkers("ci-worker", digestBenchWorkers).StalledWorker("ci-worker-7")
	per := digestBenchBuilds / digestBenchPipelines
	for i := range digestBenchPipelines {
		name := fmt.Sprintf("p%02d", i)
		w.AddPipeline(concoursesim.Pipeline{Name: name, Jobs: []concoursesim.Job{{Name: "build"}}})
		age := func(k int) concoursesim.Duration {
			return concoursesim.Duration(time.Duration(i*25+k) * time.Minute)
		}
		// an explicit worker spares the simulator a worker lookup per build
		b := concoursesim.Build{Pipeline: name, Job: "build", Worker: "ci-worker-1"}
		add := func(status string, n, k int, msg string) {
			c := b
			c.Status, c.Count, c.Age, c.Error = status, n, age(k), msg
			w.AddBuilds(c)
		}
		add(concoursesim.StatusSucceeded, per*80/100, 3, "")
		add(concoursesim.StatusFailed, per*10/100, 2, "")
		add(concoursesim.StatusErrored, per*25/1000, 1, ImageFetchFailed)
		add(concoursesim.StatusErrored, per*25/1000, 1, "task errored")
		add(concoursesim.StatusAborted, per*3/100, 1, "")
		p := b
		p.Status, p.Count, p.Worker = concoursesim.StatusPending, per*2/100, ""
		w.AddBuilds(p)
	}
	return w
}

// digestPeakHeap samples the live heap while fn runs and returns the highest
// growth over the heap before it.
func digestPeakHeap(fn func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Microsecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	if p := peak.Load(); p > base {
		return p - base
	}
	return 0
}

func digestBenchCollect(b *testing.B, src *DigestSource, wantBuilds int) {
	b.Helper()
	ctx := context.Background()
	var worst uint64
	var d digest.Data
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		peak := digestPeakHeap(func() { d, err = src.Collect(ctx, "infra-prd", nil, 24*time.Hour, nil) })
		if err != nil {
			b.Fatal(err)
		}
		worst = max(worst, peak)
	}
	b.StopTimer()
	total := 0
	for _, n := range d.Builds.ByStatus {
		total += n
	}
	if total != wantBuilds || len(d.Workers.Names) != digestBenchWorkers+0 || d.Builds.Scanned != 200 {
		b.Fatalf("collected %d builds, %d workers, %d scanned; want %d, %d, 200 (notes %v)",
			total, len(d.Workers.Names), d.Builds.Scanned, wantBuilds, digestBenchWorkers, d.Notes)
	}
	b.ReportMetric(float64(worst)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(total), "builds")
}

// BenchmarkDigestCollect collects a digest of 50,000 builds and 500
// workers. "simulator" runs against concoursesim (its server work and
// allocations count too), "simulator-latency-10ms" adds 10 ms to every
// request, and "synthetic" runs against an httptest server that generates
// recorded-shape pages on the fly, measuring the client alone.
// peak-MiB is the highest live-heap growth during one collection.
//
//	go test ./adapters/concourse/ -run '^$' -bench DigestCollect -benchtime 5x
func BenchmarkDigestCollect(b *testing.B) {
	b.Run("simulator", func(b *testing.B) {
		env := newDigestEnv(b, digestBigWorld())
		digestBenchCollect(b, env.source(b, DigestOptions{}), digestBenchBuilds)
	})
	b.Run("simulator-latency-10ms", func(b *testing.B) {
		env := newDigestEnv(b, digestBigWorld(), concoursesim.WithLatency(10*time.Millisecond))
		digestBenchCollect(b, env.source(b, DigestOptions{}), digestBenchBuilds)
	})
	b.Run("synthetic", func(b *testing.B) {
		srv := httptest.NewServer(digestSynthConcourse(digestBenchBuilds, digestBenchWorkers))
		b.Cleanup(srv.Close)
		c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL})
		if err != nil {
			b.Fatal(err)
		}
		now := time.Unix(digestSynthNow, 0)
		src, err := NewDigestSource(map[string]*Client{"infra-prd": c}, DigestOptions{Now: func() time.Time { return now }})
		if err != nil {
			b.Fatal(err)
		}
		digestBenchCollect(b, src, digestBenchBuilds)
	})
}

const digestSynthNow = 1_741_600_000

// digestSynthConcourse serves /api/v1/workers, /api/v1/pipelines, paginated
// /api/v1/builds (id n is n seconds old, one in 20 errored, one in 50
// pending) and event streams, generated per request.
func digestSynthConcourse(builds, workers int) http.Handler {
	mux := http.NewServeMux()
	ws := make([]Worker, workers)
	for i := range ws {
		ws[i] = Worker{Name: fmt.Sprintf("w-%d", i), State: WorkerRunning, ActiveContainers: 200 + i%50, Platform: "linux"}
	}
	ws[3].State = WorkerStalled
	workersJSON, _ := json.Marshal(ws)
	mux.HandleFunc("GET /api/v1/workers", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(workersJSON) })
	mux.HandleFunc("GET /api/v1/pipelines", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("[]")) })
	status := func(id int) string {
		switch {
		case id%50 == 0:
			return StatusPending
		case id%20 == 0:
			return StatusErrored
		case id%10 == 0:
			return StatusFailed
		}
		return StatusSucceeded
	}
	mux.HandleFunc("GET /api/v1/builds", func(w http.ResponseWriter, r *http.Request) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		to := builds
		if v := r.URL.Query().Get("to"); v != "" {
			to, _ = strconv.Atoi(v)
		}
		from := max(1, to-limit+1)
		if from > 1 {
			w.Header().Set("Link", fmt.Sprintf(`<http://ci.example.com/api/v1/builds?to=%d&limit=%d>; rel="next"`, from-1, limit))
		}
		enc := json.NewEncoder(w)
		_, _ = w.Write([]byte("["))
		for id := to; id >= from; id-- {
			if id != to {
				_, _ = w.Write([]byte(","))
			}
			b := Build{ID: id, TeamName: "main", Name: strconv.Itoa(id), Status: status(id), APIURL: "/api/v1/builds/" + strconv.Itoa(id),
				JobName: "build", PipelineID: id%digestBenchPipelines + 1, PipelineName: fmt.Sprintf("p%02d", id%digestBenchPipelines)}
			if b.Status != StatusPending {
				b.StartTime = digestSynthNow - int64(builds-id) - 60
				b.EndTime = b.StartTime + 30
			}
			_ = enc.Encode(b)
		}
		_, _ = w.Write([]byte("]"))
	})
	mux.HandleFunc("GET /api/v1/builds/{id}/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		id, _ := strconv.Atoi(r.PathValue("id"))
		msg := "task errored"
		if id%40 == 0 {
			msg = ImageFetchFailed
		}
		fmt.Fprintf(w, "id: 0\nevent: event\ndata: {\"data\":{\"status\":\"started\",\"time\":%d},\"event\":\"status\",\"version\":\"1.0\"}\n\n", digestSynthNow)
		fmt.Fprintf(w, "id: 1\nevent: event\ndata: {\"data\":{\"message\":%q,\"origin\":{\"id\":\"abc\"}},\"event\":\"error\",\"version\":\"4.1\"}\n\n", msg)
		fmt.Fprintf(w, "id: 2\nevent: end\ndata\n\n")
	})
	return mux
}
