package digest

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

var (
	paris     = mustLoc("Europe/Paris")
	digestMon = time.Date(2025, 3, 10, 8, 0, 0, 0, paris) // Monday 08:00 CET
)

func mustLoc(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

// healthyDigest is a target with nothing wrong, collected at at.
func healthyDigest(at time.Time) Data {
	return Data{
		Target: "infra-prd", At: at, Window: 24 * time.Hour,
		Workers: WorkerFigures{ByState: map[string]int{"running": 3}, Names: []string{"w-1", "w-2", "w-3"},
			ContainersMax: 120, MaxWorker: "w-2", ContainersMean: 100},
		Builds: BuildFigures{ByStatus: map[string]int{"succeeded": 40, "failed": 1}, MaxID: 1000},
	}
}

// sickDigest has one problem of every kind.
func sickDigest(at time.Time) Data {
	d := healthyDigest(at)
	d.Workers.ByState = map[string]int{"running": 2, "stalled": 1}
	d.Workers.Names = []string{"caascad-ci-workers-infra-infra-prd-0", "w-1", "w-2"}
	d.Workers.Stalled = []StalledWorker{{Name: "caascad-ci-workers-infra-infra-prd-0", Containers: 236, Since: at.Add(-2 * time.Hour)}}
	d.Builds.ByStatus = map[string]int{"succeeded": 40, "failed": 2, "errored": 4, "pending": 300}
	d.Builds.PendingByPipeline = []PipelineCount{{Team: "deploy", Pipeline: "caascad-alert-prepare", Count: 290}, {Team: "main", Pipeline: "app", Count: 10}}
	d.Builds.OldestPendingID, d.Builds.PendingSince = 900, at.Add(-45*time.Minute)
	d.Builds.ImageFetch, d.Builds.Scanned, d.Builds.ImageFetchPipelines = 3, 4, []string{"main/app"}
	d.Paused = []PausedPipeline{{Team: "main", Name: "docs", By: "alice", Since: at.Add(-72 * time.Hour)}}
	d.DB = &DBFigures{DatabaseBytes: 12 << 30, BuildLogBytes: 10 << 30, Tables: []DBTable{
		{Table: "pipeline_build_events_3", Team: "main", Pipeline: "app", Label: "main/app", Bytes: 6 << 30},
	}}
	return d
}

func TestCarryHistory(t *testing.T) {
	prevAt := digestMon.Add(-24 * time.Hour)
	prev := healthyDigest(prevAt)
	prev.Workers.Names = []string{"w-0", "w-1", "w-2", "w-3", "w-9"}
	prev.Workers.Stalled = []StalledWorker{{Name: "w-0", Since: prevAt.Add(-time.Hour)}}
	prev.Paused = []PausedPipeline{{Team: "main", Name: "docs", Since: prevAt}}

	cur := healthyDigest(digestMon)
	cur.Workers.Names = []string{"w-0", "w-1", "w-2", "w-3", "w-4"}
	cur.Workers.Stalled = []StalledWorker{{Name: "w-0"}, {Name: "w-3"}, {Name: "w-4"}}
	cur.Paused = []PausedPipeline{{Team: "main", Name: "docs"}, {Team: "main", Name: "new"},
		{Team: "main", Name: "exact", Since: prevAt.Add(-72 * time.Hour), Exact: true}}
	cur.Builds.OldestPendingID, cur.Builds.PendingSince = 990, digestMon.Add(-10*time.Minute)

	carryHistory(&cur, &prev)

	assert.Equal(t, []StalledWorker{
		{Name: "w-0", Since: prevAt.Add(-time.Hour)}, // still stalled: first seen before the last digest
		{Name: "w-3", Since: digestMon, New: true},   // was running at the last digest
		{Name: "w-4", Since: digestMon, New: false},  // unknown at the last digest
	}, cur.Workers.Stalled)
	assert.Equal(t, []string{"w-9"}, cur.Workers.Missing)
	assert.Equal(t, prevAt, cur.Paused[0].Since, "paused since at least the last digest")
	assert.Equal(t, digestMon, cur.Paused[1].Since, "first seen paused now")
	assert.Equal(t, prevAt.Add(-72*time.Hour), cur.Paused[2].Since, "Concourse's paused_at wins")
	assert.Equal(t, prevAt, cur.Builds.PendingSince, "build 990 existed at the last digest (max id 1000) and is still pending")

	t.Run("newer pending build keeps its own bound", func(t *testing.T) {
		c := healthyDigest(digestMon)
		c.Builds.OldestPendingID, c.Builds.PendingSince = 1001, digestMon.Add(-10*time.Minute)
		carryHistory(&c, &prev)
		assert.Equal(t, digestMon.Add(-10*time.Minute), c.Builds.PendingSince)
	})
	t.Run("first digest", func(t *testing.T) {
		c := healthyDigest(digestMon)
		c.Workers.Stalled = []StalledWorker{{Name: "w-1"}}
		carryHistory(&c, nil)
		assert.Equal(t, digestMon, c.Workers.Stalled[0].Since)
		assert.False(t, c.Workers.Stalled[0].New)
		assert.Empty(t, c.Workers.Missing)
	})
}

func TestTrend(t *testing.T) {
	tests := []struct {
		name      string
		cur, prev int
		has       bool
		want      string
	}{
		{"up", 4, 1, true, " ▲3"},
		{"down", 280, 300, true, " ▼20"},
		{"same", 5, 5, true, ""},
		{"no previous digest", 5, 0, false, ""},
		{"from zero", 1, 0, true, " ▲1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, trendInt(tt.cur, tt.prev, tt.has))
		})
	}
	assert.Equal(t, " ▲2.0 GiB", trendBytes(12<<30, 10<<30, true))
	assert.Equal(t, " ▼512.0 MiB", trendBytes(1<<30, 3<<29, true))
	assert.Equal(t, "", trendBytes(1<<30, 0, false))
}

