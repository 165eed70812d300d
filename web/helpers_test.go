package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/web"
)

var t0 = time.Date(2026, 11, 29, 3, 12, 0, 0, time.UTC)

const testKey = "0123456789abcdef0123456789abcdef"

// env is a web server on a real bbolt store.
type env struct {
	db    *store.DB
	srv   *web.Server
	links *web.Links
	hub   *web.Hub
	now   time.Time
	// later, when set, is how far the clock moved on while the server runs
	// (a test sets it with advance, the server reads it with clock).
	later atomic.Int64
}

func (e *env) clock() time.Time { return e.now.Add(time.Duration(e.later.Load())) }

// advance moves the server's clock on by d.
func (e *env) advance(d time.Duration) { e.later.Add(int64(d)) }

func newEnv(t *testing.T, mod ...func(*web.Options)) *env {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "gc.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	e := &env{db: db, now: t0.Add(10 * time.Minute), hub: web.NewHub()}
	signer, err := web.NewSigner([]byte(testKey))
	require.NoError(t, err)
	e.links = web.NewLinks("https://gc.example.com", signer, 7*24*time.Hour, e.clock)
	o := web.Options{Runs: db, Journals: db, Incidents: db, Digests: db, Links: e.links, Changes: e.hub, Now: e.clock,
		Proxy:   web.Proxy{Header: "X-Forwarded-User", From: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}},
		Targets: []web.Target{{Name: "infra-prd", Digests: []web.DigestRef{{Key: "digest-key", Label: "#ci-ops daily"}}}},
		Words: web.Words{
			Markdown: func(r *runmodel.Run, j []runmodel.JournalEntry) string {
				return "# " + r.Runbook + " on " + r.Target + " — run " + r.ID + "\n"
			},
			Changes: func(r *runmodel.Run, j []runmodel.JournalEntry) []web.Change {
				var out []web.Change
				for _, e := range j {
					if e.Type == runmodel.JOutcome {
						out = append(out, web.Change{Step: e.Step, Text: e.Message})
					}
				}
				return out
			},
			JournalLine: func(e runmodel.JournalEntry, r *runmodel.Run) string {
				return strings.ReplaceAll(string(e.Type), "_", " ") + ": " + e.Message
			},
		},
		Redact: func(s string) string { return strings.ReplaceAll(s, "hunter2-secret", "[redacted]") },
	}
	for _, m := range mod {
		m(&o)
	}
	e.srv, err = web.New(o)
	require.NoError(t, err)
	return e
}

// get requests path (a full link or a path) as remote from addr.
func (e *env) get(t *testing.T, link, addr string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	path := strings.TrimPrefix(link, "https://gc.example.com")
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = addr
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, w.Result().Header, string(b)
}

const outside = "203.0.113.9:5555"

// seedRun stores a worker-stalled run: a query, a manual step done by
// bob, a prune gate with alice refused and carol approving (reaction),
// the prune done; state is the run's.
func (e *env) seedRun(t *testing.T, id string, state runmodel.RunState) *runmodel.Run {
	t.Helper()
	return e.seedRunAt(t, id, state, t0)
}

// seedRunAt is seedRun for a run created at start.
func (e *env) seedRunAt(t *testing.T, id string, state runmodel.RunState, start time.Time) *runmodel.Run {
	t.Helper()
	return e.seedRunWith(t, id, state, start, "")
}

// seedRunIn is seedRun for a run started in thread.
func (e *env) seedRunIn(t *testing.T, id string, state runmodel.RunState, thread string) *runmodel.Run {
	t.Helper()
	return e.seedRunWith(t, id, state, t0, thread)
}

