package concoursesim_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

func (h *harness) getJSON(t *testing.T, path string, out any) {
	t.Helper()
	resp := h.do(t, "GET", path, "", "admin")
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

func TestSim_WorkerStallsWhenHeartbeatStops(t *testing.T) {
	h := newHarness(t, *concoursesim.NewWorld().RunningWorkers("w", 2))
	require.NoError(t, h.srv.StopHeartbeat("w-0"))
	h.clock.Advance(59 * time.Second)
	w, _ := h.srv.Worker("w-0")
	assert.Equal(t, "running", w.State, "within the heartbeat TTL")
	h.clock.Advance(2 * time.Second)
	w, _ = h.srv.Worker("w-0")
	assert.Equal(t, "stalled", w.State)
	w, _ = h.srv.Worker("w-1")
	assert.Equal(t, "running", w.State)

	h.srv.ResumeHeartbeat("w-0")
	w, _ = h.srv.Worker("w-0")
	assert.Equal(t, "running", w.State, "a stalled worker that heartbeats is running again")
	assert.Error(t, h.srv.StopHeartbeat("ghost"))
}

// The web node serves the worker list from a cache: right after a prune
// answered 200 the worker may still be listed, as it was, for a moment
// (measured on Concourse 8.2.5: about a second), while PUTs on it read the
// database and answer 404.
func TestSim_WorkerListLagsAPrune(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	h := newHarness(t, *w, concoursesim.WithWorkerCacheLag(1500*time.Millisecond))
	require.NoError(t, h.srv.StopHeartbeat("w-0"))
	h.clock.Advance(2 * time.Minute)
	h.expect(t, "PUT", "/api/v1/workers/w-0/prune", "", http.StatusOK)
	listed := func() []string {
		var ws []struct{ Name, State string }
		h.getJSON(t, "/api/v1/workers", &ws)
		var out []string
		for _, w := range ws {
			out = append(out, w.Name+" "+w.State)
		}
		return out
	}
	assert.Equal(t, []string{"w-0 stalled"}, listed(), "still in the worker cache")
	h.expect(t, "PUT", "/api/v1/workers/w-0/prune", "", http.StatusNotFound)
	_, ok := h.srv.Worker("w-0")
	assert.False(t, ok, "gone from the database at once")
	h.clock.Advance(time.Second)
	assert.Equal(t, []string{"w-0 stalled"}, listed())
	h.clock.Advance(time.Second)
	assert.Empty(t, listed(), "the cache caught up")

	h.srv.ResumeHeartbeat("w-0")
	assert.Equal(t, []string{"w-0 running"}, listed(), "a worker that registers again is listed as it is now")
}

func TestSim_LandingBecomesLandedWhenBuildsFinish(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit", Duration: concoursesim.Duration(time.Minute)}}})
	w.AddBuilds(concoursesim.Build{ID: 1, Pipeline: "app", Job: "unit", Status: "started", Age: concoursesim.Duration(30 * time.Second)})
	h := newHarness(t, *w)
	h.expect(t, "PUT", "/api/v1/workers/w-0/land", `{"team":""}`, http.StatusOK)
	ws, _ := h.srv.Worker("w-0")
	assert.Equal(t, "landing", ws.State)
	h.clock.Advance(31 * time.Second) // the build finishes
	b, _ := h.srv.Build(1)
	assert.Equal(t, "succeeded", b.Status)
	ws, _ = h.srv.Worker("w-0")
	assert.Equal(t, "landed", ws.State)
	h.expect(t, "PUT", "/api/v1/workers/w-0/prune", "", http.StatusOK)
	_, ok := h.srv.Worker("w-0")
	assert.False(t, ok)
}

func TestSim_SchedulerStartsPendingBuilds(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 2)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{
		{Name: "deploy", Serial: true}, {Name: "unit", Duration: concoursesim.Duration(time.Minute)}, {Name: "held", Paused: true},
	}})
	w.AddBuilds(
		concoursesim.Build{ID: 1, Pipeline: "app", Job: "deploy", Count: 3},
		concoursesim.Build{ID: 4, Pipeline: "app", Job: "unit", Count: 2},
		concoursesim.Build{ID: 6, Pipeline: "app", Job: "held"},
	)
	h := newHarness(t, *w)
	assert.Equal(t, map[string]int{"pending": 6}, h.srv.CountBuilds("app"), "nothing starts before the scheduler ticks")
	h.clock.Advance(10 * time.Second)
	got := map[int]string{}
	workers := map[string]int{}
	for _, b := range h.srv.Builds() {
		got[b.ID] = b.Status
		if b.Status == "started" {
			workers[b.Worker]++
		}
	}
	assert.Equal(t, map[int]string{1: "started", 2: "pending", 3: "pending", 4: "started", 5: "started", 6: "pending"}, got,
		"serial job runs one at a time, paused job waits")
	assert.Equal(t, map[string]int{"w-0": 2, "w-1": 1}, workers, "least busy worker first")

	h.clock.Advance(61 * time.Second)
	assert.Equal(t, 2, h.srv.CountBuilds("app")["succeeded"])
}

