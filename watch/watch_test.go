package watch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/watch"
)

type source struct {
	mu    sync.Mutex
	data  digest.Data
	err   error
	calls int
	teams []string // of the last collection
}

func (s *source) Collect(_ context.Context, target string, teams []string, _ time.Duration, _ *digest.Data) (digest.Data, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.teams = teams
	d := s.data
	d.Target = target
	return d, s.err
}

type sink struct {
	signals []incident.Signal
	open    []*incident.Incident
}

func (s *sink) Signal(_ context.Context, sig incident.Signal) (*incident.Incident, error) {
	s.signals = append(s.signals, sig)
	return &incident.Incident{}, nil
}

func (s *sink) Open(context.Context) ([]*incident.Incident, error) { return s.open, nil }

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

func stalled(names ...string) digest.Data {
	d := digest.Data{Builds: digest.BuildFigures{ByStatus: map[string]int{}}}
	for _, n := range names {
		d.Workers.Stalled = append(d.Workers.Stalled, digest.StalledWorker{Name: n, Containers: 236})
	}
	return d
}

func newWatcher(t *testing.T, r watch.Rule) (*watch.Watcher, *source, *sink, *clock) {
	t.Helper()
	src, sk, clk := &source{}, &sink{}, &clock{t: time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)}
	w, err := watch.New(watch.Options{Rules: []watch.Rule{r}, Source: src, Sink: sk, Now: clk.Now})
	require.NoError(t, err)
	return w, src, sk, clk
}

func TestStalledWorkerOpensAfterThresholdAndResolvesWithHysteresis(t *testing.T) {
	w, src, sk, clk := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#ci-ops", WorkerStalledFor: 5 * time.Minute})
	ctx := context.Background()
	src.data = stalled("caascad-ci-workers-infra-infra-prd-0")
	for range 6 { // 0..5 min: under the threshold
		require.NoError(t, w.Poll(ctx, 0))
		clk.t = clk.t.Add(time.Minute)
	}
	// At 5 min the condition holds once; it opens on the second poll in a row.
	assert.Len(t, sk.signals, 0)
	require.NoError(t, w.Poll(ctx, 0))
	require.Len(t, sk.signals, 1)
	s := sk.signals[0]
	assert.True(t, s.Firing)
	assert.Equal(t, "watch:infra-prd:worker_stalled:caascad-ci-workers-infra-infra-prd-0", s.Key)
	assert.Equal(t, "worker-stalled", s.Runbook)
	assert.Equal(t, map[string]string{"worker": "caascad-ci-workers-infra-infra-prd-0"}, s.Params)
	assert.Equal(t, "#ci-ops", s.Channel)
	assert.Contains(t, s.Evidence[0], "stalled for ≥ 5m")

	// Still stalled: no new signal (one incident, no spam).
	require.NoError(t, w.Poll(ctx, 0))
	assert.Len(t, sk.signals, 1)
	// Running again for one poll, then stalled again: no flapping.
	src.data = stalled()
	require.NoError(t, w.Poll(ctx, 0))
	src.data = stalled("caascad-ci-workers-infra-infra-prd-0")
	require.NoError(t, w.Poll(ctx, 0))
	assert.Len(t, sk.signals, 1)
	// Clear for two polls: resolved.
	src.data = stalled()
	require.NoError(t, w.Poll(ctx, 0))
	require.NoError(t, w.Poll(ctx, 0))
	require.Len(t, sk.signals, 2)
	assert.False(t, sk.signals[1].Firing)
	assert.Equal(t, s.Key, sk.signals[1].Key)
	assert.Empty(t, w.Keys(0))
	assert.Equal(t, 12, src.calls, "one collection per poll")
}

