package bot_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// The store at scale (README "Limits and robustness"):
//
//	go test -run '^$' -bench 'Store100k' -benchtime 200x ./bot/
//
// builds, once, a store with GROUNDCREW_BENCH_RUNS (default 100,000)
// finished runs — clones of a real prune run with its journal, audit
// entries and message index; one in 1,000 of runbook worker-stalled, one
// in 500 on target ocb-client, one in 97 failed — plus 10 runs waiting for
// a person (5 at a manual step, 5 at an approval gate). With GROUNDCREW_BENCH_DIR set, the
// store is built there once and kept for the next runs (a minute saved at
// 100,000 runs); the benchmarks that delete from it work on a copy.

type benchStore struct {
	dir, path  string
	runs       int
	size, used int64
	now        time.Time // the engines' clock: just after the store was filled
	build      time.Duration
	err        error
}

var (
	benchOnce sync.Once
	bench     benchStore
)

func benchEngine(db runmodel.Store, clock *bottest.Clock) (*bot.Engine, *bottest.Chat, error) {
	eng, chat, _, err := benchEngineWorld(db, clock)
	return eng, chat, err
}

func benchEngineWorld(db runmodel.Store, clock *bottest.Clock) (*bot.Engine, *bottest.Chat, *bottest.World, error) {
	world := stalledWorld()
	reg, err := opmodel.NewRegistry(core.Provider{}, world)
	if err != nil {
		return nil, nil, nil, err
	}
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{"prune.yaml": {Data: []byte(pruneRunbook)}}})
	if err != nil {
		return nil, nil, nil, err
	}
	chat := &bottest.Chat{}
	eng, err := bot.New(bot.Options{Store: db, Chat: chat, Capabilities: bot.CapabilitiesOf(db, chat), Ops: reg, Library: lib, Now: clock.Now, Platform: "test",
		Targets: map[string]bot.TargetInfo{"infra-prd": {}}})
	return eng, chat, world, err
}

func buildBenchStore() {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("GROUNDCREW_BENCH_RUNS")); err == nil && v > 0 {
		n = v
	}
	keep := os.Getenv("GROUNDCREW_BENCH_DIR")
	if keep != "" {
		keep = filepath.Join(keep, strconv.Itoa(n)+benchFill)
		bench = benchStore{path: filepath.Join(keep, "gc.db"), runs: n}
		if raw, err := os.ReadFile(filepath.Join(keep, "now")); err == nil {
			if bench.now, err = time.Parse(time.RFC3339Nano, string(raw)); err == nil {
				if db, err := store.Open(bench.path, store.Options{}); err == nil {
					bench.size, bench.used, _ = db.Usage()
					db.Close()
					return
				}
			}
		}
		_ = os.RemoveAll(keep)
		if bench.err = os.MkdirAll(keep, 0o700); bench.err != nil {
			return
		}
	} else {
		dir, err := os.MkdirTemp("", "groundcrew-bench-")
		if err != nil {
			bench.err = err
			return
		}
		bench = benchStore{dir: dir, path: filepath.Join(dir, "gc.db"), runs: n}
	}
	start := time.Now()
	bench.err = fillBenchStore(bench.path, n, &bench.now)
	bench.build = time.Since(start)
	if bench.err == nil && keep != "" {
		bench.err = os.WriteFile(filepath.Join(keep, "now"), []byte(bench.now.Format(time.RFC3339Nano)), 0o600)
	}
	if db, err := store.Open(bench.path, store.Options{}); err == nil {
		bench.size, bench.used, _ = db.Usage()
		db.Close()
	}
}

// benchFill names what fillBenchStore puts in a store (a kept store of
// another fill is not reused).
const benchFill = "-mixed"