func TestSim_NoRunningWorkerErrorsBuilds(t *testing.T) {
	w := concoursesim.NewWorld().StalledWorker("w-0")
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddBuilds(concoursesim.Build{ID: 1, Pipeline: "app", Job: "unit"})
	h := newHarness(t, *w)
	h.clock.Advance(10 * time.Second)
	b, _ := h.srv.Build(1)
	assert.Equal(t, "errored", b.Status)
}

func TestSim_AbortDelayAndStuckBuilds(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1).StalledWorker("dead")
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddBuilds(
		concoursesim.Build{ID: 1, Pipeline: "app", Job: "unit"},
		concoursesim.Build{ID: 2, Pipeline: "app", Job: "unit", Status: "started", Worker: "dead"},
		concoursesim.Build{ID: 3, Pipeline: "app", Job: "unit", Status: "started", Worker: "w-0"},
	)
	h := newHarness(t, *w)
	for _, id := range []string{"1", "2", "3"} {
		h.expect(t, "PUT", "/api/v1/builds/"+id+"/abort", "", http.StatusNoContent)
	}
	b, _ := h.srv.Build(1)
	assert.Equal(t, "pending", b.Status, "the abort takes a moment")
	assert.True(t, b.AbortRequested)
	h.clock.Advance(time.Second)
	statuses := map[int]string{}
	for _, b := range h.srv.Builds() {
		statuses[b.ID] = b.Status
	}
	assert.Equal(t, map[int]string{1: "aborted", 2: "started", 3: "aborted"}, statuses, "build 2 is stuck on a dead worker")
	h.expect(t, "PUT", "/api/v1/builds/2/abort?force", "", http.StatusNoContent)
	b, _ = h.srv.Build(2)
	assert.Equal(t, "aborted", b.Status)
}

func TestSim_FaultsLatencyAndCallLog(t *testing.T) {
	h := newHarness(t, *concoursesim.NewWorld().RunningWorkers("w", 1))
	h.srv.InjectFault(concoursesim.Fault{Method: "GET", Path: "/api/v1/work*", Status: 502, Times: 2})
	for _, want := range []int{502, 502, 200} {
		resp := h.do(t, "GET", "/api/v1/workers", "", "admin")
		_ = resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode)
	}
	assert.Equal(t, 3, h.srv.CountCalls("GET", "/api/v1/workers"))
	calls := h.srv.Calls()
	assert.Equal(t, concoursesim.Call{Method: "GET", Path: "/api/v1/workers", Status: 200, User: "admin"}, calls[len(calls)-1])

	h.srv.SetLatency(30 * time.Millisecond)
	start := time.Now()
	resp := h.do(t, "GET", "/api/v1/info", "", "anonymous")
	_ = resp.Body.Close()
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)

	h.srv.ExpireTokens()
	resp = h.do(t, "GET", "/api/v1/workers", "", "bad-token")
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, "not authorized", string(body))
}