func TestQueueAndDatabase(t *testing.T) {
	w, src, sk, _ := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#ci-ops", PendingBuilds: 500, BuildLogsBytes: 20 << 30})
	ctx := context.Background()
	src.data = digest.Data{Builds: digest.BuildFigures{ByStatus: map[string]int{"pending": 800},
		PendingByPipeline: []digest.PipelineCount{{Team: "main", Pipeline: "big", Count: 700}}},
		DB: &digest.DBFigures{BuildLogBytes: 30 << 30, Tables: []digest.DBTable{{Label: "main/big", Team: "main", Pipeline: "big", Bytes: 25 << 30}}}}
	require.NoError(t, w.Poll(ctx, 0))
	require.NoError(t, w.Poll(ctx, 0))
	require.Len(t, sk.signals, 2)
	byKey := map[string]incident.Signal{}
	for _, s := range sk.signals {
		byKey[s.Key] = s
	}
	q := byKey["watch:infra-prd:pending_builds"]
	// the digest's first suggestion for the same situation, the alternative named
	fix := digest.PendingFix("24h", "main", "big")
	assert.Equal(t, "abort-pending", q.Runbook)
	assert.Equal(t, fix.Runbook, q.Runbook)
	assert.Equal(t, map[string]string{"since": "24h", "team": "main", "pipeline": "big"}, q.Params)
	assert.Equal(t, []string{"800 pending builds (more than 500)", "700 of them in `main/big`",
		"or `/runbook run workers-saturated target=infra-prd since=24h team=main pipeline=big` (guided: abort a few, pause, land, then everything)"}, q.Evidence)
	db := byKey["watch:infra-prd:build_logs:database"]
	assert.Equal(t, "postgres-build-logs-full", db.Runbook)
	assert.Equal(t, "build-log tables take 30.0 GiB (limit 20.0 GiB)", db.Evidence[0])
}

func TestUnreachableAndLoginAreIncidentsOfTheirOwn(t *testing.T) {
	w, src, sk, clk := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#ci-ops", WorkerStalledFor: time.Minute})
	ctx := context.Background()
	src.data = stalled("w-1")
	for range 3 {
		require.NoError(t, w.Poll(ctx, 0))
		clk.t = clk.t.Add(time.Minute)
	}
	require.Len(t, sk.signals, 1)
	src.err = errors.New("logging in to infra-prd: 401 Unauthorized")
	for range 3 {
		// a poll that could not read the target is an error (metrics count it so)
		assert.ErrorIs(t, w.Poll(ctx, 0), watch.ErrUnreadable)
	}
	require.Len(t, sk.signals, 2, "the stalled worker is not resolved while the target cannot be read")
	s := sk.signals[1]
	assert.Equal(t, "watch:infra-prd:unreachable", s.Key)
	assert.Equal(t, "Login to Concourse fails", s.Title)
	assert.Empty(t, s.Runbook)
	assert.Contains(t, s.Evidence[0], "targets.infra-prd.username")
	assert.Equal(t, "login", s.Source.Name, "a login failure is not shown as `unreachable`")

	// The target is named once, and a hint the error already gives is not repeated.
	src.err = errors.New("infra-prd: list workers: cannot reach 127.0.0.1:18081 (check the target's url and that the web node is up)")
	sig := watch.UnreachableSignal(w, watch.Rule{Target: "infra-prd", Channel: "#c"}, src.err)
	assert.Equal(t, []string{"`infra-prd`: list workers: cannot reach 127.0.0.1:18081 (check the target's url and that the web node is up)"}, sig.Evidence)
	assert.Equal(t, "unreachable", sig.Source.Name)
	sig = watch.UnreachableSignal(w, watch.Rule{Target: "infra-prd", Channel: "#c"},
		errors.New("login failed for target infra-prd as user groundcrew: 401 Invalid username or password: check password_file (and that the user exists in Concourse)"))
	assert.Equal(t, 1, strings.Count(sig.Evidence[0], "password_file"), sig.Evidence[0])
	src.err = errors.New("logging in to infra-prd: 401 Unauthorized")

	src.err = nil
	src.data = stalled()
	require.NoError(t, w.Poll(ctx, 0))
	require.NoError(t, w.Poll(ctx, 0))
	require.Len(t, sk.signals, 4)
	assert.False(t, sk.signals[2].Firing)
	assert.False(t, sk.signals[3].Firing)
}

