package concourse

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

var digestStart = time.Date(2025, 3, 10, 6, 0, 0, 0, time.UTC)

type digestEnv struct {
	srv   *concoursesim.Server
	clock *concoursesim.ManualClock
	c     *Client
}

func newDigestEnv(t testing.TB, w *concoursesim.World, opts ...concoursesim.Option) *digestEnv {
	t.Helper()
	clock := concoursesim.NewManualClock(digestStart)
	srv, err := concoursesim.New(*w, append([]concoursesim.Option{concoursesim.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL(), Username: "admin", Password: "admin",
		Vars: map[string]string{"target": "infra", "zone": "infra-prd"}, Workers: ManualWorkerNaming()},
		WithRetry(RetryPolicy{Attempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}), WithClock(clock.Now))
	require.NoError(t, err)
	return &digestEnv{srv: srv, clock: clock, c: c}
}

func (e *digestEnv) source(t testing.TB, o DigestOptions) *DigestSource {
	t.Helper()
	if o.Now == nil {
		o.Now = e.clock.Now
	}
	s, err := NewDigestSource(map[string]*Client{"infra-prd": e.c}, o)
	require.NoError(t, err)
	return s
}

func TestDigestSource_DemoWorld(t *testing.T) {
	env := newDigestEnv(t, concoursesim.DemoWorld())
	d, err := env.source(t, DigestOptions{}).Collect(context.Background(), "infra-prd", nil, 24*time.Hour, nil)
	require.NoError(t, err)

	assert.Equal(t, digestStart, d.At)
	assert.Equal(t, map[string]int{"running": 3, "stalled": 1}, d.Workers.ByState)
	assert.Len(t, d.Workers.Names, 4)
	require.Len(t, d.Workers.Stalled, 1)
	assert.Equal(t, "caascad-ci-workers-infra-infra-prd-0", d.Workers.Stalled[0].Name)
	assert.Equal(t, 236, d.Workers.ContainersMax)
	assert.InDelta(t, (236+227+228+229)/4.0, d.Workers.ContainersMean, 0.01)

	b := d.Builds
	assert.Equal(t, 40, b.Count("succeeded"))
	assert.Equal(t, 2, b.Count("failed"))
	assert.Equal(t, 4, b.Count("errored"))
	assert.Equal(t, 300, b.Count("pending"))
	assert.Equal(t, 4, b.ImageFetch, "every errored build of the demo has image fetching failed")
	assert.Equal(t, 4, b.Scanned)
	assert.Equal(t, []string{"main/app", "main/docs"}, b.ImageFetchPipelines)
	require.NotEmpty(t, b.PendingByPipeline)
	assert.Equal(t, digest.PipelineCount{Team: "deploy", Pipeline: "caascad-alert-prepare", Count: 300}, b.PendingByPipeline[0])
	require.Len(t, b.TopFailing, 2)
	assert.Equal(t, []string{"main/app", "main/docs"}, []string{b.TopFailing[0].Ref(), b.TopFailing[1].Ref()}, "ties by name")
	assert.Equal(t, []int{3, 3}, []int{b.TopFailing[0].Count, b.TopFailing[1].Count}, "app: 3 errored; docs: 2 failed + 1 errored")
	assert.NotZero(t, b.OldestPendingID)
	assert.NotZero(t, b.MaxID)
	assert.False(t, b.PendingSince.IsZero(), "bounded by the start of a newer build")
	assert.Empty(t, d.Notes)
	assert.Nil(t, d.DB, "no database configured")
}

func TestDigestSource_ScanIsCapped(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 2).
		ErroredBuilds("main", "app", "unit", 6, ImageFetchFailed).
		ErroredBuilds("main", "app", "lint", 3, "task errored")
	env := newDigestEnv(t, w)
	d, err := env.source(t, DigestOptions{ScanLimit: 4, ScanConcurrency: 2}).Collect(context.Background(), "infra-prd", nil, 24*time.Hour, nil)
	require.NoError(t, err)
	assert.Equal(t, 9, d.Builds.Count("errored"))
	assert.Equal(t, 4, d.Builds.Scanned, "only the newest ScanLimit errored builds are read")
	// the simulator logs a stream once its handler returns: wait for it
	assert.Eventually(t, func() bool { return env.srv.CountCalls(http.MethodGet, "/api/v1/builds/*") == 4 },
		time.Second, 5*time.Millisecond, "one event stream per scanned build")
	assert.LessOrEqual(t, d.Builds.ImageFetch, 4)
}