func TestRenderDigest_Trends(t *testing.T) {
	prev := healthyDigest(digestMon.Add(-24 * time.Hour))
	prev.Builds.ByStatus["pending"] = 320
	prev.DB = &DBFigures{DatabaseBytes: 10 << 30, BuildLogBytes: 8 << 30, Tables: []DBTable{{Table: "pipeline_build_events_3", Label: "main/app", Bytes: 5 << 30}}}
	cur := sickDigest(digestMon)

	m := Render("infra-prd", cur, &prev, digestMon)
	for _, want := range []string{
		"🔴 *Health digest* `infra-prd` · Mon 08:00 CET",
		"Workers: 2 running ▼1, 1 stalled ▲1 · containers max 120, mean 100",
		"40 succeeded, 2 failed ▲1, 4 errored ▲4 (3 image fetch)",
		"300 pending ▼20, oldest queued ≥ 45 min",
		"Paused: 1 pipeline ▲1 · DB 12.0 GiB ▲2.0 GiB, build logs 10.0 GiB ▲2.0 GiB",
		"Trends vs the digest of Sun 08:00 CET",
	} {
		assert.Contains(t, m.Text, want)
	}
	assert.Contains(t, m.Detail, "`main/app` (pipeline_build_events_3) 6.0 GiB ▲1.0 GiB")
	assert.Contains(t, m.Detail, "stalled for ≥ 2 h")
	assert.Contains(t, m.Detail, "• `main/docs` — paused for ≥ 3 d by alice")
	assert.Contains(t, m.Detail, "Compared with the digest of Sun 09 Mar 08:00 CET.")
	assert.Contains(t, m.Text, "the database grew 20% since the last digest")

	first := Render("infra-prd", cur, nil, digestMon)
	assert.NotContains(t, first.Text, "▲")
	assert.NotContains(t, first.Text, "▼")
	assert.Contains(t, first.Text, "First digest: no trends yet")
}

