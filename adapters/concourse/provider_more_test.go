package concourse

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

func TestOpBuildEventsScan_ThenCheckResourceType(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.build_events_scan", nil)
	require.NoError(t, err)
	assert.Equal(t, `"image fetching failed" in 4 of 4 errored builds (2 pipelines: main/app, main/docs)`, res.Summary)
	assert.True(t, res.Warn)
	d := decoded(t, res)
	assert.Equal(t, []any{"main/app", "main/docs"}, d["pipelines"])
	m := d["matches"].([]any)[0].(map[string]any)
	assert.Equal(t, "image fetching failed", m["line"])
	assert.Equal(t, "error", m["event"])
	assert.NotEmpty(t, m["origin"])
	assert.Len(t, m["before"], 3)
	assert.Contains(t, res.Detail, "  > image fetching failed")

	// the next step of the runbook feeds the pipelines to check_resource_type
	res, err = e.do(t, "concourse.check_resource_type", opmodel.Args{"pipelines": d["pipelines"]})
	require.NoError(t, err)
	assert.Equal(t, "checked registry-image in 2 pipelines", res.Summary)
	var checks int
	for _, b := range e.srv.Builds() {
		if b.Check {
			checks++
		}
	}
	assert.Equal(t, 2, checks)

	res, err = e.do(t, "concourse.check_resource_type", opmodel.Args{"pipeline": "deploy/caascad-alert-prepare"})
	require.NoError(t, err)
	assert.Equal(t, opmodel.OutcomeAlreadyDone, res.Items[0].Outcome)
	assert.Contains(t, res.Items[0].Reason, "no custom resource type")

	res, err = e.do(t, "concourse.build_events_scan", opmodel.Args{"pattern": "MANIFEST_[A-Z]+", "regex": true, "pipeline": "docs"})
	require.NoError(t, err)
	assert.Equal(t, float64(1), decoded(t, res)["builds_matched"])
}

func TestOpPipelinesPauseUnpause(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.pipelines", nil)
	require.NoError(t, err)
	assert.Equal(t, "3 pipelines", res.Summary)

	args := opmodel.Args{"pipeline": "deploy/caascad-alert-prepare"}
	pl := e.plan(t, "concourse.pause_pipeline", args)
	require.Len(t, pl.Items, 1)
	assert.Equal(t, "pause 1 pipeline: deploy/caascad-alert-prepare", pl.Summary)
	res, err = e.apply(t, "concourse.pause_pipeline", args, pl)
	require.NoError(t, err)
	assert.Equal(t, "paused 1 of 1: deploy/caascad-alert-prepare", res.Summary)
	p, _ := e.srv.Pipeline("deploy", "caascad-alert-prepare")
	assert.True(t, p.Paused)

	pl = e.plan(t, "concourse.pause_pipeline", args)
	assert.True(t, pl.Empty())
	assert.Contains(t, pl.Notes[0], "already paused (by admin)")

	paused, err := e.c.PausedPipelines(context.Background(), AllTeams)
	require.NoError(t, err)
	require.Len(t, paused, 1)
	assert.Equal(t, "deploy/caascad-alert-prepare", paused[0].Ref())

	res, err = e.do(t, "concourse.pipelines", opmodel.Args{"paused": true})
	require.NoError(t, err)
	assert.Equal(t, []any{"deploy/caascad-alert-prepare"}, decoded(t, res)["paused"])

	res, err = e.do(t, "concourse.unpause_pipeline", opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepare"})
	require.NoError(t, err)
	assert.Equal(t, "unpaused deploy/caascad-alert-prepare", res.Summary)
	assert.Equal(t, true, decoded(t, res)["was_paused"])

	_, err = e.op(t, "concourse.pause_pipeline").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "nope"}})
	assert.EqualError(t, err, "infra-prd: pipeline `main/nope` not found (`fly -t 'infra-prd' pipelines -a` lists every pipeline)")
	assert.ErrorIs(t, err, ErrNotFound)

	// the name in another team, a prefix, a typo: the error names the pipeline meant
	_, err = e.op(t, "concourse.pause_pipeline").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "caascad-alert-prepare"}})
	assert.ErrorContains(t, err, "pipeline `main/caascad-alert-prepare` not found; it is in team `deploy`: run again with `team=deploy`")
	_, err = e.do(t, "concourse.resources", opmodel.Args{"team": "deploy", "pipeline": "caascad-alert"})
	assert.ErrorContains(t, err, "pipeline `deploy/caascad-alert` not found; did you mean `deploy/caascad-alert-prepare`?")
	_, err = e.do(t, "concourse.jobs", opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepar"})
	assert.ErrorContains(t, err, "did you mean `deploy/caascad-alert-prepare`?")
	_, err = e.do(t, "concourse.unpause_pipeline", opmodel.Args{"pipeline": "ap"})
	assert.ErrorContains(t, err, "pipeline `main/ap` not found; did you mean `main/app`?")
}