func TestOpenIncidentsResolveAfterRestart(t *testing.T) {
	src, sk, clk := &source{}, &sink{}, &clock{t: time.Now()}
	sk.open = []*incident.Incident{{Key: "watch:infra-prd:worker_stalled:w-1", Source: incident.Source{Kind: incident.SourceWatch}}}
	w, err := watch.New(watch.Options{Rules: []watch.Rule{{Target: "infra-prd", Channel: "#c", WorkerStalledFor: time.Minute}}, Source: src, Sink: sk, Now: clk.Now})
	require.NoError(t, err)
	src.data = stalled()
	require.NoError(t, w.Poll(context.Background(), 0))
	require.NoError(t, w.Poll(context.Background(), 0))
	require.Len(t, sk.signals, 1)
	assert.False(t, sk.signals[0].Firing)
	assert.Equal(t, "watch:infra-prd:worker_stalled:w-1", sk.signals[0].Key)
}

func TestByteSizeYAML(t *testing.T) {
	var r watch.Rule
	require.NoError(t, yaml.Unmarshal([]byte("build_logs_bytes: 20GiB\nevery: 1m\n"), &r))
	assert.Equal(t, watch.ByteSize(20<<30), r.BuildLogsBytes)
	assert.Equal(t, time.Minute, r.Every)
	assert.Error(t, yaml.Unmarshal([]byte("build_logs_bytes: lots\n"), &r))
}

// Rules with the same period do not poll at the same instant: each starts
// at a stable offset within its period.
func TestOffsetsSpreadRulesOverThePeriod(t *testing.T) {
	const n = 20
	every := 10 * time.Second
	var offs []time.Duration
	for i := range n {
		r := watch.Rule{Target: fmt.Sprintf("t%02d", i), Channel: "#ci-ops", Every: every}
		o := watch.Offset(r, i)
		assert.Equal(t, o, watch.Offset(r, i), "stable")
		assert.GreaterOrEqual(t, o, time.Duration(0))
		assert.Less(t, o, every)
		offs = append(offs, o)
	}
	slices.Sort(offs)
	gap := every - offs[n-1] + offs[0]
	for i := 1; i < n; i++ {
		gap = max(gap, offs[i]-offs[i-1])
	}
	assert.Less(t, gap, every/4, "no long stretch without a poll: %v", offs)
	assert.Less(t, watch.Offset(watch.Rule{Target: "x"}, 0), watch.DefaultEvery)
}

type kv struct{ m map[string][]byte }

func (k *kv) GetKV(_ context.Context, key string) ([]byte, error) { return k.m[key], nil }
func (k *kv) PutKV(_ context.Context, key string, v []byte) error {
	k.m[key] = append([]byte(nil), v...)
	return nil
}

// A restart keeps the hysteresis: an incident open before it is neither
// resolved nor opened again by the first polls after it (issue 26: a
// restart made an incident "resolved", then "reopened" a minute later).
func TestHysteresisSurvivesARestart(t *testing.T) {
	st := &kv{m: map[string][]byte{}}
	src, sk, clk := &source{}, &sink{}, &clock{t: time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)}
	rule := watch.Rule{Target: "infra-prd", Channel: "#ci-ops", WorkerStalledFor: 5 * time.Minute}
	start := func() *watch.Watcher {
		w, err := watch.New(watch.Options{Rules: []watch.Rule{rule}, Source: src, Sink: sk, Now: clk.Now, State: st})
		require.NoError(t, err)
		return w
	}
	ctx := context.Background()
	src.data = stalled("w-1") // no stall time from the source: the watch counts from its first poll
	w := start()
	for range 7 {
		require.NoError(t, w.Poll(ctx, 0))
		clk.t = clk.t.Add(time.Minute)
	}
	require.Len(t, sk.signals, 1)
	assert.True(t, sk.signals[0].Firing)
	assert.Equal(t, 2, sk.signals[0].Observations, "it opens after two polls in a row, and says so")
	sk.open = []*incident.Incident{{Key: sk.signals[0].Key, Source: sk.signals[0].Source}}

	w = start() // groundcrew restarts
	for range 3 {
		require.NoError(t, w.Poll(ctx, 0))
		clk.t = clk.t.Add(time.Minute)
	}
	assert.Len(t, sk.signals, 1, "still open: not resolved, not reopened")
	assert.Equal(t, []string{"watch:infra-prd:worker_stalled:w-1"}, w.Keys(0))

	src.data = stalled()
	w = start()
	require.NoError(t, w.Poll(ctx, 0))
	require.NoError(t, w.Poll(ctx, 0))
	require.Len(t, sk.signals, 2)
	assert.False(t, sk.signals[1].Firing, "clear for two polls: resolved")
}

