package bot_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

// The PostgreSQL store at scale (README "Running highly available"):
//
//	go test -run '^$' -bench 'PG100k' -benchtime 200x ./bot/
//
// copies the bbolt benchmark store (100,000 finished runs and 10 waiting
// for a person, see bench_test.go) into a new database on the test server
// (GROUNDCREW_TEST_PG, default 127.0.0.1:5432), as `groundcrew store copy`
// does, and dropped after the run. The store is fenced and holds the
// lease, as a leader's is: every write checks the epoch.

var (
	pgBenchOnce sync.Once
	pgBench     struct {
		dsn   string
		drop  func()
		build time.Duration
		err   error
	}
)

func pgBenchSetup(b *testing.B) *pgstore.DB {
	b.Helper()
	benchSetup(b)
	server := pgtest.Server(b)
	pgBenchOnce.Do(func() {
		ctx := context.Background()
		rb := make([]byte, 6)
		_, _ = rand.Read(rb)
		name := "groundcrew_bench_" + hex.EncodeToString(rb)
		admin, err := pgx.Connect(ctx, server.String())
		if err != nil {
			pgBench.err = err
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "create database "+name); err != nil {
			pgBench.err = err
			return
		}
		pgBench.drop = func() {
			if c, err := pgx.Connect(ctx, server.String()); err == nil {
				_, _ = c.Exec(ctx, "drop database if exists "+name+" with (force)")
				c.Close(ctx)
			}
		}
		u := *server
		u.Path = "/" + name
		pgBench.dsn = u.String()
		start := time.Now()
		src, err := store.Open(bench.path, store.Options{})
		if err != nil {
			pgBench.err = err
			return
		}
		defer src.Close()
		dst, err := pgstore.Open(ctx, pgBench.dsn, pgstore.Options{})
		if err != nil {
			pgBench.err = err
			return
		}
		defer dst.Close()
		_, pgBench.err = dst.Load(ctx, func(l *pgstore.Loader) error {
			return src.Dump(store.Dump{Run: l.Run, Message: l.Message, Audit: l.Audit, Event: l.Event, Outbox: l.Outbox,
				Digest: l.Digest, KV: l.KV, Incident: l.Incident, IncidentKey: l.IncidentKey})
		})
		if pgBench.err == nil {
			_, pgBench.err = dst.Pool().Exec(ctx, "vacuum analyze")
		}
		pgBench.build = time.Since(start)
	})
	if pgBench.err != nil {
		b.Fatal(pgBench.err)
	}
	return pgBenchOpen(b, pgBench.dsn, pgstore.Options{Fenced: true})
}

