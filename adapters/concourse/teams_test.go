package concourse

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// threeTeams is a Concourse of three teams: main (the bot's), payments
// and platform, each with a pipeline `api` and pending builds, a team
// worker of payments and a global worker.
func threeTeams() *concoursesim.World {
	w := concoursesim.NewWorld().
		PendingBuilds("main", "api", "deploy", 2).
		PendingBuilds("payments", "api", "deploy", 2).
		PendingBuilds("platform", "api", "deploy", 2).
		AddWorkers(concoursesim.Worker{Name: "pay-worker", Team: "payments", State: concoursesim.StateStalled},
			concoursesim.Worker{Name: "global-worker", State: concoursesim.StateStalled})
	for i := range w.Pipelines {
		w.Pipelines[i].Resources = []concoursesim.Resource{{Name: "repo", Type: "git", Caches: 2}}
	}
	return w
}

func TestTeams_EveryChangeSaysItsTeam(t *testing.T) {
	e := newProvEnv(t, threeTeams())
	itemTeams := func(p opmodel.Plan) []string {
		var out []string
		for _, it := range p.Items {
			out = append(out, it.Team())
		}
		return out
	}
	abort := e.plan(t, "concourse.abort_builds", opmodel.Args{"pipeline": "api", "status": "pending"})
	assert.Equal(t, []string{"main", "payments", "platform"}, abort.Teams(), "a pipeline of that name in every team")
	pause := e.plan(t, "concourse.pause_pipeline", opmodel.Args{"pipeline": "payments/api"})
	assert.Equal(t, []string{"payments"}, itemTeams(pause))
	clear := e.plan(t, "concourse.clear_resource_cache", opmodel.Args{"pipeline": "api", "team": "platform"})
	assert.Equal(t, []string{"platform"}, itemTeams(clear))
	tasks := e.plan(t, "concourse.clear_task_cache", opmodel.Args{"pipeline": "api", "job": "deploy"})
	assert.Equal(t, []string{"main"}, tasks.Teams(), "the target's team when none is named")
	prune := e.plan(t, "concourse.prune_worker", opmodel.Args{"name": "pay-worker,global-worker"})
	assert.Equal(t, []string{"payments", ""}, itemTeams(prune), "a global worker belongs to no team")
	assert.True(t, prune.Teamless())
	assert.Contains(t, prune.Items[0].Detail, "team payments's")

	// Write calls say their teams before they run.
	teams := func(op string, args opmodel.Args) []string {
		ts, err := e.op(t, op).Teams(context.Background(), opmodel.Call{Target: "infra-prd", Args: args})
		require.NoError(t, err)
		return ts
	}
	assert.Equal(t, []string{"payments"}, teams("concourse.unpause_pipeline", opmodel.Args{"pipeline": "payments/api"}))
	assert.Equal(t, []string{"main"}, teams("concourse.check_resource", opmodel.Args{"pipeline": "api"}))
	assert.Equal(t, []string{"platform"}, teams("concourse.check_resource", opmodel.Args{"pipeline": "api", "team": "platform"}))
	assert.Equal(t, []string{"main", "payments"}, teams("concourse.check_resource_type", opmodel.Args{"pipelines": "payments/api,main/api"}))
	for _, op := range e.p.Ops() {
		if op.Class == opmodel.ClassWrite {
			assert.NotNil(t, op.Teams, "%s changes things of a team: it must say which", op.Name)
		}
	}
}