func TestDigestSource_PausedAndPartial(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1).
		AddPipeline(concoursesim.Pipeline{Name: "old", Paused: true, Jobs: []concoursesim.Job{{Name: "j"}}}).
		AddPipeline(concoursesim.Pipeline{Name: "gone", Paused: true, Archived: true})
	env := newDigestEnv(t, w)
	d, err := env.source(t, DigestOptions{}).Collect(context.Background(), "infra-prd", nil, time.Hour, nil)
	require.NoError(t, err)
	require.Len(t, d.Paused, 1, "archived pipelines are not reported")
	assert.Equal(t, "old", d.Paused[0].Name)
	assert.True(t, d.Paused[0].Exact)
	assert.Equal(t, digestStart.Add(-time.Hour), d.Paused[0].Since.UTC())

	env.srv.InjectFault(concoursesim.Fault{Path: "/api/v1/pipelines", Status: http.StatusBadGateway, Times: 2})
	d, err = env.source(t, DigestOptions{}).Collect(context.Background(), "infra-prd", nil, time.Hour, nil)
	require.NoError(t, err, "a part that fails is a note, not a failed digest")
	require.Len(t, d.Notes, 1)
	assert.Contains(t, d.Notes[0], "paused pipelines not read")
	assert.Contains(t, d.Notes[0], "502")
}

func TestDigestSource_Tables(t *testing.T) {
	env := newDigestEnv(t, concoursesim.NewWorld().RunningWorkers("w", 1))
	tests := []struct {
		name   string
		tables DigestTables
		want   *digest.DBFigures
	}{
		{"no database", func(context.Context, string) (digest.DBFigures, bool, error) { return digest.DBFigures{}, false, nil }, nil},
		{"sizes", func(_ context.Context, target string) (digest.DBFigures, bool, error) {
			return digest.DBFigures{DatabaseBytes: 10 << 30, Tables: []digest.DBTable{{Table: "pipeline_build_events_1", Label: target}}}, true, nil
		}, &digest.DBFigures{DatabaseBytes: 10 << 30, Tables: []digest.DBTable{{Table: "pipeline_build_events_1", Label: "infra-prd"}}}},
		{"database down", func(context.Context, string) (digest.DBFigures, bool, error) {
			return digest.DBFigures{}, true, errors.New("connection refused")
		}, &digest.DBFigures{Err: "connection refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := env.source(t, DigestOptions{Tables: tt.tables}).Collect(context.Background(), "infra-prd", nil, time.Hour, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.DB)
		})
	}
}

func TestDigestSource_Unreachable(t *testing.T) {
	env := newDigestEnv(t, concoursesim.DemoWorld())
	env.srv.Close()
	src := env.source(t, DigestOptions{})
	_, err := src.Collect(context.Background(), "infra-prd", nil, time.Hour, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "infra-prd")

	_, err = src.Collect(context.Background(), "nope", nil, time.Hour, nil)
	assert.ErrorIs(t, err, chatmodel.ErrNotConfigured)
}