func fillBenchStore(path string, n int, now *time.Time) error {
	ctx := context.Background()
	db, err := store.Open(path, store.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	clock := bottest.NewClock(time.Now().Add(-24 * time.Hour))
	eng, chat, world, err := benchEngineWorld(db, clock)
	if err != nil {
		return err
	}
	do := func(u chatmodel.User, text string) error {
		if err := eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: u, Conversation: chan1, Text: text}); err != nil {
			return err
		}
		return eng.WaitIdle(ctx)
	}
	// One real run, start to finish, is the template.
	if err := do(alice, "run prune target=infra-prd worker=w-0"); err != nil {
		return err
	}
	runs, err := db.ListRuns(ctx, runmodel.RunQuery{})
	if err != nil || len(runs) != 1 {
		return fmt.Errorf("template run: %v (%d runs)", err, len(runs))
	}
	id := runs[0].ID
	if err := do(bob, "done "+id); err != nil {
		return err
	}
	if err := do(carol, "approve "+id); err != nil {
		return err
	}
	tmpl, err := db.GetRun(ctx, id)
	if err != nil || tmpl.State != runmodel.RunSucceeded {
		return fmt.Errorf("template run did not finish: %v\n%s", err, chat.Transcript())
	}
	journal, err := db.Journal(ctx, id)
	if err != nil {
		return err
	}
	audit, err := db.AuditEntries(ctx, id)
	if err != nil {
		return err
	}
	for i := 1; i < n; i++ {
		r := *tmpl
		r.ID = fmt.Sprintf("r-b%09d", i)
		r.CreatedAt = tmpl.CreatedAt.Add(-time.Duration(i) * time.Minute)
		// It finished as long after it started as the template did: the
		// runs finished 0–69 days ago (one a minute), as retention sees them.
		r.UpdatedAt = r.CreatedAt.Add(tmpl.UpdatedAt.Sub(tmpl.CreatedAt))
		r.FinishedAt = r.CreatedAt.Add(tmpl.FinishedAt.Sub(tmpl.CreatedAt))
		r.Root = chatmodel.MessageRef{Platform: "test", Channel: "C1", ID: fmt.Sprintf("b%d-root", i)}
		// a few runs of another runbook, on another target, failed: what
		// the filters of the pages' index find among the others
		if i%1000 == 7 {
			r.Runbook = "worker-stalled"
		}
		if i%500 == 3 {
			r.Target = "ocb-client"
		}
		if i%97 == 0 {
			r.State = runmodel.RunFailed
		}
		b := &runmodel.Batch{Journal: append([]runmodel.JournalEntry(nil), journal...)}
		for _, a := range audit {
			a.RunID = r.ID
			b.Audit = append(b.Audit, a)
		}
		for j, st := range r.Steps {
			b.Messages = append(b.Messages, runmodel.MessageIndex{Ref: chatmodel.MessageRef{Platform: "test", Channel: "C1", ID: fmt.Sprintf("b%d-%d", i, j)}, RunID: r.ID, Step: st.ID, Role: "step"})
		}
		if err := db.CreateRun(ctx, &r, b); err != nil {
			return err
		}
	}
	// Ten runs wait for a person: five at a manual step, five at a gate.
	world.Set("w-0", "stalled")
	for i := range 10 {
		clock.Advance(time.Second) // the newest active run is the one just started
		if err := do(alice, "run prune target=infra-prd worker=w-0"); err != nil {
			return err
		}
		if i%2 == 1 {
			active, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true, Limit: 1})
			if err != nil || len(active) != 1 {
				return fmt.Errorf("active run: %v", err)
			}
			if err := do(bob, "done "+active[0].ID); err != nil {
				return err
			}
		}
	}
	active, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true})
	if err != nil {
		return err
	}
	gates := 0
	for _, r := range active {
		if r.State == runmodel.RunAwaitingApproval {
			gates++
		}
	}
	*now = clock.Now().Add(time.Second) // gates stay open (they expire after 30 min)
	if len(active) != 10 || gates != 5 {
		return fmt.Errorf("%d active runs, %d at a gate:\n%s", len(active), gates, chat.Transcript())
	}
	return nil
}

func benchSetup(b *testing.B) {
	benchOnce.Do(buildBenchStore)
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	b.Logf("store: %d finished + 10 active runs; file %.1f MB, %.1f MB in use (%.1f KB per run); built in %s",
		bench.runs, float64(bench.size)/1e6, float64(bench.used)/1e6, float64(bench.used)/float64(bench.runs)/1e3, bench.build.Round(time.Second))
}

// BenchmarkStore100k_Tick is one engine tick: timers of the active runs
// and the outbox (goal ≤ 1 ms).
func BenchmarkStore100k_Tick(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	eng, _, err := benchEngine(db, bottest.NewClock(bench.now))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	eng.Tick(ctx) // the first tick also starts housekeeping
	_ = eng.WaitIdle(ctx)
	b.ReportMetric(float64(bench.used)/1e6, "MB-in-use")
	b.ResetTimer()
	for b.Loop() {
		eng.Tick(ctx)
	}
}

