package concourse

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

type provEnv struct {
	*simEnv
	p *Provider
}

func newProvEnv(t *testing.T, w *concoursesim.World, simOpts ...concoursesim.Option) *provEnv {
	t.Helper()
	env := newSimEnv(t, w, simOpts)
	// waits (check builds, abort verification) move the simulator's clock
	env.c.sleep = func(ctx context.Context, d time.Duration) error {
		env.clock.Advance(time.Second)
		return ctx.Err()
	}
	p, err := NewProvider(map[string]*Client{"infra-prd": env.c}, ProviderOptions{
		Now: env.clock.Now, AbortPoll: time.Millisecond, AbortTimeout: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	return &provEnv{simEnv: env, p: p}
}

func (e *provEnv) op(t *testing.T, name string) opmodel.Op {
	t.Helper()
	for _, op := range e.p.Ops() {
		if op.Name == name {
			return op
		}
	}
	t.Fatalf("no operation %s", name)
	return opmodel.Op{}
}

func (e *provEnv) do(t *testing.T, name string, args opmodel.Args) (opmodel.Result, error) {
	t.Helper()
	return e.op(t, name).Do(context.Background(), opmodel.Call{Target: "infra-prd", Args: args})
}

func (e *provEnv) plan(t *testing.T, name string, args opmodel.Args) opmodel.Plan {
	t.Helper()
	pl, err := e.op(t, name).Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: args})
	require.NoError(t, err)
	return pl
}

func (e *provEnv) apply(t *testing.T, name string, args opmodel.Args, pl opmodel.Plan) (opmodel.Result, error) {
	t.Helper()
	return e.op(t, name).Apply(context.Background(), opmodel.Call{Target: "infra-prd", Args: args}, pl)
}