func TestBuildAgg_OldestPending(t *testing.T) {
	src, err := NewDigestSource(nil, DigestOptions{})
	require.NoError(t, err)
	run := func(bs ...Build) digest.BuildFigures {
		a := src.newBuildAgg(context.Background(), nil)
		for _, b := range bs {
			require.NoError(t, a.add(b))
		}
		return a.finish()
	}
	tests := []struct {
		name   string
		builds []Build
		id     int
		since  int64
	}{
		{"bounded by newer builds' starts", []Build{
			{ID: 10, Status: StatusSucceeded, StartTime: 900}, {ID: 9, Status: StatusPending},
			{ID: 8, Status: StatusStarted, StartTime: 800}, {ID: 7, Status: StatusPending}, {ID: 6, Status: StatusSucceeded, StartTime: 100},
		}, 7, 800},
		{"no newer build started", []Build{{ID: 9, Status: StatusPending}, {ID: 8, Status: StatusPending}}, 8, 0},
		{"a rerun listed out of order gives no bound", []Build{
			{ID: 10, Status: StatusSucceeded, StartTime: 900}, {ID: 5, Status: StatusSucceeded, StartTime: 500},
			{ID: 4, Status: StatusPending, PipelineName: "rerun of 3"}, {ID: 3, Status: StatusFailed, StartTime: 300},
		}, 4, 500},
		{"rerun with a higher id than builds already seen", []Build{
			{ID: 10, Status: StatusSucceeded, StartTime: 900}, {ID: 5, Status: StatusSucceeded, StartTime: 500},
			{ID: 12, Status: StatusPending}, {ID: 3, Status: StatusFailed, StartTime: 300},
		}, 12, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := run(tt.builds...)
			assert.Equal(t, tt.id, f.OldestPendingID)
			if tt.since == 0 {
				assert.True(t, f.PendingSince.IsZero(), f.PendingSince)
			} else {
				assert.Equal(t, tt.since, f.PendingSince.Unix())
			}
		})
	}
}

type memHistory struct {
	mu   sync.Mutex
	recs map[string]digest.Record
}

func (h *memHistory) LastDigest(_ context.Context, key string) (*digest.Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.recs[key]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

func (h *memHistory) SaveDigest(_ context.Context, key string, rec digest.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recs == nil {
		h.recs = map[string]digest.Record{}
	}
	h.recs[key] = rec
	return nil
}

// TestDigest_OnSimulator runs the scheduler against the simulator with a
// fake clock: the morning digest names each problem of the demo world with
// its runbook command, and an unreachable target still gets its digest.
func TestDigest_OnSimulator(t *testing.T) {
	env := newDigestEnv(t, concoursesim.DemoWorld())
	chat := &bottest.Chat{}
	sched, err := digest.NewScheduler(digest.Options{
		Digests: []digest.Schedule{{Target: "infra-prd", Channel: "#ci-ops", Schedule: "0 8 * * *", Timezone: "Europe/Paris"}},
		Source:  env.source(t, DigestOptions{}), History: &memHistory{}, Chat: chat, Now: env.clock.Now,
	})
	require.NoError(t, err)
	ctx := context.Background()
	sched.Tick(ctx) // 06:00 UTC: arms the schedule
	assert.Empty(t, chat.Posts())
	env.clock.Advance(time.Hour) // 07:00 UTC = 08:00 in Paris
	sched.Tick(ctx)
	require.Len(t, chat.Posts(), 1)
	msg := chat.Posts()[0].Msg
	assert.Equal(t, "#ci-ops", chat.Posts()[0].To.Channel)
	for _, want := range []string{
		"🔴 *Health digest* `infra-prd` · Mon 08:00 CET",
		"`/runbook run worker-stalled target=infra-prd worker=0`",
		"`/runbook run workers-saturated target=infra-prd since=24h team=deploy pipeline=caascad-alert-prepare`",
		"`/runbook run image-fetch-failed target=infra-prd since=24h`",
		"300 pending",
	} {
		assert.Contains(t, msg.Text, want)
	}
	assert.Contains(t, msg.Detail, "caascad-ci-workers-infra-infra-prd-0")

	env.srv.Close()
	require.NoError(t, sched.DigestNow(ctx, "infra-prd", nil, chatmodel.Conversation{Channel: "#ops"}))
	last := chat.Posts()[1]
	assert.Equal(t, "#ops", last.To.Channel)
	assert.Contains(t, last.Msg.Text, "unreachable")
	assert.Contains(t, last.Msg.Text, "cannot reach")
}

// On a real server with workers worker-0/worker-1 and no workers.name
// template, worker=0 would address another worker (or none): the digest
// suggests the full name.
func TestDigest_SuggestsTheExactWorker(t *testing.T) {
	w := concoursesim.NewWorld()
	w.Workers = []concoursesim.Worker{{Name: "worker-0"}, {Name: "worker-1", State: "stalled"}}
	clock := concoursesim.NewManualClock(digestStart)
	srv, err := concoursesim.New(*w, concoursesim.WithClock(clock))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		naming WorkerNaming
		want   string
	}{
		{WorkerNaming{}, "worker=worker-1"},
		{WorkerNaming{Name: "worker-{{.id}}"}, "worker=1"},
	} {
		c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL(), Username: "admin", Password: "admin", Workers: tc.naming}, WithClock(clock.Now))
		require.NoError(t, err)
		src, err := NewDigestSource(map[string]*Client{"infra-prd": c}, DigestOptions{Now: clock.Now})
		require.NoError(t, err)
		d, err := src.Collect(context.Background(), "infra-prd", nil, time.Hour, nil)
		require.NoError(t, err)
		s := digest.Suggestions("infra-prd", d, clock.Now())
		require.NotEmpty(t, s)
		assert.Equal(t, "/runbook run worker-stalled target=infra-prd "+tc.want, s[0].Command)
	}
}

