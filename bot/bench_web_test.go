package bot_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/web"
)

// The web pages on the 100,000-run store (see benchSetup), server time
// (the handler, from the request to the last byte written; no network):
// a run's page (goal < 50 ms) and the index (goal < 100 ms).
//
//	GROUNDCREW_BENCH_DIR=/tmp/gcbench go test -run '^$' -bench Store100k_Web -benchtime 200x ./bot/

func benchPages(b *testing.B) (*web.Server, *store.DB, *web.Links, time.Time) {
	benchSetup(b)
	db, err := store.Open(bench.path, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return bench.now }
	signer, _ := web.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	links := web.NewLinks("https://gc.example.com", signer, 7*24*time.Hour, now)
	srv, err := web.New(web.Options{Runs: db, Journals: db, Incidents: db, Digests: db, Links: links, Now: now, // no hub: every request reads the store (no shared snapshot)
		Targets: []web.Target{{Name: "infra-prd"}},
		Words: web.Words{Markdown: bot.RunMarkdown, JournalLine: bot.JournalLine, Changes: func(r *runmodel.Run, j []runmodel.JournalEntry) []web.Change {
			var out []web.Change
			for _, c := range bot.RunChanges(r, j) {
				out = append(out, web.Change{Step: c.Step, Text: c.Text})
			}
			return out
		}}})
	if err != nil {
		b.Fatal(err)
	}
	return srv, db, links, bench.now
}

func benchGet(b *testing.B, srv http.Handler, link string) {
	b.Helper()
	req := httptest.NewRequest(http.MethodGet, strings.TrimPrefix(link, "https://gc.example.com"), nil)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", link, w.Code, w.Body.String()[:min(300, w.Body.Len())])
	}
}

// benchPage times the page at link, in ms a page.
func benchPage(b *testing.B, srv http.Handler, link string) {
	b.Helper()
	start := time.Now()
	for b.Loop() {
		benchGet(b, srv, link)
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/page")
}

// BenchmarkStore100k_WebRunPage: the page of a finished run (steps,
// gate with its votes, changes, timeline, audit entries and head).
func BenchmarkStore100k_WebRunPage(b *testing.B) {
	srv, db, links, _ := benchPages(b)
	rs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Limit: 20})
	if err != nil || len(rs) == 0 {
		b.Fatal(err)
	}
	var r *runmodel.Run
	for _, x := range rs {
		if x.State.Terminal() {
			r = x
			break
		}
	}
	link := links.Run(r.ID, r.CreatedAt)
	benchPage(b, srv, link)
}

// BenchmarkStore100k_WebActiveRunPage: the page of a run at an open gate
// (the policy, expiry and plan of the gate).
func BenchmarkStore100k_WebActiveRunPage(b *testing.B) {
	srv, db, links, _ := benchPages(b)
	rs, err := db.ListRuns(context.Background(), runmodel.RunQuery{Active: true})
	if err != nil {
		b.Fatal(err)
	}
	var r *runmodel.Run
	for _, x := range rs {
		if x.State == runmodel.RunAwaitingApproval {
			r = x
		}
	}
	if r == nil {
		b.Fatal("no run at a gate")
	}
	link := links.Run(r.ID, r.CreatedAt)
	benchPage(b, srv, link)
}

// BenchmarkStore100k_WebIndex: / — open incidents, the 10 active runs,
// the 50 most recent finished runs.
func BenchmarkStore100k_WebIndex(b *testing.B) {
	srv, _, links, _ := benchPages(b)
	link := links.Site()
	benchPage(b, srv, link)
}

// BenchmarkStore100k_WebIndexFiltered: / filtered by runbook, target,
// state and since. The store's indexes of runs by runbook, target and
// state give the runs that match without reading the others: a filter
// that matches few runs (100 of 100,000: the runbook worker-stalled; 2:
// target ocb-client and failed) or none costs about what one that
// matches most does.
func BenchmarkStore100k_WebIndexFiltered(b *testing.B) {
	for _, c := range []struct{ name, q string }{
		{"matching", "&runbook=prune&state=succeeded&since=7d"},
		{"few-7d", "&runbook=worker-stalled&since=7d"},
		{"few", "&runbook=worker-stalled"},
		{"two-target-and-state", "&target=ocb-client&state=failed"},
		{"nothing", "&runbook=nope"},
		{"nothing-7d", "&runbook=nope&since=7d"},
	} {
		b.Run(c.name, func(b *testing.B) {
			srv, _, links, _ := benchPages(b)
			link := links.Site() + c.q
			benchPage(b, srv, link)
		})
	}
}