// decoded returns Data as later steps see it (through JSON).
func decoded(t *testing.T, r opmodel.Result) map[string]any {
	t.Helper()
	b, err := json.Marshal(r.Data)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestProvider_RegistersEveryOperation(t *testing.T) {
	e := newProvEnv(t, concoursesim.NewWorld())
	reg, err := opmodel.NewRegistry(e.p)
	require.NoError(t, err)
	want := map[string]opmodel.Class{
		"workers": opmodel.ClassRead, "worker": opmodel.ClassRead, "find_worker": opmodel.ClassRead, "builds": opmodel.ClassRead, "build_events_scan": opmodel.ClassRead,
		"pipelines": opmodel.ClassRead, "jobs": opmodel.ClassRead, "resources": opmodel.ClassRead, "resource_types": opmodel.ClassRead,
		"tsa_connectivity": opmodel.ClassRead, "info": opmodel.ClassRead, "teams": opmodel.ClassRead,
		"check_resource": opmodel.ClassWrite, "check_resource_type": opmodel.ClassWrite, "unpause_pipeline": opmodel.ClassWrite,
		"prune_worker": opmodel.ClassDestructive, "land_worker": opmodel.ClassDestructive, "retire_worker": opmodel.ClassDestructive,
		"abort_builds": opmodel.ClassDestructive, "pause_pipeline": opmodel.ClassDestructive,
		"clear_resource_cache": opmodel.ClassDestructive, "clear_task_cache": opmodel.ClassDestructive,
	}
	assert.Len(t, reg.List(), len(want))
	for name, class := range want {
		op, ok := reg.Get("concourse." + name)
		require.True(t, ok, name)
		assert.Equal(t, class, op.Class, name)
		assert.NotEmpty(t, op.Doc, name)
	}
}

func TestProvider_UnknownTargetListsKnownOnes(t *testing.T) {
	e := newProvEnv(t, concoursesim.NewWorld())
	_, err := e.op(t, "concourse.workers").Do(context.Background(), opmodel.Call{Target: "infra-stg"})
	assert.EqualError(t, err, `unknown Concourse target "infra-stg"; known targets: infra-prd`)
	_, err = NewProvider(nil, ProviderOptions{})
	assert.ErrorContains(t, err, "no target configured")
}

func TestOpWorkers(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.workers", nil)
	require.NoError(t, err)
	assert.Equal(t, "3 running, 1 stalled", res.Summary)
	assert.True(t, res.Warn)
	require.Len(t, res.Table.Rows, 4)
	assert.Equal(t, []string{"caascad-ci-workers-infra-infra-prd-0", "stalled", "236", "38d"}, res.Table.Rows[0])
	d := decoded(t, res)
	assert.Equal(t, []any{"caascad-ci-workers-infra-infra-prd-0"}, d["stalled"])
	assert.Equal(t, []any{}, d["landing"])
	assert.Equal(t, float64(3), d["by_state"].(map[string]any)["running"])
	w0 := d["workers"].([]any)[0].(map[string]any)
	assert.Equal(t, float64(38*24*3600), w0["age_seconds"])

	res, err = e.do(t, "concourse.workers", opmodel.Args{"state": "stalled"})
	require.NoError(t, err)
	assert.Equal(t, "1 stalled", res.Summary)
}

// TestOpWorkersInNumberOrder: the workers table and its name lists count
// as people do (prd-2 before prd-10), not as text (prd-0, prd-1, prd-10,
// prd-11, prd-2, …), whatever order Concourse sends them in.
func TestOpWorkersInNumberOrder(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("caascad-ci-workers-infra-infra-prd", 12).
		AddWorkers(concoursesim.Worker{Name: "worker-10", State: concoursesim.StateRunning}, concoursesim.Worker{Name: "worker-7", State: concoursesim.StateRunning})
	slices.Reverse(w.Workers)
	e := newProvEnv(t, w)
	res, err := e.do(t, "concourse.workers", nil)
	require.NoError(t, err)
	var names []string
	for _, r := range res.Table.Rows {
		names = append(names, r[0])
	}
	want := []string{}
	for i := range 12 {
		want = append(want, fmt.Sprintf("caascad-ci-workers-infra-infra-prd-%d", i))
	}
	want = append(want, "worker-7", "worker-10")
	assert.Equal(t, want, names)
	var running []string
	for _, n := range decoded(t, res)["running"].([]any) {
		running = append(running, n.(string))
	}
	assert.Equal(t, want, running)
}

// TestOpFindWorker_UnknownHost: for worker-7, which the target's template
// does not name, find_worker gave ssh "worker-7.infra-prd.caascad.com", a
// host made up from its name. It says the host is unknown and where to
// find the machine: the Garden address Concourse has, fly, the alert's
// instance, the inventory. The template's own worker keeps its ssh command.
func TestOpFindWorker_UnknownHost(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("caascad-ci-workers-infra-infra-prd", 8).
		AddWorkers(concoursesim.Worker{Name: "worker-7", State: concoursesim.StateStalled}, concoursesim.Worker{Name: "worker-8", State: concoursesim.StateLanded})
	e := newProvEnv(t, w)
	res, err := e.do(t, "concourse.find_worker", opmodel.Args{"worker": "worker-7", "alert_instance": "worker-7:9100"})
	require.NoError(t, err)
	f := res.Data.(FoundWorker)
	assert.True(t, f.HostUnknown)
	assert.Empty(t, f.Host)
	assert.Empty(t, f.SSH)
	assert.Empty(t, f.ForgetHostKey)
	require.NotEmpty(t, f.Addr, "the simulator registers a Garden address")
	assert.Equal(t, "⚠️ The host of `worker-7` is unknown: its name does not follow target infra-prd's worker naming (`targets.infra-prd.workers.name`), "+
		"so groundcrew shows no ssh command rather than one to a host that may not exist.\n"+
		"Find the machine, then open a shell on it (through the jump host: `ssh -t \"cloud@bst.infra-prd.caascad.com\"`):\n"+
		"• Concourse has its Garden address as `"+f.Addr+"` (`fly -t 'infra-prd' workers --details` shows it too): "+
		"the machine's own address, unless the worker registers through the TSA's forwarding (then it is the web node's);\n"+
		"• the alert is about `worker-7:9100`: Prometheus reaches the machine at that address;\n"+
		"• or your platform's inventory (cloud console, Terraform state, CMDB).", f.Connect)
	assert.NotContains(t, f.Connect, "worker-7.infra-prd.caascad.com")
	assert.Equal(t, true, decoded(t, res)["host_unknown"], "runbooks see host_unknown")

	// Landed: Concourse has no address for it; fly will once it is back.
	res, err = e.do(t, "concourse.find_worker", opmodel.Args{"worker": "worker-8"})
	require.NoError(t, err)
	f = res.Data.(FoundWorker)
	assert.True(t, f.HostUnknown)
	assert.Contains(t, f.Connect, "• `fly -t 'infra-prd' workers --details` shows its Garden address once it is registered")
	assert.NotContains(t, f.Connect, "the alert is about")
	assert.Equal(t, "infra-prd", e.c.FlyTarget(), "fly_target defaults to the target's name")

	// A target whose name in fly's config differs: the command names that.
	e.c.cfg.FlyTarget = "infra-prd.infra"
	res, err = e.do(t, "concourse.find_worker", opmodel.Args{"worker": "worker-8"})
	require.NoError(t, err)
	assert.Contains(t, res.Data.(FoundWorker).Connect, "• `fly -t 'infra-prd.infra' workers --details` shows its Garden address")
	e.c.cfg.FlyTarget = "infra-prd"

	res, err = e.do(t, "concourse.find_worker", opmodel.Args{"worker": "7"})
	require.NoError(t, err)
	f = res.Data.(FoundWorker)
	assert.False(t, f.HostUnknown)
	assert.Equal(t, `ssh -t "cloud@bst.infra-prd.caascad.com" ssh "caascad-ci-workers-infra-infra-prd-7.infra-prd.caascad.com"`, f.SSH)
	assert.Contains(t, f.Connect, f.SSH)
}

func TestOpWorker(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.worker", opmodel.Args{"name": "caascad-ci-workers-infra-infra-prd-1"})
	require.NoError(t, err)
	d := decoded(t, res)
	assert.Equal(t, "running", d["state"])
	assert.Equal(t, true, d["exists"])
	res, err = e.do(t, "concourse.worker", opmodel.Args{"name": "gone"})
	require.NoError(t, err)
	assert.Equal(t, false, decoded(t, res)["exists"])
	_, err = e.do(t, "concourse.worker", nil)
	assert.ErrorContains(t, err, `"name" is required`)
}

func TestOpPruneWorker(t *testing.T) {
	const stalled, running = "caascad-ci-workers-infra-infra-prd-0", "caascad-ci-workers-infra-infra-prd-1"
	e := newProvEnv(t, concoursesim.DemoWorld())
	args := opmodel.Args{"name": []any{stalled, running, "ghost"}}
	pl := e.plan(t, "concourse.prune_worker", args)
	require.Len(t, pl.Items, 1, "only workers that are not running")
	assert.Equal(t, opmodel.PlanItem{Kind: "worker", ID: stalled, Attrs: map[string]string{"state": "stalled", "team": ""},
		Detail: "stalled, 236 containers, up 38d"}, pl.Items[0])
	assert.Len(t, pl.Notes, 2)
	assert.Contains(t, pl.Notes[0], "is running; Concourse refuses")
	assert.Contains(t, pl.Notes[1], "ghost is not registered")
	assert.Equal(t, "prune 1 worker: "+stalled, pl.Summary)
	assert.Equal(t, pl.Hash(), e.plan(t, "concourse.prune_worker", args).Hash(), "plans are stable")
	_, ok := e.srv.Worker(stalled)
	assert.True(t, ok, "planning changes nothing")

	res, err := e.apply(t, "concourse.prune_worker", args, pl)
	require.NoError(t, err)
	assert.Equal(t, "pruned 1 worker: "+stalled, res.Summary)
	assert.Equal(t, []opmodel.ItemResult{{ID: stalled, Outcome: opmodel.OutcomeSucceeded, Reason: "pruned"}}, res.Items)
	_, ok = e.srv.Worker(stalled)
	assert.False(t, ok)
	_, ok = e.srv.Worker(running)
	assert.True(t, ok, "apply acts only on plan items")

	t.Run("already gone", func(t *testing.T) {
		res, err := e.apply(t, "concourse.prune_worker", args, pl)
		require.NoError(t, err)
		assert.Equal(t, opmodel.OutcomeAlreadyDone, res.Items[0].Outcome)
	})
}

// Concourse's worker list lags a prune (served from the web node's worker
// cache): a prune that answered 200 is verified by listing again with
// backoff, and reported as done with how long the list lagged.
func TestOpPruneWorker_WorkerListLagsThePrune(t *testing.T) {
	const stalled = "caascad-ci-workers-infra-infra-prd-0"
	e := newProvEnv(t, concoursesim.DemoWorld(), concoursesim.WithWorkerCacheLag(1800*time.Millisecond))
	args := opmodel.Args{"name": stalled}
	pl := e.plan(t, "concourse.prune_worker", args)
	require.Len(t, pl.Items, 1)
	res, err := e.apply(t, "concourse.prune_worker", args, pl)
	require.NoError(t, err)
	assert.Equal(t, "pruned 1 worker: "+stalled, res.Summary)
	assert.Equal(t, []opmodel.ItemResult{{ID: stalled, Outcome: opmodel.OutcomeSucceeded,
		Reason: "pruned; Concourse listed it for 2.0 s more"}}, res.Items)
	assert.Equal(t, []any{stalled}, decoded(t, res)["pruned"])
	assert.Empty(t, decoded(t, res)["states"], "no state for a worker that is gone")
	assert.Equal(t, 3, e.srv.CountCalls("GET", "/api/v1/workers")-1, "listed again until the list caught up (the plan listed once)")
}

// A worker the list keeps showing past the bounded wait is a failed prune,
// saying how long it was checked.
func TestOpPruneWorker_StillListedAfterTheWait(t *testing.T) {
	const stalled = "caascad-ci-workers-infra-infra-prd-0"
	e := newProvEnv(t, concoursesim.DemoWorld(), concoursesim.WithWorkerCacheLag(time.Hour))
	args := opmodel.Args{"name": stalled}
	pl := e.plan(t, "concourse.prune_worker", args)
	_, err := e.apply(t, "concourse.prune_worker", args, pl)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "still listed after the prune (checked for 15 s)")
}