func TestOpJobsResourcesTypes(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.jobs", opmodel.Args{"pipeline": "app"})
	require.NoError(t, err)
	assert.Equal(t, "2 jobs; last builds: 1 succeeded, 1 errored", res.Summary)
	res, err = e.do(t, "concourse.resources", opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepare"})
	require.NoError(t, err)
	assert.Equal(t, []any{"repo", "alert-image"}, decoded(t, res)["names"])
	res, err = e.do(t, "concourse.resource_types", opmodel.Args{"pipeline": "app"})
	require.NoError(t, err)
	assert.Equal(t, []any{"registry-image"}, decoded(t, res)["names"])
	_, err = e.do(t, "concourse.jobs", nil)
	assert.ErrorContains(t, err, `"pipeline" is required`)
	_, err = e.do(t, "concourse.jobs", opmodel.Args{"pipeline": "nope"})
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestOpCheckAndClearResourceCache(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	args := opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepare"}
	pl := e.plan(t, "concourse.clear_resource_cache", args)
	assert.Equal(t, []string{"deploy/caascad-alert-prepare/repo", "deploy/caascad-alert-prepare/alert-image"}, planItemNames(pl))
	res, err := e.apply(t, "concourse.clear_resource_cache", args, pl)
	require.NoError(t, err)
	assert.Equal(t, "5 caches removed from 2 resources", res.Summary)
	assert.Equal(t, 0, e.srv.ResourceCaches("deploy", "caascad-alert-prepare", "repo"))

	res, err = e.do(t, "concourse.check_resource", args)
	require.NoError(t, err)
	assert.Equal(t, "checked 2 of 2", res.Summary[:len("checked 2 of 2")])
	assert.Len(t, decoded(t, res)["checks"], 2)

	_, err = e.op(t, "concourse.clear_resource_cache").Plan(context.Background(),
		opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepare", "resource": "nope"}})
	assert.ErrorContains(t, err, `has no resource "nope"`)
}

func TestOpClearTaskCache_NestedSteps(t *testing.T) {
	w := concoursesim.NewWorld()
	w.AddPipeline(concoursesim.Pipeline{Name: "app",
		Jobs: []concoursesim.Job{{Name: "build", Tasks: []string{"compile", "test"}, TaskCaches: 2}},
		Config: map[string]any{"jobs": []any{map[string]any{"name": "build", "plan": []any{
			map[string]any{"task": "compile"},
			map[string]any{"in_parallel": []any{map[string]any{"try": map[string]any{"task": "test"}}}},
		}}}},
	})
	e := newProvEnv(t, w)
	args := opmodel.Args{"pipeline": "app", "job": "build"}
	pl := e.plan(t, "concourse.clear_task_cache", args)
	assert.Equal(t, []string{"main/app/build/compile", "main/app/build/test"}, planItemNames(pl))
	res, err := e.apply(t, "concourse.clear_task_cache", args, pl)
	require.NoError(t, err)
	assert.Equal(t, "4 caches removed from 2 task steps", res.Summary)

	_, err = e.op(t, "concourse.clear_task_cache").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "app", "job": "deploy"}})
	assert.ErrorContains(t, err, `has no job "deploy"; its jobs are: build`)
	_, err = e.op(t, "concourse.clear_task_cache").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "app", "job": "build", "step": "lint"}})
	assert.ErrorContains(t, err, `has no task step "lint"; its task steps are: compile, test`)
}