func TestLoadWorld(t *testing.T) {
	yamlWorld := `
cluster_name: infra-prd
users:
  - {name: bob, password: bob, teams: {main: member}}
workers:
  - {name: w-0, state: stalled, containers: 236, age: 38d}
  - {name: w-1, containers: 228, age: 38d}
pipelines:
  - name: app
    jobs:
      - {name: deploy, serial: true, tasks: [render, apply]}
      - {name: unit, tasks: [test], duration: 2m}
    resources: [{name: src, type: git, caches: 3}]
    resource_types: [{name: registry-image, type: registry-image}]
builds:
  - {pipeline: app, job: deploy, status: started, age: 3h}
  - {pipeline: app, job: deploy, status: pending, count: 300}
  - {pipeline: app, job: unit, status: errored, count: 3, age: 90m, log: ["fetching registry.example.com/nix"], error: image fetching failed}
`
	w, err := concoursesim.LoadWorld([]byte(yamlWorld))
	require.NoError(t, err)
	assert.Equal(t, 38*24*time.Hour, w.Workers[0].Age.D())
	h := newHarness(t, w)
	counts := h.srv.CountBuilds("app")
	assert.Equal(t, map[string]int{"started": 1, "pending": 300, "errored": 3}, counts)
	ws := h.srv.Workers()
	assert.Equal(t, "stalled", ws[0].State)

	jsonWorld := `{"workers":[{"name":"w-0"}],"pipelines":[{"name":"p","jobs":[{"name":"j"}]}],"builds":[{"pipeline":"p","job":"j","count":2}]}`
	w, err = concoursesim.LoadWorld([]byte(jsonWorld))
	require.NoError(t, err)
	assert.Equal(t, 2, w.Builds[0].Count)

	tests := map[string]string{
		"unknown field":    "workerz: []",
		"unknown pipeline": "builds: [{pipeline: nope, job: j}]",
		"unknown job":      "pipelines: [{name: p}]\nbuilds: [{pipeline: p, job: j}]",
		"bad state":        "workers: [{name: w, state: sleeping}]",
		"bad duration":     "workers: [{name: w, age: forever}]",
	}
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := concoursesim.LoadWorld([]byte(doc))
			assert.Error(t, err)
		})
	}
}

func TestDemoWorld(t *testing.T) {
	h := newHarness(t, *concoursesim.DemoWorld())
	h.clock.Advance(time.Minute) // scheduler ticks: the queue stays blocked
	assert.Equal(t, 300, h.srv.CountBuilds("caascad-alert-prepare")["pending"])
	assert.Equal(t, 3, h.srv.CountBuilds("app")["errored"])
	var workers []map[string]any
	h.getJSON(t, "/api/v1/workers", &workers)
	assert.Len(t, workers, 4)
}

// As recorded on a real Concourse 8.2.5: a build running on a worker killed
// with SIGKILL stays started while the worker is stalled, and errors with
// "unknown handle" once the worker comes back.
func TestSim_BuildOnAKilledWorkerErrorsWhenItReturns(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "demo", Jobs: []concoursesim.Job{{Name: "slow", Duration: concoursesim.Duration(20 * time.Second), Log: []string{"sleeping"}}}})
	w.AddBuilds(concoursesim.Build{ID: 1, Pipeline: "demo", Job: "slow", Status: "started", Worker: "w-0", Age: concoursesim.Duration(time.Second)})
	h := newHarness(t, *w)
	require.NoError(t, h.srv.StopHeartbeat("w-0")) // SIGKILL
	h.clock.Advance(70 * time.Second)
	ws, _ := h.srv.Worker("w-0")
	require.Equal(t, "stalled", ws.State)
	b, _ := h.srv.Build(1)
	assert.Equal(t, "started", b.Status, "started as long as the worker is stalled, long past its duration")
	h.clock.Advance(10 * time.Minute)
	b, _ = h.srv.Build(1)
	assert.Equal(t, "started", b.Status)

	h.srv.ResumeHeartbeat("w-0")
	h.clock.Advance(time.Second)
	b, _ = h.srv.Build(1)
	assert.Equal(t, "errored", b.Status)
	resp := h.do(t, "GET", "/api/v1/builds/1/events", "", "admin")
	defer resp.Body.Close()
	var stream strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && sc.Text() != "event: end" { // the stream stays open after its end
		stream.WriteString(sc.Text() + "\n")
	}
	assert.Contains(t, stream.String(), `"message":"unknown handle"`)
	assert.Contains(t, stream.String(), "sleeping", "after the lines it had printed")
}