func TestRenderDigest_HealthyAndUnreachable(t *testing.T) {
	m := Render("infra-prd", healthyDigest(digestMon), nil, digestMon)
	assert.True(t, strings.HasPrefix(m.Text, "🟢 *Health digest* `infra-prd` · Mon 08:00 CET — all healthy"), m.Text)
	assert.NotContains(t, m.Text, "Suggested")
	assert.NotEmpty(t, m.Detail)

	prev := healthyDigest(digestMon.Add(-24 * time.Hour))
	down := Data{Target: "infra-prd", At: digestMon, Err: `infra-prd: list workers: cannot reach ci.example.com: connection refused`}
	m = Render("infra-prd", down, &prev, digestMon)
	assert.Contains(t, m.Text, "🔴 *Health digest* `infra-prd` · Mon 08:00 CET — unreachable")
	assert.Contains(t, m.Text, "connection refused")
	assert.Contains(t, m.Text, "`/runbook run web-restart target=infra-prd`")
	assert.Contains(t, m.Text, "Last figures (Sun 08:00 CET): 3 workers, 0 stalled, 0 pending builds.")

	refused := Data{Target: "infra-prd", At: digestMon, LoginRefused: true,
		Err: "login failed for target infra-prd as user groundcrew: 401 Invalid username or password: check password_file"}
	m = Render("infra-prd", refused, &prev, digestMon)
	assert.Contains(t, m.Text, "🔴 *Health digest* `infra-prd` · Mon 08:00 CET — login refused")
	assert.Contains(t, m.Text, "check password_file")
	assert.NotContains(t, m.Text, "web-restart", "a refused login is not an outage")
	assert.NotContains(t, m.Text, "unreachable")
}

func TestDigestSuggestions_EachProblem(t *testing.T) {
	base := healthyDigest(digestMon)
	tests := []struct {
		name   string
		modify func(d *Data)
		want   string
	}{
		{"unreachable", func(d *Data) { d.Err = "connection refused" }, "/runbook run web-restart target=infra-prd"},
		{"stalled worker", func(d *Data) {
			d.Workers.Stalled = []StalledWorker{{Name: "caascad-ci-workers-infra-infra-prd-3", Ref: "3", Since: digestMon.Add(-2 * time.Hour)}}
		}, "/runbook run worker-stalled target=infra-prd worker=3"},
		{"stalled worker without id", func(d *Data) { d.Workers.Stalled = []StalledWorker{{Name: "5f2c668feaa4", Since: digestMon}} },
			"/runbook run prune-stalled target=infra-prd worker=5f2c668feaa4"}, // an ephemeral worker does not come back
		{"a trailing number is not an id", func(d *Data) { d.Workers.Stalled = []StalledWorker{{Name: "worker-1", Since: digestMon}} },
			"/runbook run worker-stalled target=infra-prd worker=worker-1"},
		{"many pending", func(d *Data) { d.Builds.ByStatus["pending"] = PendingAlert }, "/runbook run workers-saturated target=infra-prd since=24h"},
		{"old pending", func(d *Data) {
			d.Builds.ByStatus["pending"], d.Builds.PendingSince = 2, digestMon.Add(-PendingAgeAlert)
			d.Builds.PendingByPipeline = []PipelineCount{{Team: "deploy", Pipeline: "caascad-alert-prepare", Count: 2}}
		}, "/runbook run abort-pending target=infra-prd pipeline=caascad-alert-prepare team=deploy since=24h"},
		{"busy worker", func(d *Data) { d.Workers.ContainersMax, d.Window = ContainersAlert, 90*time.Minute },
			"/runbook run workers-saturated target=infra-prd since=90m"},
		{"image fetch", func(d *Data) { d.Builds.ImageFetch, d.Builds.ImageFetchPipelines = 2, []string{"main/app"} },
			"/runbook run image-fetch-failed target=infra-prd since=24h team=main pipeline=app"},
		{"image fetch in several pipelines", func(d *Data) {
			d.Builds.ImageFetch, d.Builds.ImageFetchPipelines, d.Window = 2, []string{"main/app", "main/docs"}, 72*time.Hour
		}, "/runbook run image-fetch-failed target=infra-prd since=3d"},
		{"big build-log table", func(d *Data) {
			d.DB = &DBFigures{DatabaseBytes: 8 << 30, Tables: []DBTable{{Team: "deploy", Pipeline: "caascad-alert-prepare", Label: "deploy/caascad-alert-prepare", Bytes: TableAlertBytes}}}
		}, "/runbook run postgres-build-logs-full target=infra-prd team=deploy pipeline=caascad-alert-prepare"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base
			d.Builds.ByStatus = map[string]int{"succeeded": 40}
			tt.modify(&d)
			s := Suggestions("infra-prd", d, digestMon)
			require.Len(t, s, 1, "%+v", s)
			assert.Equal(t, tt.want, s[0].Command)
			assert.Contains(t, Render("infra-prd", d, nil, digestMon).Text, "`"+tt.want+"`")
		})
	}
	assert.Empty(t, Suggestions("infra-prd", base, digestMon), "a healthy target has no suggestion")

	t.Run("fast-growing database", func(t *testing.T) {
		prev := healthyDigest(digestMon.Add(-24 * time.Hour))
		prev.DB = &DBFigures{DatabaseBytes: 10 << 30}
		cur := healthyDigest(digestMon)
		cur.DB = &DBFigures{DatabaseBytes: 11 << 30, Tables: []DBTable{{Team: "main", Pipeline: "app", Bytes: 1 << 30}}}
		s, ok := dbGrowthSuggestion("infra-prd", cur, &prev)
		require.True(t, ok)
		assert.Equal(t, "/runbook run postgres-build-logs-full target=infra-prd team=main pipeline=app", s.Command)
		cur.DB.DatabaseBytes = 10<<30 + 1<<20
		_, ok = dbGrowthSuggestion("infra-prd", cur, &prev)
		assert.False(t, ok)
	})
}