func TestOpInfo(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.info", nil)
	require.NoError(t, err)
	assert.Equal(t, "Concourse 8.2.5 (cluster infra-prd), logged in as admin (admin)", res.Summary)
}

func TestOpTSAConnectivity(t *testing.T) {
	srv, err := concoursesim.New(*concoursesim.NewWorld(), concoursesim.WithTSA())
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL(), TSA: srv.TSAAddr()})
	require.NoError(t, err)
	p, err := NewProvider(map[string]*Client{"infra-prd": c}, ProviderOptions{})
	require.NoError(t, err)
	run := func(args opmodel.Args) opmodel.Result {
		t.Helper()
		for _, op := range p.Ops() {
			if op.Name == "concourse.tsa_connectivity" {
				res, err := op.Do(context.Background(), opmodel.Call{Target: "infra-prd", Args: args})
				require.NoError(t, err)
				return res
			}
		}
		t.Fatal("no tsa_connectivity")
		return opmodel.Result{}
	}

	res := run(nil)
	assert.True(t, strings.HasPrefix(res.Summary, "TSA reachable: 127.0.0.1:"), res.Summary)
	assert.False(t, res.Warn)
	d := decoded(t, res)
	assert.Equal(t, true, d["connected"])
	assert.Equal(t, []any{"127.0.0.1"}, d["ips"])

	res = run(opmodel.Args{"address": closedAddr, "timeout": "1s"})
	assert.True(t, res.Warn)
	assert.Contains(t, res.Summary, "TSA unreachable")
	assert.Equal(t, false, decoded(t, res)["connected"])

	p.opts.LookupHost = func(context.Context, string) ([]string, error) {
		return nil, errors.New("no such host")
	}
	res = run(opmodel.Args{"address": "ci.nowhere.invalid:2222"})
	assert.Equal(t, "DNS lookup of ci.nowhere.invalid failed: no such host; check the resolver and the name", res.Summary)
	assert.Equal(t, false, decoded(t, res)["resolved"])
}

func TestPausedJobs(t *testing.T) {
	w := concoursesim.NewWorld()
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}, {Name: "deploy", Paused: true}}})
	e := newProvEnv(t, w)
	js, err := e.c.PausedJobs(context.Background(), "", "app")
	require.NoError(t, err)
	require.Len(t, js, 1)
	assert.Equal(t, "deploy", js[0].Name)
	res, err := e.do(t, "concourse.jobs", opmodel.Args{"pipeline": "app", "paused": true})
	require.NoError(t, err)
	assert.Equal(t, []any{"deploy"}, decoded(t, res)["paused"])
}