func TestOpTeams(t *testing.T) {
	w := threeTeams()
	w.Teams = append(w.Teams, "security")
	e := newProvEnv(t, w)
	res, err := e.do(t, "concourse.teams", opmodel.Args{})
	require.NoError(t, err)
	data := res.Data.(TeamsData)
	assert.Equal(t, []string{"main", "payments", "platform", "security"}, data.Teams)
	assert.True(t, data.All, "the bot (admin) sees every team")
	assert.Equal(t, "4 teams: main, payments, platform, security", res.Summary)

	// A channel scoped to payments: only payments is listed.
	res, err = e.op(t, "concourse.teams").Do(context.Background(), opmodel.Call{Target: "infra-prd", Teams: []string{"payments"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"payments"}, res.Data.(TeamsData).Teams)
}

// The teams' auth config says who holds which role, as atc.Team does.
func TestClient_TeamsAuth(t *testing.T) {
	w := threeTeams().AddUser("pam", "pam", map[string]string{"payments": concoursesim.RoleMember}).
		AddUser("vic", "vic", map[string]string{"payments": concoursesim.RoleViewer, "platform": concoursesim.RoleOwner})
	e := newProvEnv(t, w)
	ts, err := e.c.Teams(context.Background())
	require.NoError(t, err)
	byName := map[string]Team{}
	for _, t := range ts {
		byName[t.Name] = t
	}
	assert.Equal(t, map[string]RoleAuth{"member": {Users: []string{"local:pam"}, Groups: []string{}}, "viewer": {Users: []string{"local:vic"}, Groups: []string{}}}, byName["payments"].Auth)
	assert.Equal(t, []string{"local:admin"}, byName["main"].Auth["owner"].Users)
}

// A call scoped to a channel's team (Call.Teams) reads, lists, suggests
// and changes only that team's things, and never names another team.
func TestTeams_ACallScopedToATeam(t *testing.T) {
	w := threeTeams().AddWorkers(concoursesim.Worker{Name: "plat-worker", Team: "platform", State: concoursesim.StateStalled})
	w.AddPipeline(concoursesim.Pipeline{Name: "billing", Team: "platform"}).AddPipeline(concoursesim.Pipeline{Name: "ledger", Team: "payments"})
	e := newProvEnv(t, w)
	call := func(args opmodel.Args) opmodel.Call {
		return opmodel.Call{Target: "infra-prd", Args: args, Teams: []string{"payments"}}
	}
	ctx := context.Background()
	noOther := func(t *testing.T, s string) {
		t.Helper()
		assert.NotContains(t, s, "platform")
		assert.NotContains(t, s, "main/")
		assert.NotContains(t, s, "`main`")
	}

	res, err := e.op(t, "concourse.pipelines").Do(ctx, call(opmodel.Args{}))
	require.NoError(t, err)
	assert.Equal(t, "2 pipelines", res.Summary)
	for _, row := range res.Table.Rows {
		assert.Equal(t, "payments", row[0])
	}
	_, err = e.op(t, "concourse.pipelines").Do(ctx, call(opmodel.Args{"team": "platform"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the run's channel may act only on team `payments`; team= names another team")
	noOther(t, err.Error())

	// Plans: only the team's builds; another team's pipeline refused.
	pl, err := e.op(t, "concourse.abort_builds").Plan(ctx, call(opmodel.Args{"pipeline": "api", "status": "pending"}))
	require.NoError(t, err)
	assert.Equal(t, []string{"payments"}, pl.Teams())
	_, err = e.op(t, "concourse.pause_pipeline").Plan(ctx, call(opmodel.Args{"pipeline": "platform/api"}))
	require.Error(t, err)
	noOther(t, err.Error())
	_, err = e.op(t, "concourse.clear_resource_cache").Plan(ctx, call(opmodel.Args{"pipeline": "api", "team": "platform"}))
	require.Error(t, err)
	_, err = e.op(t, "concourse.check_resource_type").Do(ctx, call(opmodel.Args{"pipelines": "payments/api,platform/api"}))
	require.Error(t, err, "nothing is checked when one of them is another team's")
	_, err = e.op(t, "concourse.unpause_pipeline").Do(ctx, call(opmodel.Args{"pipeline": "main/api"}))
	require.Error(t, err)

	// By id: another team's build is skipped without naming it.
	var platformBuild string
	all := e.plan(t, "concourse.abort_builds", opmodel.Args{"pipeline": "api", "status": "pending", "team": "platform"})
	platformBuild = all.Items[0].ID
	pl, err = e.op(t, "concourse.abort_builds").Plan(ctx, call(opmodel.Args{"ids": platformBuild}))
	require.NoError(t, err)
	assert.Empty(t, pl.Items)
	require.Len(t, pl.Notes, 1)
	assert.Contains(t, pl.Notes[0], "belongs to a team the run's channel may not act on")
	noOther(t, pl.Notes[0])

	// Did-you-mean stays within the team: `billing` is platform's.
	_, err = e.op(t, "concourse.pause_pipeline").Plan(ctx, call(opmodel.Args{"pipeline": "payments/billing"}))
	require.Error(t, err)
	noOther(t, err.Error())
	assert.NotContains(t, err.Error(), "billing`?")
	_, err = e.op(t, "concourse.pause_pipeline").Plan(ctx, call(opmodel.Args{"pipeline": "payments/ledgr"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did you mean `payments/ledger`?")
	assert.Contains(t, err.Error(), "pipelines -n 'payments'")

	// Workers: global ones and the team's; another team's are not seen.
	res, err = e.op(t, "concourse.workers").Do(ctx, call(opmodel.Args{}))
	require.NoError(t, err)
	var names []string
	for _, row := range res.Table.Rows {
		names = append(names, row[0])
	}
	assert.ElementsMatch(t, []string{"global-worker", "pay-worker"}, names)
	// team=: only the team's own workers (what a team's channel may change).
	res, err = e.op(t, "concourse.workers").Do(ctx, call(opmodel.Args{"team": "payments"}))
	require.NoError(t, err)
	require.Len(t, res.Table.Rows, 1)
	assert.Equal(t, "pay-worker", res.Table.Rows[0][0])
	_, err = e.op(t, "concourse.workers").Do(ctx, call(opmodel.Args{"team": "platform"}))
	require.Error(t, err)
	noOther(t, err.Error())
	// A name of another team's worker is neither confirmed nor counted.
	res, err = e.op(t, "concourse.workers").Do(ctx, call(opmodel.Args{"name": "plat-worker"}))
	require.NoError(t, err)
	assert.Equal(t, "plat-worker is not registered", res.Summary)
	res, err = e.op(t, "concourse.workers").Do(ctx, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "platform", "state": "running"}})
	require.NoError(t, err)
	assert.Equal(t, "no worker is running (1 worker registered)", res.Summary)
	res, err = e.op(t, "concourse.workers").Do(ctx, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "security"}})
	require.NoError(t, err)
	assert.Equal(t, "no worker of team `security`", res.Summary)
	// Every stalled worker, for a team's channel: the team's own; a global
	// worker is no team's, and the change would be refused.
	pl, err = e.op(t, "concourse.prune_worker").Plan(ctx, call(opmodel.Args{"all_stalled": true}))
	require.NoError(t, err)
	assert.Equal(t, []string{"pay-worker"}, planItemNames(pl))
	assert.Equal(t, []string{"1 stalled worker of no team (global) not included: the run's channel may change only the workers of team `payments`"}, pl.Notes)
	pl, err = e.op(t, "concourse.prune_worker").Plan(ctx, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"all_stalled": true}})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"global-worker", "pay-worker", "plat-worker"}, planItemNames(pl), "unscoped: every stalled worker")
	pl, err = e.op(t, "concourse.prune_worker").Plan(ctx, call(opmodel.Args{"name": "plat-worker"}))
	require.NoError(t, err)
	assert.Empty(t, pl.Items)
	noOther(t, pl.Notes[0])

	res, err = e.op(t, "concourse.teams").Do(ctx, call(opmodel.Args{}))
	require.NoError(t, err)
	assert.Equal(t, []string{"payments"}, res.Data.(TeamsData).Teams)
	res, err = e.op(t, "concourse.info").Do(ctx, call(opmodel.Args{}))
	require.NoError(t, err)
	noOther(t, res.Summary)
}

