package concourse

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// recheck resolves the plan of op again as the engine does right before
// executing an approved plan (Call.Approved).
func (e *provEnv) recheck(t *testing.T, name string, args opmodel.Args, approved opmodel.Plan) opmodel.Plan {
	t.Helper()
	pl, err := e.op(t, name).Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: args, Approved: &approved})
	require.NoError(t, err)
	return pl
}

// When the re-check before executing finds an object of the approved plan
// moved first, every destructive operation says what it found of it, by
// name and cause (issue 39).
func TestDestructiveOps_SayWhatMovedFirst(t *testing.T) {
	t.Run("prune: the worker was removed (stalled-worker-timeout)", func(t *testing.T) {
		e := newProvEnv(t, concoursesim.NewWorld().RunningWorkers("worker", 1).StalledWorker("worker-1"))
		args := opmodel.Args{"name": "worker-1"}
		approved := e.plan(t, "concourse.prune_worker", args)
		require.Len(t, approved.Items, 1)
		require.NoError(t, e.srv.RemoveWorker("worker-1"))
		pl := e.recheck(t, "concourse.prune_worker", args, approved)
		assert.True(t, pl.Empty())
		assert.Equal(t, "nothing to prune", pl.Summary)
		assert.Equal(t, []opmodel.Found{{Kind: "worker", ID: "worker-1",
			Text: "worker-1 is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout or someone else)", Gone: true}}, pl.Found)
		assert.Equal(t, "worker-1 is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout or someone else) — nothing to prune",
			opmodel.NothingToDo(pl, &approved).Summary)
	})
	t.Run("prune: the worker heartbeats again", func(t *testing.T) {
		e := newProvEnv(t, concoursesim.NewWorld().StalledWorker("worker-1"))
		args := opmodel.Args{"name": "worker-1"}
		approved := e.plan(t, "concourse.prune_worker", args)
		e.srv.ResumeHeartbeat("worker-1")
		pl := e.recheck(t, "concourse.prune_worker", args, approved)
		assert.Equal(t, "worker-1 is running again: it heartbeats again (Concourse refuses to prune a running worker)", pl.FoundOf("worker", "worker-1"))
	})
	t.Run("land: someone landed it", func(t *testing.T) {
		e := newProvEnv(t, concoursesim.NewWorld().RunningWorkers("worker", 2))
		args := opmodel.Args{"name": "worker-1"}
		approved := e.plan(t, "concourse.land_worker", args)
		resp := e.put(t, "/api/v1/workers/worker-1/land", `{"team":""}`)
		require.Equal(t, http.StatusOK, resp)
		pl := e.recheck(t, "concourse.land_worker", args, approved)
		assert.True(t, pl.Empty())
		assert.Contains(t, []string{"worker-1 is already landing", "worker-1 is already landed"}, pl.FoundOf("worker", "worker-1"))
	})
	t.Run("retire: the worker is gone", func(t *testing.T) {
		e := newProvEnv(t, concoursesim.NewWorld().RunningWorkers("worker", 2))
		args := opmodel.Args{"name": "worker-1"}
		approved := e.plan(t, "concourse.retire_worker", args)
		require.NoError(t, e.srv.RemoveWorker("worker-1"))
		pl := e.recheck(t, "concourse.retire_worker", args, approved)
		assert.Contains(t, pl.FoundOf("worker", "worker-1"), "worker-1 is no longer registered")
	})
	t.Run("abort: builds finished, aborted, started", func(t *testing.T) {
		w := concoursesim.NewWorld().RunningWorkers("w", 1).PendingBuilds("main", "app", "deploy", 3)
		e := newProvEnv(t, w, concoursesim.WithAbortDelay(0))
		args := opmodel.Args{"team": "main", "pipeline": "app"}
		approved := e.plan(t, "concourse.abort_builds", args)
		require.Len(t, approved.Items, 3)
		_, err := e.srv.FinishBuilds("main", "app", "deploy", "aborted")
		require.NoError(t, err)
		pl := e.recheck(t, "concourse.abort_builds", args, approved)
		require.True(t, pl.Empty())
		for _, it := range approved.Items {
			assert.Equal(t, "build "+it.ID+" already aborted", pl.FoundOf("build", it.ID))
		}
		assert.Equal(t, 0, e.srv.CountCalls("PUT", "/api/v1/builds/*"), "the re-check sends nothing")
	})
	t.Run("abort by id: the build finished", func(t *testing.T) {
		w := concoursesim.NewWorld().RunningWorkers("w", 1).PendingBuilds("main", "app", "deploy", 1)
		e := newProvEnv(t, w)
		var id string
		for _, b := range e.srv.Builds() {
			if b.Status == "started" {
				id = itoaTest(b.ID)
			}
		}
		args := opmodel.Args{"ids": id}
		approved := e.plan(t, "concourse.abort_builds", args)
		_, err := e.srv.FinishBuilds("main", "app", "deploy", "succeeded")
		require.NoError(t, err)
		pl := e.recheck(t, "concourse.abort_builds", args, approved)
		assert.Equal(t, "build "+id+" already finished (succeeded)", pl.FoundOf("build", id))
	})
	t.Run("pause: someone paused it, or destroyed it", func(t *testing.T) {
		w := concoursesim.NewWorld()
		w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
		w.AddPipeline(concoursesim.Pipeline{Name: "docs", Jobs: []concoursesim.Job{{Name: "unit"}}})
		e := newProvEnv(t, w)
		args := opmodel.Args{"pipeline": "main/app,main/docs"}
		approved := e.plan(t, "concourse.pause_pipeline", args)
		require.Len(t, approved.Items, 2)
		require.Equal(t, http.StatusOK, e.put(t, "/api/v1/teams/main/pipelines/app/pause", ""))
		require.NoError(t, e.srv.DestroyPipeline("main", "docs"))
		pl := e.recheck(t, "concourse.pause_pipeline", args, approved)
		assert.True(t, pl.Empty())
		assert.Equal(t, "main/app is already paused (by admin)", pl.FoundOf("pipeline", "main/app"))
		assert.Equal(t, "main/docs no longer exists (deleted or renamed while the approval was asked)", pl.FoundOf("pipeline", "main/docs"))
	})
	t.Run("clear caches: the pipeline was destroyed", func(t *testing.T) {
		w := concoursesim.NewWorld()
		w.AddPipeline(concoursesim.Pipeline{Name: "app", Resources: []concoursesim.Resource{{Name: "src", Type: "git", Caches: 3}, {Name: "img", Type: "registry-image"}},
			Jobs: []concoursesim.Job{{Name: "unit", Tasks: []string{"test"}}}})
		e := newProvEnv(t, w)
		rargs := opmodel.Args{"team": "main", "pipeline": "app"}
		targs := opmodel.Args{"team": "main", "pipeline": "app", "job": "unit"}
		ra := e.plan(t, "concourse.clear_resource_cache", rargs)
		ta := e.plan(t, "concourse.clear_task_cache", targs)
		require.NoError(t, e.srv.DestroyPipeline("main", "app"))
		rp := e.recheck(t, "concourse.clear_resource_cache", rargs, ra)
		assert.True(t, rp.Empty())
		assert.Equal(t, "main/app no longer exists (deleted or renamed while the approval was asked) — nothing to clear", opmodel.NothingToDo(rp, &ra).Summary, "said once for both resources")
		tp := e.recheck(t, "concourse.clear_task_cache", targs, ta)
		assert.Equal(t, "main/app no longer exists (deleted or renamed while the approval was asked)", tp.FoundOf("task_cache", "main/app/unit/test"))
	})
	t.Run("without an approved plan, a missing object is still an error", func(t *testing.T) {
		e := newProvEnv(t, concoursesim.NewWorld())
		_, err := e.op(t, "concourse.pause_pipeline").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "main/nope"}})
		assert.ErrorContains(t, err, "not found")
	})
}

func itoaTest(n int) string { return opmodel.Args{"n": n}.String("n") }

// put sends a request to the simulator as admin (someone else with fly).
func (e *provEnv) put(t *testing.T, path, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, e.srv.URL()+path, stringsReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e.srv.Token("admin"))
	resp, err := e.srv.Client().Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