// fly check-resource-type waits for the check build and prints its result;
// so does the operation: a check that errors fails the step with the
// server's error, as seen on a real Concourse 8.2.5.
func TestOpChecks_FollowTheCheckBuild(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1)
	w.AddPipeline(concoursesim.Pipeline{Name: "app",
		Resources:     []concoursesim.Resource{{Name: "src", Type: "git"}, {Name: "image", Type: "registry-image", CheckError: true}},
		ResourceTypes: []concoursesim.ResourceType{{Name: "registry-image", Type: "registry-image", CheckError: "create resource config: base resource type not found: registry-image"}},
		Jobs:          []concoursesim.Job{{Name: "unit"}},
	})
	w.AddPipeline(concoursesim.Pipeline{Name: "docs",
		ResourceTypes: []concoursesim.ResourceType{{Name: "registry-image", Type: "registry-image"}}, Jobs: []concoursesim.Job{{Name: "build"}}})
	e := newProvEnv(t, w)

	res, err := e.do(t, "concourse.check_resource_type", opmodel.Args{"pipeline": "docs"})
	require.NoError(t, err)
	assert.Equal(t, "checked registry-image in 1 pipeline", res.Summary)
	d := decoded(t, res)
	assert.Equal(t, "succeeded", d["checks"].([]any)[0].(map[string]any)["status"])

	res, err = e.do(t, "concourse.check_resource_type", opmodel.Args{"pipelines": "main/app, main/docs"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "infra-prd: check of main/app failed: check build")
	assert.Contains(t, err.Error(), "errored: create resource config: base resource type not found: registry-image")
	d = decoded(t, res)
	assert.Equal(t, []any{"main/docs"}, d["checked"])
	assert.Equal(t, []any{"main/app"}, d["failed"])
	assert.Equal(t, "errored", d["checks"].([]any)[0].(map[string]any)["status"])

	res, err = e.do(t, "concourse.check_resource", opmodel.Args{"pipeline": "app"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "check of image failed")
	assert.Equal(t, "checked 1 of 2: src; 1 failed", res.Summary)
}

// Operations return typed structs (as the PostgreSQL provider does), never
// map[string]any: the field names runbooks use are the JSON tags.
func TestOps_ResultDataIsTyped(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld(), concoursesim.WithTSA())
	pipe := opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepare"}
	for name, args := range map[string]opmodel.Args{
		"concourse.workers": {}, "concourse.worker": {"name": "caascad-ci-workers-infra-infra-prd-0"},
		"concourse.find_worker": {"worker": "0"}, "concourse.builds": {"status": "pending"},
		"concourse.build_events_scan": {}, "concourse.pipelines": {}, "concourse.jobs": pipe,
		"concourse.resources": pipe, "concourse.resource_types": {"team": "main", "pipeline": "app"},
		"concourse.info": {}, "concourse.tsa_connectivity": {"address": "127.0.0.1:1", "timeout": "100ms"},
	} {
		res, err := e.do(t, name, args)
		require.NoError(t, err, name)
		require.NotNil(t, res.Data, name)
		assert.Equal(t, reflect.Struct, reflect.TypeOf(res.Data).Kind(), "%s returns %T", name, res.Data)
	}
	pl := e.plan(t, "concourse.prune_worker", opmodel.Args{"name": "caascad-ci-workers-infra-infra-prd-0"})
	res, err := e.apply(t, "concourse.prune_worker", opmodel.Args{"name": "caascad-ci-workers-infra-infra-prd-0"}, pl)
	require.NoError(t, err)
	require.IsType(t, PruneData{}, res.Data)
	d := decoded(t, res)
	assert.Equal(t, []any{"caascad-ci-workers-infra-infra-prd-0"}, d["pruned"])
	assert.Equal(t, []any{}, d["already_done"], "lists are never null")
}

// A listing that matches no worker speaks of what was asked, never "no
// workers registered" while others are (issue 39: "Check that worker-1 is
// running again — no workers registered" with worker-0 running).
func TestOpWorkers_NothingMatchedSaysWhatWasAsked(t *testing.T) {
	ws := []Worker{{Name: "worker-0", State: WorkerRunning}, {Name: "worker-2", State: WorkerLanded}}
	assert.Equal(t, "worker-1 is not registered", noWorkersLine("worker-1", nil, ws))
	assert.Equal(t, "worker-0 is running, not stalled", noWorkersLine("worker-0", []string{"stalled"}, ws))
	assert.Equal(t, "no worker is stalled (2 workers registered)", noWorkersLine("", []string{"stalled"}, ws))
	assert.Equal(t, "no worker matches ci-.* (2 workers registered)", noWorkersLine("ci-.*", nil, ws))
	assert.Equal(t, "no workers registered", noWorkersLine("", nil, nil))

	e := newProvEnv(t, concoursesim.NewWorld().RunningWorkers("worker", 1))
	res, err := e.do(t, "concourse.workers", opmodel.Args{"name": "worker-1"})
	require.NoError(t, err)
	assert.Equal(t, "worker-1 is not registered", res.Summary)
}