// TestDigestSuggestions_MatchBuiltinRunbooks checks every suggested command
// against the built-in runbooks: the runbook exists and its parameters
// accept the values given.
func TestDigestSuggestions_MatchBuiltinRunbooks(t *testing.T) {
	type rawParam struct {
		Name     string   `yaml:"name"`
		Required bool     `yaml:"required"`
		Default  string   `yaml:"default"`
		Pattern  string   `yaml:"pattern"`
		Enum     []string `yaml:"enum"`
	}
	library := map[string]*runbookmodel.Runbook{}
	files, err := fs.Glob(runbooks.Builtin(), "*.yaml")
	require.NoError(t, err)
	for _, f := range files {
		data, err := fs.ReadFile(runbooks.Builtin(), f)
		require.NoError(t, err)
		var raw struct {
			Name   string     `yaml:"name"`
			Params []rawParam `yaml:"params"`
		}
		require.NoError(t, yaml.Unmarshal(data, &raw), f)
		rb := &runbookmodel.Runbook{Name: raw.Name}
		for _, p := range raw.Params {
			rb.Params = append(rb.Params, runbookmodel.Param{Name: p.Name, Required: p.Required, Default: p.Default, Pattern: p.Pattern, Enum: p.Enum})
		}
		library[raw.Name] = rb
	}
	var all []Suggestion
	all = append(all, Suggestions("infra-prd", sickDigest(digestMon), digestMon)...)
	busy := healthyDigest(digestMon)
	busy.Workers.ContainersMax = ContainersAlert
	all = append(all, Suggestions("infra-prd", busy, digestMon)...)
	all = append(all, Suggestions("infra-prd", Data{Err: "down"}, digestMon)...)
	var names []string
	for _, s := range all {
		names = append(names, s.Runbook)
	}
	assert.Subset(t, names, []string{"worker-stalled", "workers-saturated", "image-fetch-failed", "postgres-build-logs-full", "web-restart"})

	cmd := regexp.MustCompile(`^/runbook run ([a-z0-9-]+) target=infra-prd((?: [a-z_]+=\S+)*)$`)
	for _, s := range all {
		if s.Alternative != "" {
			all = append(all, Suggestion{Runbook: s.Runbook + " (alternative)", Command: s.Alternative})
		}
	}
	for _, s := range all {
		t.Run(s.Runbook, func(t *testing.T) {
			m := cmd.FindStringSubmatch(s.Command)
			require.NotNil(t, m, "not a /runbook run command: %q", s.Command)
			rb, ok := library[m[1]]
			require.True(t, ok, "no built-in runbook %q (have %v)", m[1], slices.Sorted(mapsKeys(library)))
			params := map[string]string{}
			for _, kv := range strings.Fields(m[2]) {
				k, v, _ := strings.Cut(kv, "=")
				params[k] = v
			}
			_, err := runbooks.ValidateParams(rb, params)
			assert.NoError(t, err, s.Command)
		})
	}
}