// pgBenchOpen opens the store at dsn holding the lease, as a leader does.
func pgBenchOpen(b *testing.B, dsn string, opts pgstore.Options) *pgstore.DB {
	b.Helper()
	ctx := context.Background()
	db, err := pgstore.Open(ctx, dsn, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	holder := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := db.Pool().Exec(ctx, "update leader set holder = '', expires_at = now()"); err != nil {
		b.Fatal(err)
	}
	epoch, ok, _, err := db.Lease().Acquire(ctx, holder, time.Hour)
	if err != nil || !ok {
		b.Fatalf("lease: %v", err)
	}
	db.SetEpoch(epoch)
	size, _ := db.Size()
	b.Logf("PostgreSQL store: %d finished + 10 active runs, database %.1f MB; copied from bbolt in %s",
		bench.runs, float64(size)/1e6, pgBench.build.Round(time.Second))
	return db
}

// BenchmarkPG100k_Tick is one engine tick on the PostgreSQL store (goal ≤ 5 ms).
func BenchmarkPG100k_Tick(b *testing.B) {
	db := pgBenchSetup(b)
	eng, _, err := benchEngine(db, bottest.NewClock(bench.now))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	eng.Tick(ctx)
	_ = eng.WaitIdle(ctx)
	b.ResetTimer()
	for b.Loop() {
		eng.Tick(ctx)
	}
}

// BenchmarkPG100k_UpdateRun is one run update with a journal entry, the
// fence check included (goal ≤ 5 ms).
func BenchmarkPG100k_UpdateRun(b *testing.B) {
	db := pgBenchSetup(b)
	ctx := context.Background()
	active, err := db.ListRuns(ctx, runmodel.RunQuery{Active: true, Limit: 1})
	if err != nil || len(active) != 1 {
		b.Fatalf("active run: %v", err)
	}
	id := active[0].ID
	for b.Loop() {
		if _, err := db.UpdateRun(ctx, id, func(r *runmodel.Run, batch *runmodel.Batch) error {
			r.UpdatedAt = time.Now()
			batch.Note(runmodel.JournalEntry{Type: runmodel.JStepStarted, Step: "bench"})
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPG100k_CreateRun creates a run like the template (its journal,
// audit entries and message index in the same transaction).
func BenchmarkPG100k_CreateRun(b *testing.B) {
	db := pgBenchSetup(b)
	ctx := context.Background()
	tmpl, err := db.GetRun(ctx, "r-b000000001")
	if err != nil {
		b.Fatal(err)
	}
	journal, err := db.Journal(ctx, tmpl.ID)
	if err != nil {
		b.Fatal(err)
	}
	audit, err := db.AuditEntries(ctx, tmpl.ID)
	if err != nil {
		b.Fatal(err)
	}
	prefix := fmt.Sprintf("r-c%d-", time.Now().UnixNano())
	i := 0
	for b.Loop() {
		i++
		r := *tmpl
		r.ID = fmt.Sprintf("%s%d", prefix, i)
		batch := &runmodel.Batch{Journal: append([]runmodel.JournalEntry(nil), journal...), Audit: append([]runmodel.AuditEntry(nil), audit...)}
		for j, st := range r.Steps {
			batch.Messages = append(batch.Messages, runmodel.MessageIndex{Ref: chatmodel.MessageRef{Platform: "test", Channel: "C1", ID: fmt.Sprintf("%s-%d", r.ID, j)}, RunID: r.ID, Step: st.ID, Role: "step"})
		}
		if err := db.CreateRun(ctx, &r, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPG100k_Active lists the active runs (Tick, resume, /runbook status).
func BenchmarkPG100k_Active(b *testing.B) {
	db := pgBenchSetup(b)
	for b.Loop() {
		runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Active: true})
		if err != nil || len(runs) < 10 {
			b.Fatalf("%d active runs, %v", len(runs), err)
		}
	}
}

// BenchmarkPG100k_RunsList is `groundcrew runs list`: the 50 most recent runs.
func BenchmarkPG100k_RunsList(b *testing.B) {
	db := pgBenchSetup(b)
	for b.Loop() {
		runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Limit: 50})
		if err != nil || len(runs) != 50 {
			b.Fatalf("%d runs, %v", len(runs), err)
		}
	}
}

// BenchmarkPG100k_FilteredRuns is the finished runs of the pages' index
// filtered by runbook, target and state (a page of 50, as / asks): through
// the indexes by runbook, target and state, a filter matching few runs or
// none costs what one matching most does.
func BenchmarkPG100k_FilteredRuns(b *testing.B) {
	finished := []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled}
	for _, c := range []struct {
		name string
		q    runmodel.RunQuery
		want int
	}{
		{"matching", runmodel.RunQuery{Runbook: "prune", States: []runmodel.RunState{runmodel.RunSucceeded}}, 51},
		{"few", runmodel.RunQuery{Runbook: "worker-stalled", States: finished}, 51},
		{"two-target-and-state", runmodel.RunQuery{Target: "ocb-client", States: []runmodel.RunState{runmodel.RunFailed}}, 2},
		{"nothing", runmodel.RunQuery{Runbook: "nope", States: finished}, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			db := pgBenchSetup(b)
			q := c.q
			q.Limit = 51
			for b.Loop() {
				runs, err := db.ListRuns(context.Background(), q)
				if err != nil || len(runs) != c.want {
					b.Fatalf("%d runs, %v", len(runs), err)
				}
			}
		})
	}
}

// BenchmarkPG100k_ThreadRuns is the lookup of an incident thread's runs.
func BenchmarkPG100k_ThreadRuns(b *testing.B) {
	db := pgBenchSetup(b)
	for b.Loop() {
		runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Thread: "b5-root"})
		if err != nil || len(runs) != 1 {
			b.Fatalf("%d runs, %v", len(runs), err)
		}
	}
}

// BenchmarkPG100k_HousekeepFirstPass is BenchmarkStore100k_HousekeepFirstPass
// on the PostgreSQL store (a copy of the benchmark database): the first pass
// after `retention: 30d`, in transactions of 1,000 runs, while an active run
// is updated every 10 ms. A vote locks other rows than the pass deletes, so
// it waits for no batch; idle-vote-… are the same writes before the pass.
//
//	go test -run '^$' -bench PG100k_HousekeepFirstPass -benchtime 1x ./bot/
func BenchmarkPG100k_HousekeepFirstPass(b *testing.B) {
	pgBenchSetup(b).Close() // built; and no session left on it, to copy it
	ctx := context.Background()
	src, err := url.Parse(pgBench.dsn)
	if err != nil {
		b.Fatal(err)
	}
	template := strings.TrimPrefix(src.Path, "/")
	admin, err := pgx.Connect(ctx, pgtest.Server(b).String())
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close(ctx)
	for range b.N {
		b.StopTimer()
		name := template + "_hk"
		if _, err := admin.Exec(ctx, "drop database if exists "+name+" with (force)"); err != nil {
			b.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "create database "+name+" template "+template); err != nil {
			b.Fatal(err)
		}
		u := *src
		u.Path = "/" + name
		db := pgBenchOpen(b, u.String(), pgstore.Options{Fenced: true, Retention: benchRetention()})
		reportWaits(b, "idle-", votesFor(b, db, 10*time.Second))
		stop := make(chan struct{})
		waits := votes(b, db, stop)
		start := time.Now()
		b.StartTimer()
		res, err := db.Housekeep(ctx, bench.now)
		b.StopTimer()
		took := time.Since(start)
		close(stop)
		if err != nil {
			b.Fatal(err)
		}
		reportWaits(b, "", <-waits)
		b.ReportMetric(float64(res.Runs), "runs-deleted")
		b.ReportMetric(took.Seconds()/float64(max(1, (res.Runs+999)/1000)), "s/batch")
		db.Close()
		if _, err := admin.Exec(ctx, "drop database "+name+" with (force)"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