// A digest or a watch poll of some teams (its channel is bound to them)
// counts only their builds and paused pipelines and sees their own
// workers and the global ones; nothing of another team is counted or
// named. The watch's cache is shared by every scope.
func TestTeams_DigestAndWatchOfSomeTeams(t *testing.T) {
	w := threeTeams().AddWorkers(concoursesim.Worker{Name: "plat-worker", Team: "platform", State: concoursesim.StateStalled})
	w.AddPipeline(concoursesim.Pipeline{Name: "billing", Team: "platform", Paused: true}).AddPipeline(concoursesim.Pipeline{Name: "ledger", Team: "payments", Paused: true})
	env := newDigestEnv(t, w)
	ctx := context.Background()
	noOther := func(t *testing.T, d any) {
		t.Helper()
		b, err := json.Marshal(d)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "platform")
		assert.NotContains(t, string(b), "plat-worker")
		assert.NotContains(t, string(b), `"main"`)
	}
	for name, src := range map[string]digest.Source{"digest": env.source(t, DigestOptions{}), "watch": NewWatchSource(env.source(t, DigestOptions{}))} {
		t.Run(name, func(t *testing.T) {
			all, err := src.Collect(ctx, "infra-prd", nil, 24*time.Hour, nil)
			require.NoError(t, err)
			assert.Equal(t, 6, all.Builds.Count("pending"))

			d, err := src.Collect(ctx, "infra-prd", []string{"payments"}, 24*time.Hour, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"payments"}, d.Teams)
			assert.Equal(t, 2, d.Builds.Count("pending"))
			require.NotEmpty(t, d.Builds.PendingByPipeline)
			assert.Equal(t, "payments/api", d.Builds.PendingByPipeline[0].Ref())
			assert.ElementsMatch(t, []string{"global-worker", "pay-worker"}, d.Workers.Names)
			teams := map[string]string{}
			for _, s := range d.Workers.Stalled {
				teams[s.Name] = s.Team
			}
			assert.Equal(t, map[string]string{"global-worker": "", "pay-worker": "payments"}, teams)
			if name == "digest" {
				require.Len(t, d.Paused, 1)
				assert.Equal(t, "ledger", d.Paused[0].Name)
			}
			noOther(t, d)
		})
	}
}