func TestOpPruneWorker_WorkerCameBack(t *testing.T) {
	const w0 = "caascad-ci-workers-infra-infra-prd-0"
	e := newProvEnv(t, concoursesim.DemoWorld())
	args := opmodel.Args{"all_stalled": true}
	pl := e.plan(t, "concourse.prune_worker", args)
	require.Len(t, pl.Items, 1)
	e.srv.ResumeHeartbeat(w0) // someone restarted it while the approval was pending
	res, err := e.apply(t, "concourse.prune_worker", args, pl)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot prune running worker")
	require.Len(t, res.Failed(), 1)
	assert.Contains(t, res.Failed()[0].Reason, "heartbeat resumed")
	_, ok := e.srv.Worker(w0)
	assert.True(t, ok)

	_, err = e.op(t, "concourse.prune_worker").Plan(context.Background(), opmodel.Call{Target: "infra-prd"})
	assert.ErrorContains(t, err, "give name=<worker>")
}

func TestOpLandAndRetireWorker(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 3)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddBuilds(concoursesim.Build{Pipeline: "app", Job: "unit", Status: "started", Worker: "w-1"})
	e := newProvEnv(t, w)

	pl := e.plan(t, "concourse.land_worker", opmodel.Args{"name": "w-1"})
	require.Len(t, pl.Items, 1)
	res, err := e.apply(t, "concourse.land_worker", opmodel.Args{"name": "w-1"}, pl)
	require.NoError(t, err)
	assert.Equal(t, "landing", decoded(t, res)["states"].(map[string]any)["w-1"], "a build still runs on it")
	pl = e.plan(t, "concourse.land_worker", opmodel.Args{"name": "w-1"})
	assert.True(t, pl.Empty())
	assert.Contains(t, pl.Notes[0], "already landing")

	pl = e.plan(t, "concourse.retire_worker", opmodel.Args{"name": "w-2"})
	res, err = e.apply(t, "concourse.retire_worker", opmodel.Args{"name": "w-2"}, pl)
	require.NoError(t, err)
	assert.Equal(t, opmodel.OutcomeSucceeded, res.Items[0].Outcome)
	_, ok := e.srv.Worker("w-2")
	assert.False(t, ok, "no build on it: retired and deleted at once")
}

