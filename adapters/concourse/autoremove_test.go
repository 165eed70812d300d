package concourse

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// provEnvWith is newProvEnv for a target with stalled_worker_timeout.
func provEnvWith(t *testing.T, w *concoursesim.World, timeout time.Duration) *provEnv {
	t.Helper()
	e := newProvEnv(t, w)
	c, err := New(TargetConfig{Name: "infra-prd", URL: e.srv.URL(), Username: "admin", Password: "admin", StalledWorkerTimeout: timeout},
		WithClock(e.clock.Now), WithPollInterval(time.Millisecond))
	require.NoError(t, err)
	e.c = c
	e.p, err = NewProvider(map[string]*Client{"infra-prd": c}, ProviderOptions{Now: e.clock.Now})
	require.NoError(t, err)
	return e
}

// With the target's stalled_worker_timeout (the web node's
// --stalled-worker-timeout), what lists a stalled worker says when Concourse
// removes it by itself; the time is a bound: first seen stalled + the
// timeout + one pass of the worker collector.
func TestAutoRemoval_SaidWhereTheWorkerIs(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("worker", 2).StalledWorker("worker-9")
	e := provEnvWith(t, w, 10*time.Minute)
	first := e.clock.Now()
	want := "Concourse removes worker-9 by itself before " + clockUTC(first.Add(10*time.Minute+30*time.Second)) + " unless it heartbeats again"

	res, err := e.do(t, "concourse.workers", nil)
	require.NoError(t, err)
	assert.Equal(t, "2 running, 1 stalled", res.Summary)
	assert.Equal(t, want, res.Detail)
	e.clock.Advance(4 * time.Minute)
	res, err = e.do(t, "concourse.worker", opmodel.Args{"name": "worker-9"})
	require.NoError(t, err)
	assert.Contains(t, res.Summary, "worker-9 is stalled")
	d := decoded(t, res)
	assert.Equal(t, want, d["auto_remove"], "the time does not move: it counts from when it was first seen stalled")
	assert.EqualValues(t, (6*time.Minute + 30*time.Second).Seconds(), d["auto_remove_in_seconds"])

	pl := e.plan(t, "concourse.prune_worker", opmodel.Args{"name": "worker-9"})
	assert.Contains(t, pl.Notes, want, "the gate says it")
	res, err = e.do(t, "concourse.find_worker", opmodel.Args{"worker": "worker-9"})
	require.NoError(t, err)
	assert.Equal(t, "worker-9 is stalled (236 containers, up 38d) · worker=worker-9; Concourse removes it by itself before 03:11 UTC unless it heartbeats again",
		res.Summary, "the worker named once")

	t.Run("the ATC removed it: the re-check names the timeout", func(t *testing.T) {
		require.NoError(t, e.srv.RemoveWorker("worker-9"))
		re := e.recheck(t, "concourse.prune_worker", opmodel.Args{"name": "worker-9"}, pl)
		assert.Equal(t, "worker-9 is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout of 10m on infra-prd, or someone else)", re.FoundOf("worker", "worker-9"))
	})
	t.Run("overdue: the configured timeout may not be the web node's", func(t *testing.T) {
		e := provEnvWith(t, concoursesim.NewWorld().StalledWorker("worker-1"), 5*time.Minute)
		_, err := e.c.Workers(context.Background())
		require.NoError(t, err)
		e.clock.Advance(20 * time.Minute)
		res, err := e.do(t, "concourse.worker", opmodel.Args{"name": "worker-1"})
		require.NoError(t, err)
		d := decoded(t, res)
		assert.Contains(t, d["auto_remove"], "Concourse should have removed worker-1 by itself by")
		assert.Contains(t, d["auto_remove"], "check that targets.infra-prd.stalled_worker_timeout is the web node's --stalled-worker-timeout")
		assert.Less(t, d["auto_remove_in_seconds"], 0.0)
	})
	t.Run("no timeout configured: nothing is said", func(t *testing.T) {
		e := provEnvWith(t, concoursesim.NewWorld().StalledWorker("worker-1"), 0)
		res, err := e.do(t, "concourse.worker", opmodel.Args{"name": "worker-1"})
		require.NoError(t, err)
		assert.Equal(t, "", decoded(t, res)["auto_remove"])
	})
	t.Run("an ephemeral worker", func(t *testing.T) {
		w := concoursesim.NewWorld()
		w.AddWorkers(concoursesim.Worker{Name: "eph-1", Ephemeral: true})
		e := provEnvWith(t, w, 0)
		res, err := e.do(t, "concourse.worker", opmodel.Args{"name": "eph-1"})
		require.NoError(t, err)
		assert.Equal(t, "eph-1 is ephemeral: Concourse removes it by itself about a minute after it stops heartbeating", decoded(t, res)["auto_remove"])
		pl := e.plan(t, "concourse.land_worker", opmodel.Args{"name": "eph-1"})
		require.NoError(t, e.srv.StopHeartbeat("eph-1"))
		e.clock.Advance(2 * time.Minute)
		re := e.recheck(t, "concourse.land_worker", opmodel.Args{"name": "eph-1"}, pl)
		assert.Equal(t, "eph-1 is no longer registered: it was removed while the approval was asked (it is ephemeral: Concourse removes those about a minute after they stop heartbeating; or someone else)", re.FoundOf("worker", "eph-1"))
	})
}

func TestClockUTC_RoundsTheBoundUp(t *testing.T) {
	assert.Equal(t, "14:32 UTC", clockUTC(time.Date(2026, 1, 2, 14, 31, 30, 0, time.UTC)))
	assert.Equal(t, "14:31 UTC", clockUTC(time.Date(2026, 1, 2, 14, 31, 0, 0, time.UTC)))
}

func TestShortDuration(t *testing.T) {
	assert.Equal(t, "5m", shortDuration(5*time.Minute))
	assert.Equal(t, "2h", shortDuration(2*time.Hour))
	assert.Equal(t, "1h30m", shortDuration(90*time.Minute))
	assert.Equal(t, "45s", shortDuration(45*time.Second))
}