func (e *env) seedRunWith(t *testing.T, id string, state runmodel.RunState, start time.Time, thread string, mod ...func(*runmodel.Run)) *runmodel.Run {
	t.Helper()
	t0 := start
	ctx := context.Background()
	alice := chatmodel.User{ID: "alice", Name: "alice"}
	plan := &opmodel.Plan{Op: "concourse.prune_worker", Target: "infra-prd", Summary: "prune 1 worker",
		Items: []opmodel.PlanItem{{Kind: "worker", ID: "worker-0", Detail: "stalled, 236 containers"}}}
	hash := plan.Hash()
	r := &runmodel.Run{ID: id, Runbook: "worker-stalled", Title: "Worker 0 stalled", Target: "infra-prd",
		Params: map[string]string{"worker": "0"}, Requester: alice, State: state,
		Conversation: chatmodel.Conversation{Platform: "console", Channel: "ops", Thread: thread},
		CreatedAt:    t0, UpdatedAt: t0.Add(5 * time.Minute),
		Steps: []runmodel.StepState{
			{ID: "workers", Kind: runbookmodel.KindQuery, Title: "Workers", Status: runmodel.StepSucceeded, Summary: "3 running, 1 stalled",
				StartedAt: t0, FinishedAt: t0.Add(time.Second)},
			{ID: "services", Kind: runbookmodel.KindManual, Title: "Check the services", Status: runmodel.StepSucceeded,
				Text: "ssh worker-0\nsudo systemctl status concourse-worker", By: &chatmodel.User{ID: "bob", Name: "bob"}},
			{ID: "prune", Kind: runbookmodel.KindAction, Title: "Prune the stalled worker", Op: "concourse.prune_worker",
				Status: runmodel.StepSucceeded, Plan: plan, PlanHash: hash, Summary: "pruned worker-0",
				ApprovedBy: []chatmodel.User{{ID: "carol", Name: "carol"}}},
		},
	}
	if !state.Terminal() {
		r.Steps[2].Status, r.Steps[2].Summary = runmodel.StepGated, ""
		r.Cursor = 2
		r.Gate = &runmodel.Gate{ID: id + "/prune/1", StepID: "prune", Plan: plan, PlanHash: hash, RequestedAt: t0.Add(2 * time.Minute),
			ExpiresAt: t0.Add(32 * time.Minute), Policy: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 1}}
	} else {
		r.FinishedAt = t0.Add(5 * time.Minute)
	}
	for _, m := range mod {
		m(r)
	}
	var b runmodel.Batch
	b.Note(runmodel.JournalEntry{Time: t0, Type: runmodel.JRunStarted, Actor: "alice"})
	b.Note(runmodel.JournalEntry{Time: t0.Add(2 * time.Minute), Step: "prune", Type: runmodel.JGateOpened, PlanHash: hash, Message: "prune 1 worker"})
	b.AuditLog(runmodel.AuditEntry{Time: t0, Actor: "alice", Action: runmodel.ActionRunStarted, Target: "infra-prd"})
	b.AuditLog(runmodel.AuditEntry{Time: t0.Add(2 * time.Minute), Actor: "groundcrew", Action: runmodel.ActionApprovalRequested, Step: "prune", PlanHash: hash, Detail: "prune 1 worker"})
	b.AuditLog(runmodel.AuditEntry{Time: t0.Add(3 * time.Minute), Actor: "alice", Action: runmodel.ActionVoteRefused, Step: "prune", PlanHash: hash, Via: "reaction", Detail: "approve: you started this run"})
	if state.Terminal() {
		b.AuditLog(runmodel.AuditEntry{Time: t0.Add(4 * time.Minute), Actor: "carol", Action: runmodel.ActionApprove, Step: "prune", PlanHash: hash, Via: "reaction"})
		b.AuditLog(runmodel.AuditEntry{Time: t0.Add(4 * time.Minute), Actor: "groundcrew", Action: runmodel.ActionApprovalGranted, Step: "prune", PlanHash: hash})
		b.Note(runmodel.JournalEntry{Time: t0.Add(4 * time.Minute), Step: "prune", Type: runmodel.JOutcome, Outcome: runmodel.CallSucceeded, Message: "pruned worker-0 (approved by @carol)"})
	}
	require.NoError(t, e.db.CreateRun(ctx, r, &b))
	return r
}

func (e *env) seedIncident(t *testing.T, id, thread string) *incident.Incident {
	t.Helper()
	in := &incident.Incident{ID: id, Key: "alertmanager:disk:" + id, Title: "FileSystemSpaceFillingUp · instance=worker-0:9100",
		Target: "infra-prd", Channel: "ops", Platform: "console", State: incident.StateOpen,
		Source:   incident.Source{Kind: incident.SourceAlert, Name: "disk-full"},
		Evidence: []string{"`mountpoint=/opt/concourse/worker` — 6% space left"}, Runbook: "worker-disk-full",
		Params: map[string]string{"worker": "0"}, Notifications: 2, OpenedAt: t0, UpdatedAt: t0.Add(time.Minute),
		Root:     chatmodel.MessageRef{Platform: "console", Channel: "ops", ID: thread},
		Timeline: []incident.Entry{{Time: t0, Kind: "opened", Text: "FileSystemSpaceFillingUp fires"}}}
	_, err := e.db.UpsertIncident(context.Background(), in.Key, func(*incident.Incident) (*incident.Incident, error) { return in, nil })
	require.NoError(t, err)
	return in
}