// One situation, one first suggestion — the quickest that fits — and the
// alternative named with it; the watch takes the same (watch tests).
func TestDigestSuggestions_NameTheAlternative(t *testing.T) {
	d := healthyDigest(digestMon)
	d.Builds.ByStatus["pending"] = PendingAlert
	d.Builds.PendingByPipeline = []PipelineCount{{Team: "main", Pipeline: "queue", Count: PendingAlert}}
	d.Workers.Stalled = []StalledWorker{{Name: "caascad-ci-workers-infra-infra-prd-3", Ref: "3", Since: digestMon}}
	s := Suggestions("infra-prd", d, digestMon)
	require.Len(t, s, 2)
	assert.Equal(t, "/runbook run worker-stalled target=infra-prd worker=3", s[0].Command)
	assert.Equal(t, "/runbook run prune-stalled target=infra-prd worker=3", s[0].Alternative)
	assert.Equal(t, "/runbook run abort-pending target=infra-prd pipeline=queue team=main since=24h", s[1].Command)
	assert.Equal(t, "/runbook run workers-saturated target=infra-prd since=24h team=main pipeline=queue", s[1].Alternative)
	text := Render("infra-prd", d, nil, digestMon).Text
	assert.Contains(t, text, "→ `/runbook run abort-pending target=infra-prd pipeline=queue team=main since=24h` (or `/runbook run workers-saturated target=infra-prd since=24h team=main pipeline=queue`, guided: abort a few, pause, land, then everything)")
}

func mapsKeys(m map[string]*runbookmodel.Runbook) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestWindowParam(t *testing.T) {
	for d, want := range map[time.Duration]string{
		24 * time.Hour: "24h", 72 * time.Hour: "3d", 90 * time.Minute: "90m", 36 * time.Hour: "36h", 90 * time.Second: "90s",
	} {
		assert.Equal(t, want, windowParam(d), d.String())
	}
}

// A stalled worker is not "busiest", and the root and the thread give the
// same mean.
func TestRender_StalledWorkerIsNotBusiestAndMeansAgree(t *testing.T) {
	d := sickDigest(digestMon)
	d.Workers.MaxWorker, d.Workers.ContainersMax, d.Workers.ContainersMean = d.Workers.Stalled[0].Name, 236, 1.7
	msg := Render("infra-prd", d, nil, digestMon)
	assert.NotContains(t, msg.Detail, "busiest")
	assert.Contains(t, msg.Detail, "most containers: `caascad-ci-workers-infra-infra-prd-0` with 236, but it is stalled")
	assert.Contains(t, msg.Text, "mean 1.7 per worker")
	assert.Contains(t, msg.Detail, "mean 1.7 per worker")
	d.Workers.MaxWorker = "w-2"
	assert.Contains(t, Render("infra-prd", d, nil, digestMon).Detail, "busiest: `w-2`")
}

// A stalled worker Concourse removes by itself (the target's
// stalled_worker_timeout) says when, on its line of the digest.
func TestRender_StalledWorkerConcourseRemovesByItself(t *testing.T) {
	d := sickDigest(digestMon)
	d.Workers.Stalled[0].AutoRemove = "Concourse removes caascad-ci-workers-infra-infra-prd-0 by itself before 09:30 UTC unless it heartbeats again"
	m := Render("infra-prd", d, nil, digestMon)
	assert.Contains(t, m.Text+m.Detail, "236 containers; first seen stalled")
	assert.Contains(t, m.Text+m.Detail, "; Concourse removes caascad-ci-workers-infra-infra-prd-0 by itself before 09:30 UTC unless it heartbeats again")
}

// A digest of some teams: a stalled global worker is said without a
// command (their channel may not change it); their own worker gets one.
func TestRender_ADigestOfSomeTeams(t *testing.T) {
	now := time.Date(2025, 3, 10, 8, 0, 0, 0, time.UTC)
	d := Data{Target: "infra-prd", Teams: []string{"payments"}, At: now, Window: 24 * time.Hour,
		Workers: WorkerFigures{ByState: map[string]int{"stalled": 2}, Names: []string{"global-0", "pay-0"},
			Stalled: []StalledWorker{{Name: "global-0"}, {Name: "pay-0", Team: "payments"}}}}
	m := Render("infra-prd", d, nil, now)
	assert.Contains(t, m.Text, "🔴 *Health digest* `infra-prd` · team `payments` · Mon 08:00 UTC — 2 problems")
	assert.Contains(t, m.Text, "\n• `global-0` is stalled — a global worker: a channel bound to every team acts on it\n")
	assert.Contains(t, m.Text, "• `pay-0` is stalled → `/runbook run")
	d.Teams = nil
	m = Render("infra-prd", d, nil, now)
	assert.Contains(t, m.Text, "• `global-0` is stalled → `/runbook run", "every team's digest: a command")
}