// A refused login is a credentials problem, never "unreachable → restart
// Concourse Web".
func TestDigest_LoginRefused(t *testing.T) {
	clock := concoursesim.NewManualClock(digestStart)
	srv, err := concoursesim.New(*concoursesim.DemoWorld(), concoursesim.WithClock(clock))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL(), Username: "groundcrew", Password: "wrong"}, WithClock(clock.Now))
	require.NoError(t, err)
	src, err := NewDigestSource(map[string]*Client{"infra-prd": c}, DigestOptions{Now: clock.Now})
	require.NoError(t, err)
	chat := &bottest.Chat{}
	sched, err := digest.NewScheduler(digest.Options{Source: src, History: &memHistory{}, Chat: chat, Now: clock.Now, Targets: []string{"infra-prd"}})
	require.NoError(t, err)
	require.NoError(t, sched.DigestNow(context.Background(), "infra-prd", nil, chatmodel.Conversation{Channel: "#ops"}))
	text := chat.Posts()[0].Msg.Text
	assert.Contains(t, text, "login refused")
	assert.Contains(t, text, "login failed for target infra-prd as user groundcrew")
	assert.Contains(t, text, "check password_file")
	assert.NotContains(t, text, "web-restart")
}

// With the target's stalled_worker_timeout a digest says, for each stalled
// worker, when Concourse removes it by itself.
func TestDigestSource_SaysWhenConcourseRemovesAStalledWorker(t *testing.T) {
	env := newDigestEnv(t, concoursesim.DemoWorld())
	c, err := New(TargetConfig{Name: "infra-prd", URL: env.srv.URL(), Username: "admin", Password: "admin",
		Workers: ManualWorkerNaming(), Vars: map[string]string{"target": "infra", "zone": "infra-prd"}, StalledWorkerTimeout: time.Hour},
		WithClock(env.clock.Now))
	require.NoError(t, err)
	env.c = c
	d, err := env.source(t, DigestOptions{}).Collect(context.Background(), "infra-prd", nil, 24*time.Hour, nil)
	require.NoError(t, err)
	require.Len(t, d.Workers.Stalled, 1)
	assert.Equal(t, "Concourse removes caascad-ci-workers-infra-infra-prd-0 by itself before "+
		clockUTC(digestStart.Add(time.Hour+30*time.Second))+" unless it heartbeats again", d.Workers.Stalled[0].AutoRemove)
}