type failingKV struct{}

func (failingKV) GetKV(context.Context, string) ([]byte, error) { return nil, nil }
func (failingKV) PutKV(context.Context, string, []byte) error   { return errors.New("disk full") }

func TestStateWriteFailureIsAnError(t *testing.T) {
	src, sk, clk := &source{}, &sink{}, &clock{t: time.Now()}
	w, err := watch.New(watch.Options{Rules: []watch.Rule{{Target: "infra-prd", Channel: "#c"}}, Source: src, Sink: sk, Now: clk.Now, State: failingKV{}})
	require.NoError(t, err)
	src.data = stalled()
	assert.ErrorContains(t, w.Poll(context.Background(), 0), "saving the watch state of infra-prd: disk full")
}

// The watch's first suggestion for a stalled worker is the digest's.
func TestStalledWorkerSuggestsWhatTheDigestSuggests(t *testing.T) {
	for _, name := range []string{"5f2c668feaa4", "worker-0", "caascad-ci-workers-infra-infra-prd-3"} {
		w, src, sk, clk := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#ci-ops", WorkerStalledFor: time.Minute})
		src.data = stalled(name)
		for range 4 {
			require.NoError(t, w.Poll(context.Background(), 0))
			clk.t = clk.t.Add(time.Minute)
		}
		require.Len(t, sk.signals, 1, name)
		d := stalled(name)
		want := digest.Suggestions("infra-prd", d, clk.t)[0]
		got := sk.signals[0]
		assert.Equal(t, want.Runbook, got.Runbook, name)
		assert.Equal(t, map[string]string{"worker": name}, got.Params)
		assert.Contains(t, got.Evidence[len(got.Evidence)-1], want.Alternative)
	}
}

// Every runbook a watch incident suggests exists and takes the parameters
// given.
func TestSuggestedRunbooksTakeTheirParams(t *testing.T) {
	rbs, err := runbooks.LoadFS(runbooks.Builtin(), nil)
	require.NoError(t, err)
	byName := map[string]*runbookmodel.Runbook{}
	for _, rb := range rbs {
		byName[rb.Name] = rb
	}
	fixes := []digest.Fix{
		digest.StalledWorkerFix("5f2c668feaa4", ""), digest.StalledWorkerFix("caascad-ci-workers-infra-infra-prd-3", "3"),
		digest.PendingFix("24h", "main", "queue"), digest.PendingFix("24h", "", ""),
	}
	for _, f := range fixes {
		for _, c := range []struct {
			name   string
			params []string
		}{{f.Runbook, f.Params}, {f.AltRunbook, f.AltParams}} {
			if c.name == "" {
				continue
			}
			rb, ok := byName[c.name]
			require.True(t, ok, c.name)
			p := map[string]string{}
			for i := 0; i+1 < len(c.params); i += 2 {
				if c.params[i+1] != "" {
					p[c.params[i]] = c.params[i+1]
				}
			}
			_, err := runbooks.ValidateParams(rb, p)
			assert.NoError(t, err, "%s %v", c.name, p)
		}
	}
}