func TestOpBuilds(t *testing.T) {
	e := newProvEnv(t, concoursesim.DemoWorld())
	res, err := e.do(t, "concourse.builds", opmodel.Args{"status": "pending,started", "since": "24h"})
	require.NoError(t, err)
	assert.Equal(t, "301 builds (300 pending, 1 started) in 1 pipeline", res.Summary)
	assert.Equal(t, [][]string{{"deploy", "caascad-alert-prepare", "301", "300 pending, 1 started"}}, res.Table.Rows)
	d := decoded(t, res)
	assert.Equal(t, float64(300), d["by_status"].(map[string]any)["pending"])
	assert.Equal(t, true, d["truncated"])
	assert.Len(t, d["builds"], 200)

	res, err = e.do(t, "concourse.builds", opmodel.Args{"pipeline": "app|docs", "status": "errored"})
	require.NoError(t, err)
	assert.Equal(t, "4 builds (4 errored) in 2 pipelines", res.Summary)

	_, err = e.do(t, "concourse.builds", opmodel.Args{"status": "stuck"})
	assert.ErrorContains(t, err, `unknown build status "stuck"`)
	_, err = e.do(t, "concourse.builds", opmodel.Args{"pipeline": "("})
	assert.ErrorContains(t, err, "is not a regular expression")
}