// BenchmarkStore100k_ListAll is what every tick cost before the index of
// active runs: decoding every stored run.
func BenchmarkStore100k_ListAll(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for b.Loop() {
		if _, err := db.ListRuns(context.Background(), runmodel.RunQuery{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore100k_Restart opens the store, builds an engine and resumes
// every active run until the engine is idle (goal < 1 s).
func BenchmarkStore100k_Restart(b *testing.B) {
	benchSetup(b)
	ctx := context.Background()
	restart := func() error {
		db, err := store.Open(bench.path, store.Options{})
		if err != nil {
			return err
		}
		defer db.Close()
		eng, _, err := benchEngine(db, bottest.NewClock(bench.now))
		if err != nil {
			return err
		}
		if err := eng.Resume(ctx); err != nil {
			return err
		}
		if err := eng.WaitIdle(ctx); err != nil {
			return err
		}
		active, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true})
		if err != nil || len(active) != 10 {
			return fmt.Errorf("%d active runs resumed (%v)", len(active), err)
		}
		return nil
	}
	for b.Loop() {
		if err := restart(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStore100k_Status is `/runbook status` (the active runs).
func BenchmarkStore100k_Status(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	eng, _, err := benchEngine(db, bottest.NewClock(bench.now))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if err := eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: alice, Conversation: chan1, Text: "status"}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMain removes the benchmark store (1.5 GB at 100,000 runs) after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if pgBench.drop != nil {
		pgBench.drop() // the PostgreSQL copy (bench_pg_test.go)
	}
	if bench.dir != "" {
		_ = os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// BenchmarkStore100k_ThreadRuns is the lookup of an incident thread's runs
// (`/runbook summary` in a thread), through the thread index.
func BenchmarkStore100k_ThreadRuns(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for b.Loop() {
		runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Thread: "b5-root"})
		if err != nil || len(runs) != 1 {
			b.Fatalf("%d runs, %v", len(runs), err)
		}
	}
}

// benchRetention is 30 days for the 100,000 runs (one a minute, 69 days),
// the same share of a smaller store.
func benchRetention() time.Duration {
	return time.Duration(float64(bench.runs)*0.432) * time.Minute
}

// copyBenchStore copies the benchmark store for a benchmark that changes
// it, and opens the copy with retention.
func copyBenchStore(b *testing.B, retention time.Duration) *store.DB {
	b.Helper()
	dst := filepath.Join(b.TempDir(), "gc.db")
	copyFile(b, bench.path, dst)
	db, err := store.Open(dst, store.Options{Retention: retention})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	return db
}

// copyFile copies src to dst and syncs the copy (so that a store opened
// on it does not first wait for the disk to take the whole file).
func copyFile(b *testing.B, src, dst string) {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := errors.Join(out.Sync(), out.Close()); err != nil {
		b.Fatal(err)
	}
}

// votes updates an active run every 10 ms (far more often than people
// vote), until stop is closed, and returns how long each write waited.
func votes(b *testing.B, db runmodel.Store, stop <-chan struct{}) <-chan []time.Duration {
	b.Helper()
	ctx := context.Background()
	active, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true, Limit: 1})
	if err != nil || len(active) != 1 {
		b.Fatalf("no active run: %v", err)
	}
	id := active[0].ID
	out := make(chan []time.Duration, 1)
	go func() {
		var waits []time.Duration
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- waits
				return
			case <-t.C:
			}
			start := time.Now()
			if _, err := db.UpdateRun(ctx, id, func(r *runmodel.Run, _ *runmodel.Batch) error {
				r.UpdatedAt = r.UpdatedAt.Add(time.Nanosecond)
				return nil
			}); err != nil {
				b.Error(err)
			}
			waits = append(waits, time.Since(start))
		}
	}()
	return out
}

// votesFor is votes for d, with nothing else going on.
func votesFor(b *testing.B, db runmodel.Store, d time.Duration) []time.Duration {
	stop := make(chan struct{})
	waits := votes(b, db, stop)
	time.Sleep(d)
	close(stop)
	return <-waits
}

// reportWaits reports the 99th percentile and the longest of waits, as
// <prefix>vote-p99-ms and <prefix>vote-max-ms.
func reportWaits(b *testing.B, prefix string, waits []time.Duration) {
	if len(waits) == 0 {
		return
	}
	slices.Sort(waits)
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1e3, prefix+"vote-p99-ms")
	b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1e3, prefix+"vote-max-ms")
}