// A worker Concourse removes by itself (the target's
// stalled_worker_timeout) says so in its incident: a prune may not be
// needed.
func TestStalledWorkerSaysWhenConcourseRemovesIt(t *testing.T) {
	w, src, sk, clk := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#ci-ops", WorkerStalledFor: time.Minute})
	d := stalled("worker-1")
	d.Workers.Stalled[0].AutoRemove = "Concourse removes worker-1 by itself before 04:32 UTC unless it heartbeats again"
	src.data = d
	for range 4 {
		require.NoError(t, w.Poll(context.Background(), 0))
		clk.t = clk.t.Add(time.Minute)
	}
	require.Len(t, sk.signals, 1)
	assert.Contains(t, sk.signals[0].Evidence, "Concourse removes worker-1 by itself before 04:32 UTC unless it heartbeats again")
}

// A stalled worker's incident says why it resolves: back in another state,
// or no longer registered (Concourse's stalled-worker-timeout, or a prune).
func TestStalledWorkerResolvesSayingWhy(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  string
	}{
		{nil, "`worker-1` is no longer registered: Concourse removed it by itself (stalled-worker-timeout, or it was ephemeral) or someone pruned it."},
		{[]string{"worker-0", "worker-1"}, "`worker-1` is no longer stalled."},
	} {
		w, src, sk, clk := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#ci-ops", WorkerStalledFor: time.Minute})
		src.data = stalled("worker-1")
		for range 4 {
			require.NoError(t, w.Poll(context.Background(), 0))
			clk.t = clk.t.Add(time.Minute)
		}
		require.Len(t, sk.signals, 1)
		src.data = stalled()
		src.data.Workers.Names = c.names
		require.NoError(t, w.Poll(context.Background(), 0))
		require.NoError(t, w.Poll(context.Background(), 0))
		require.Len(t, sk.signals, 2)
		assert.False(t, sk.signals[1].Firing)
		assert.Equal(t, c.want, sk.signals[1].Why)
	}
}

// A rule posting to a channel bound to teams (Rule.Teams) polls only
// theirs, opens incidents of its own keys, and alerts on their own
// workers, not on a global one (no team's: their channel may not act on
// it).
func TestARuleOfSomeTeams(t *testing.T) {
	w, src, sk, clk := newWatcher(t, watch.Rule{Target: "infra-prd", Channel: "#payments-ci", Teams: []string{"payments"}, WorkerStalledFor: time.Minute, PendingBuilds: 10})
	ctx := context.Background()
	src.data = stalled("global-0")
	src.data.Workers.Stalled = append(src.data.Workers.Stalled, digest.StalledWorker{Name: "pay-0", Team: "payments"})
	src.data.Builds.ByStatus["pending"] = 20
	for range 3 {
		require.NoError(t, w.Poll(ctx, 0))
		clk.t = clk.t.Add(time.Minute)
	}
	assert.Equal(t, []string{"payments"}, src.teams)
	var keys []string
	for _, s := range sk.signals {
		keys = append(keys, s.Key)
		assert.Equal(t, "#payments-ci", s.Channel)
	}
	assert.ElementsMatch(t, []string{"watch:infra-prd[payments]:worker_stalled:pay-0", "watch:infra-prd[payments]:pending_builds"}, keys)

	// Its open incidents are its own after a restart; another scope's are not.
	w2, err := watch.New(watch.Options{Rules: []watch.Rule{{Target: "infra-prd", Channel: "#ci-ops", PendingBuilds: 10}}, Source: src, Sink: &sink{open: []*incident.Incident{
		{Key: "watch:infra-prd[payments]:pending_builds", Source: incident.Source{Kind: incident.SourceWatch}}}}, Now: time.Now})
	require.NoError(t, err)
	src.data = stalled()
	require.NoError(t, w2.Poll(ctx, 0))
	assert.Empty(t, w2.Keys(0), "every team's rule does not take over payments' incident")
}