// The ATC finishes aborted pending builds in id order (measured on
// Concourse's newest source, ../shared/concourse/README.md): an abort of a
// pending build only sets its flag; the build starter walks the job's
// pending builds oldest first, finishes the aborted ones and stops at the
// first that is not aborted and cannot start (a busy serial job). So 100
// builds aborted newest first all stay pending until the oldest is aborted.
func TestSim_AbortedPendingBuildsFinishInIDOrder(t *testing.T) {
	queue := func() *concoursesim.World {
		return concoursesim.NewWorld().RunningWorkers("w", 1).PendingBuilds("main", "queue", "deploy", 100)
	}
	pendingIDs := func(h *harness) []int {
		var ids []int
		for _, b := range h.srv.Builds() {
			if b.Status == "pending" {
				ids = append(ids, b.ID)
			}
		}
		return ids
	}
	statuses := func(h *harness, ids []int) map[string]int {
		out := map[string]int{}
		for _, id := range ids {
			b, _ := h.srv.Build(id)
			out[b.Status]++
		}
		return out
	}

	t.Run("aborted newest first, nothing finishes until the oldest is aborted", func(t *testing.T) {
		h := newHarness(t, *queue(), concoursesim.WithAbortDelay(0))
		ids := pendingIDs(h)
		require.Len(t, ids, 100)
		for k := len(ids) - 1; k >= 1; k-- {
			h.expect(t, "PUT", "/api/v1/builds/"+itoa(ids[k])+"/abort", "", http.StatusNoContent)
		}
		h.clock.Advance(30 * time.Second)
		assert.Equal(t, map[string]int{"pending": 100}, statuses(h, ids), "behind the oldest pending build, which is not aborted and cannot start")
		b, _ := h.srv.Build(ids[50])
		assert.True(t, b.AbortRequested, "the flag is set")
		h.expect(t, "PUT", "/api/v1/builds/"+itoa(ids[0])+"/abort", "", http.StatusNoContent)
		h.clock.Advance(time.Millisecond)
		assert.Equal(t, map[string]int{"aborted": 100}, statuses(h, ids))
	})

	t.Run("aborted oldest first, each finishes as its abort arrives", func(t *testing.T) {
		h := newHarness(t, *queue(), concoursesim.WithAbortDelay(0))
		ids := pendingIDs(h)
		for k, id := range ids[:50] {
			h.expect(t, "PUT", "/api/v1/builds/"+itoa(id)+"/abort", "", http.StatusNoContent)
			h.clock.Advance(time.Millisecond)
			b, _ := h.srv.Build(id)
			require.Equal(t, "aborted", b.Status, "build %d (#%d) while the others are still being sent", id, k)
		}
		assert.Equal(t, map[string]int{"aborted": 50, "pending": 50}, statuses(h, ids))
	})

	t.Run("at the scheduler's rate, in id order", func(t *testing.T) {
		h := newHarness(t, *queue(), concoursesim.WithAbortDelay(0), concoursesim.WithAbortRate(10))
		ids := pendingIDs(h)
		for _, id := range ids {
			h.expect(t, "PUT", "/api/v1/builds/"+itoa(id)+"/abort", "", http.StatusNoContent)
		}
		h.clock.Advance(time.Second)
		got := statuses(h, ids)
		assert.InDelta(t, 11, got["aborted"], 1, "10 per second")
		for k, id := range ids {
			b, _ := h.srv.Build(id)
			if want := k < got["aborted"]; want != (b.Status == "aborted") {
				t.Fatalf("build %d is %s: the aborted ones must be the oldest", id, b.Status)
			}
		}
		h.clock.Advance(10 * time.Second)
		assert.Equal(t, map[string]int{"aborted": 100}, statuses(h, ids))
	})

	t.Run("a build that can start does not block; one that cannot, does", func(t *testing.T) {
		w := concoursesim.NewWorld().RunningWorkers("w", 1)
		w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}, {Name: "held", Paused: true}}})
		w.AddBuilds(
			concoursesim.Build{ID: 1, Pipeline: "app", Job: "unit"}, // can start at the next scheduler pass
			concoursesim.Build{ID: 2, Pipeline: "app", Job: "unit"},
			concoursesim.Build{ID: 3, Pipeline: "app", Job: "held"}, // paused job: cannot start
			concoursesim.Build{ID: 4, Pipeline: "app", Job: "held"},
		)
		h := newHarness(t, *w, concoursesim.WithAbortDelay(0))
		h.expect(t, "PUT", "/api/v1/builds/2/abort", "", http.StatusNoContent)
		h.expect(t, "PUT", "/api/v1/builds/4/abort", "", http.StatusNoContent)
		h.clock.Advance(time.Second)
		assert.Equal(t, map[string]int{"pending": 4}, statuses(h, []int{1, 2, 3, 4}), "no scheduler pass yet: build 1 waits, so does 2")
		h.clock.Advance(10 * time.Second)
		assert.Equal(t, map[string]int{"started": 1, "aborted": 1, "pending": 2}, statuses(h, []int{1, 2, 3, 4}))
		b, _ := h.srv.Build(4)
		assert.Equal(t, "pending", b.Status, "behind build 3 of the paused job")
	})
}