func TestOpAbortBuilds_ByFilter(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 2).PendingBuilds("deploy", "caascad-alert-prepare", "prepare", 30)
	w.PendingBuilds("main", "other", "job", 2)
	e := newProvEnv(t, w, concoursesim.WithAbortDelay(0))
	args := opmodel.Args{"pipeline": "caascad-alert-.*"}
	pl := e.plan(t, "concourse.abort_builds", args)
	require.Len(t, pl.Items, 30, "pending builds of the matching pipeline only (default status pending)")
	assert.Equal(t, "abort 30 builds of deploy/caascad-alert-prepare (30 pending)", pl.Summary)
	assert.Equal(t, map[string]string{"team": "deploy", "pipeline": "caascad-alert-prepare", "job": "prepare"}, pl.Items[0].Attrs)

	res, err := e.apply(t, "concourse.abort_builds", args, pl)
	require.NoError(t, err)
	assert.Equal(t, "aborted 30 of 30 builds", res.Summary)
	assert.False(t, res.Warn)
	assert.Equal(t, float64(30), decoded(t, res)["aborted"])
	assert.Equal(t, 30, e.srv.CountBuilds("caascad-alert-prepare")["aborted"])
	assert.Equal(t, 2, e.srv.CountBuilds("other")["pending"], "other pipelines untouched")

	// A pipeline that does not exist is not a quiet one: the plan says so,
	// with the name meant; one that matches with nothing pending is quiet.
	pl = e.plan(t, "concourse.abort_builds", opmodel.Args{"pipeline": "caascad-alert-prepar"})
	assert.Empty(t, pl.Items)
	assert.Equal(t, "no pipeline matches `caascad-alert-prepar`; did you mean `deploy/caascad-alert-prepare`? (`fly -t 'infra-prd' pipelines -a` lists every pipeline)", pl.Summary)
	_, err = e.op(t, "concourse.abort_builds").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "other", "team": "deploy"}})
	assert.EqualError(t, err, "infra-prd: pipeline `deploy/other` not found; it is in team `main`: run again with `team=main` (`fly -t 'infra-prd' pipelines -a` lists every pipeline)")
	pl = e.plan(t, "concourse.abort_builds", opmodel.Args{"pipeline": "oth.*", "team": "deploy"})
	assert.Equal(t, "no pipeline matches `oth.*` in team `deploy` (`fly -t 'infra-prd' pipelines -a` lists every pipeline)", pl.Summary)
	pl = e.plan(t, "concourse.abort_builds", opmodel.Args{"pipeline": "caascad-alert-.*"})
	assert.Equal(t, "no pending or started build matches", pl.Summary, "the pipeline exists; its builds were aborted")

	_, err = e.op(t, "concourse.abort_builds").Plan(context.Background(), opmodel.Call{Target: "infra-prd"})
	assert.ErrorContains(t, err, "refusing to abort every build")
	_, err = e.op(t, "concourse.abort_builds").Plan(context.Background(), opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"pipeline": "x", "status": "failed"}})
	assert.ErrorContains(t, err, "only pending or started builds")
}