// BenchmarkStore100k_HousekeepFirstPass is the first housekeeping pass
// after `retention: 30d` is set on the store (runs finished 0–69 days ago:
// 57 % of them are deleted), while an active run is updated every 10 ms
// (votes): vote-p99-ms and vote-max-ms are how long those writes waited.
// The same writes on the same store with nothing else going on, for 10 s
// before the pass (idle-vote-…) and after it (after-vote-…), tell what the
// pass added from what the machine's disk and scheduler cost anyway. Then
// a restart of the store as the pass left it (restart-ms), a start after a
// crash right after the pass (crash-restart-ms: a copy of the file taken
// while the store is open), and store compact. Goal: batches of a few ms,
// no vote waiting longer.
//
//	go test -run '^$' -bench Store100k_HousekeepFirstPass -benchtime 1x ./bot/
func BenchmarkStore100k_HousekeepFirstPass(b *testing.B) {
	benchSetup(b)
	const idle = 10 * time.Second
	for range b.N {
		b.StopTimer()
		db := copyBenchStore(b, benchRetention())
		reportWaits(b, "idle-", votesFor(b, db, idle))
		stop := make(chan struct{})
		waits := votes(b, db, stop)
		b.StartTimer()
		res, err := db.Housekeep(context.Background(), bench.now)
		b.StopTimer()
		close(stop)
		if err != nil {
			b.Fatal(err)
		}
		reportWaits(b, "", <-waits)
		reportWaits(b, "after-", votesFor(b, db, idle))
		b.ReportMetric(float64(res.Runs), "runs-deleted")
		b.ReportMetric(float64(res.Batches), "batches")
		b.ReportMetric(float64(res.WriterTime.Microseconds())/1e3, "writer-ms")
		b.ReportMetric(float64(res.LongestBatch.Microseconds())/1e3, "longest-batch-ms")

		// A crash now: the file as the last commit left it.
		path := db.Path()
		crashed := filepath.Join(filepath.Dir(path), "crashed.db")
		copyFile(b, path, crashed)
		start := time.Now()
		cdb, err := store.Open(crashed, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1e3, "crash-restart-ms")
		if err := errors.Join(cdb.Close(), os.Remove(crashed)); err != nil {
			b.Fatal(err)
		}
		// A restart.
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
		start = time.Now()
		rdb, err := store.Open(path, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1e3, "restart-ms")
		if err := rdb.Close(); err != nil {
			b.Fatal(err)
		}
		// Then the disk space back: store compact on the stopped store.
		cr, err := store.Compact(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cr.Before)/1e6, "MB-before-compact")
		b.ReportMetric(float64(cr.After)/1e6, "MB-after-compact")
		b.ReportMetric(cr.Took.Seconds(), "compact-s")
		b.StartTimer()
	}
}

// BenchmarkStore100k_HousekeepHourly is a day of hourly passes in the
// steady state: the retention is the store's whole span (69 days at
// 100,000 runs), so each pass, an hour later than the last, deletes the
// runs that finished in that hour (60). Goal: ≤ 50 ms of writer time per
// pass.
//
//	go test -run '^$' -bench Store100k_HousekeepHourly -benchtime 1x ./bot/
func BenchmarkStore100k_HousekeepHourly(b *testing.B) {
	benchSetup(b)
	db := copyBenchStore(b, time.Duration(bench.runs)*time.Minute)
	ctx := context.Background()
	now := bench.now
	if _, err := db.Housekeep(ctx, now); err != nil {
		b.Fatal(err)
	}
	var writer, longest time.Duration
	runs, passes := 0, 0
	b.ResetTimer()
	for range b.N {
		for range 24 {
			now = now.Add(time.Hour)
			res, err := db.Housekeep(ctx, now)
			if err != nil {
				b.Fatal(err)
			}
			writer, longest, runs, passes = writer+res.WriterTime, max(longest, res.LongestBatch), runs+res.Runs, passes+1
		}
	}
	b.ReportMetric(float64(writer.Microseconds())/1e3/float64(passes), "writer-ms/pass")
	b.ReportMetric(float64(longest.Microseconds())/1e3, "longest-batch-ms")
	b.ReportMetric(float64(runs)/float64(passes), "runs-deleted/pass")
}

// BenchmarkStore100k_ListRecent is `groundcrew runs list`: the 50 most
// recent runs.
func BenchmarkStore100k_ListRecent(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for b.Loop() {
		rs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Limit: 51})
		if err != nil || len(rs) != 51 {
			b.Fatalf("%d runs, %v", len(rs), err)
		}
	}
}

// BenchmarkStore100k_ListAllPaged is what `runs list --all` reads: every
// run, 200 at a time, each page its own read transaction.
func BenchmarkStore100k_ListAllPaged(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	for b.Loop() {
		n := 0
		q := runmodel.RunQuery{Limit: 200}
		for {
			rs, err := db.ListRuns(ctx, q)
			if err != nil {
				b.Fatal(err)
			}
			n += len(rs)
			if len(rs) < q.Limit {
				break
			}
			last := rs[len(rs)-1]
			q.After = runmodel.RunCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		if n != bench.runs+10 {
			b.Fatalf("%d runs listed", n)
		}
	}
}

// BenchmarkStore100k_RunAudit is the audit entries of one run (`runs
// show`), through the index by run.
func BenchmarkStore100k_RunAudit(b *testing.B) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for b.Loop() {
		es, err := db.AuditEntries(context.Background(), fmt.Sprintf("r-b%09d", bench.runs/2))
		if err != nil || len(es) == 0 {
			b.Fatalf("%d entries, %v", len(es), err)
		}
	}
}