// GET /api/v1/teams is atc.Team per team the caller may view (API.md
// §2.5): id, name and the auth config, role → users ("local:<user>") and
// groups; an admin sees every team, a member only its own.
func TestSim_TeamsWithTheirAuth(t *testing.T) {
	w := concoursesim.NewWorld().AddUser("pam", "pam", map[string]string{"payments": concoursesim.RoleMember}).
		AddUser("vic", "vic", map[string]string{"payments": concoursesim.RoleViewer, "platform": concoursesim.RoleOwner})
	h := newHarness(t, *w)
	var teams []map[string]any
	h.getJSON(t, "/api/v1/teams", &teams)
	var names []string
	for _, tm := range teams {
		names = append(names, tm["name"].(string))
		assert.IsType(t, float64(0), tm["id"])
	}
	assert.Equal(t, []string{"main", "payments", "platform"}, names)
	assert.Equal(t, map[string]any{
		"member": map[string]any{"users": []any{"local:pam"}, "groups": []any{}},
		"viewer": map[string]any{"users": []any{"local:vic"}, "groups": []any{}},
	}, teams[1]["auth"])

	resp := h.do(t, "GET", "/api/v1/teams", "", "pam")
	defer resp.Body.Close()
	var mine []map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&mine))
	require.Len(t, mine, 1)
	assert.Equal(t, "payments", mine[0]["name"])
}

// With --stalled-worker-timeout (Concourse 8.3) the ATC deletes a worker
// stalled longer than the timeout by itself, at the worker collector's next
// pass (every 30 s): measured with 2m, a worker killed at 12:32:40 stalled
// at 12:33:36 and was deleted at 12:36:06 (../shared/concourse/README.md).
// An ephemeral worker is deleted when its heartbeat expires, never stalled.
func TestSim_TheATCRemovesWorkersByItself(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 3)
	w.StalledWorkerTimeout = concoursesim.Duration(2 * time.Minute)
	w.Workers[2].Ephemeral = true
	h := newHarness(t, *w)
	require.NoError(t, h.srv.StopHeartbeat("w-0"))
	require.NoError(t, h.srv.StopHeartbeat("w-2"))
	h.clock.Advance(45 * time.Second)
	_, ok := h.srv.Worker("w-2")
	assert.True(t, ok, "an ephemeral worker lives out its heartbeat TTL")
	h.clock.Advance(16 * time.Second)
	st, ok := h.srv.Worker("w-0")
	require.True(t, ok)
	assert.Equal(t, "stalled", st.State)
	_, ok = h.srv.Worker("w-2")
	assert.False(t, ok, "an ephemeral worker is deleted at the collector's pass, never listed stalled")

	h.clock.Advance(time.Minute + 58*time.Second) // 2m59s after the heartbeat stopped: stalled 1m59s
	_, ok = h.srv.Worker("w-0")
	assert.True(t, ok, "stalled for less than the timeout")
	h.clock.Advance(31 * time.Second) // stalled 2m30s: the collector's pass after the timeout
	_, ok = h.srv.Worker("w-0")
	assert.False(t, ok, "deleted by the ATC itself")
	var ws []struct{ Name string }
	h.getJSON(t, "/api/v1/workers", &ws)
	assert.Len(t, ws, 1, "only w-1 is listed")
	resp := h.do(t, "PUT", "/api/v1/workers/w-0/prune", "", "admin")
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "a prune of it answers 404")

	t.Run("no timeout: a stalled worker stays", func(t *testing.T) {
		h := newHarness(t, *concoursesim.NewWorld().StalledWorker("w-0"))
		h.clock.Advance(24 * time.Hour)
		_, ok := h.srv.Worker("w-0")
		assert.True(t, ok)
	})
	t.Run("a worker stalled before the start counts from then", func(t *testing.T) {
		w := concoursesim.NewWorld()
		w.StalledWorkerTimeout = concoursesim.Duration(10 * time.Minute)
		w.AddWorkers(concoursesim.Worker{Name: "w-0", State: "stalled", StalledFor: concoursesim.Duration(9 * time.Minute)})
		h := newHarness(t, *w)
		h.clock.Advance(30 * time.Second)
		_, ok := h.srv.Worker("w-0")
		assert.True(t, ok)
		h.clock.Advance(60 * time.Second)
		_, ok = h.srv.Worker("w-0")
		assert.False(t, ok)
	})
}