// A pending build that never started stays pending after its abort on
// Concourse 8.2.5 until the scheduler looks at its job: the summary says
// so, and blames no worker (issue 26: "their worker may be gone, run again
// with force=true" — there was no worker and no force parameter).
func TestOpAbortBuilds_NeverStartedBuildsStayPending(t *testing.T) {
	e := newProvEnv(t, stuckWorld(), concoursesim.WithAbortDelay(time.Hour))
	args := opmodel.Args{"ids": "10, 11"}
	pl := e.plan(t, "concourse.abort_builds", args)
	res, err := e.apply(t, "concourse.abort_builds", args, pl)
	require.Error(t, err, "nothing could be verified aborted")
	assert.Equal(t, "aborted 0 of 2 builds; 2 still pending after 0.1 s (10, 11): never started, so no worker is involved — Concourse finishes a job's aborted pending builds oldest first: they wait behind older pending builds of their job that are not aborted (abort those too: abort-pending), or for its scheduler's next look at the job", res.Summary)
	assert.NotContains(t, res.Summary, "worker may be gone")
	assert.NotContains(t, res.Summary, "force")
	require.Len(t, res.Failed(), 2)
	assert.Contains(t, res.Failed()[0].Reason, "build 10 is still pending: it never started, so no worker is involved")
}

func TestOpAbortBuilds_ByIDsReportsStuckBuilds(t *testing.T) {
	e := newProvEnv(t, stuckWorld(), concoursesim.WithAbortDelay(0))
	args := opmodel.Args{"ids": "1, 2, 10, 404"}
	pl := e.plan(t, "concourse.abort_builds", args)
	require.Len(t, pl.Items, 2)
	assert.Equal(t, []string{"2", "10"}, planItemNames(pl))
	assert.ElementsMatch(t, []string{"build 1 is already succeeded; skipped", "build 404 does not exist; skipped"}, pl.Notes)

	res, err := e.apply(t, "concourse.abort_builds", args, pl)
	require.NoError(t, err)
	assert.True(t, res.Warn)
	assert.Contains(t, res.Summary, "aborted 1 of 2 builds; 1 still started after 0.1 s (2): their worker does not answer — they end when it comes back or is pruned")
	assert.Equal(t, []any{float64(2)}, decoded(t, res)["not_stopped"])

	force := opmodel.Args{"ids": "2", "force": true}
	pl = e.plan(t, "concourse.abort_builds", force)
	res, err = e.apply(t, "concourse.abort_builds", force, pl)
	require.NoError(t, err)
	assert.Equal(t, "aborted 1 of 1 build", res.Summary)
}
