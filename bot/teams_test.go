package bot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// teamWorld has a global stalled worker and stalled workers of the
// Concourse teams payments and platform.
func teamWorld() *bottest.World {
	w := bottest.NewWorld(map[string]string{"w-global": "stalled", "w-pay": "stalled", "w-plat": "stalled", "w-ok": "running"})
	w.Teams = map[string]string{"w-pay": "payments", "w-plat": "platform"}
	return w
}

func withTargetTeam(team string) func(*bot.Options) {
	return func(o *bot.Options) {
		o.Targets = map[string]bot.TargetInfo{"infra-prd": {Team: team, Vars: map[string]string{"zone": "infra-prd"}}}
	}
}

func TestTeams_GateSaysWhichTeamsAPlanTouches_AndTheAuditRecordsThem(t *testing.T) {
	h := newHarness(t, teamWorld(), withTargetTeam("main"))
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	gate, ok := h.chat.Find("Approval needed")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, gate.Msg.Text, "target `infra-prd` · teams `payments`, `platform`")

	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, []string{"payments", "platform"}, r.Step("prune").Teams)

	audit, err := h.db.AuditEntries(h.ctx, r.ID)
	require.NoError(t, err)
	seen := map[runmodel.AuditAction][]string{}
	for _, a := range audit {
		if a.Step == "prune" {
			seen[a.Action] = a.Teams
		}
	}
	for _, action := range []runmodel.AuditAction{runmodel.ActionApprovalRequested, runmodel.ActionApprove, runmodel.ActionApprovalGranted, runmodel.ActionExecute, runmodel.ActionOutcome} {
		assert.Equal(t, []string{"payments", "platform"}, seen[action], "audit %s", action)
	}
}

func TestTeams_OneTeamInstallSeesNothingNew(t *testing.T) {
	w := bottest.NewWorld(map[string]string{"w-0": "stalled"})
	w.Teams = map[string]string{"w-0": "main"}
	h := newHarness(t, w, withTargetTeam("main"))
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	gate, ok := h.chat.Find("Approval needed")
	require.True(t, ok, h.chat.Transcript())
	assert.NotContains(t, gate.Msg.Text, "team", "the target's own team is not said")

	// A team other than the target's own is said, even alone.
	w2 := bottest.NewWorld(map[string]string{"w-0": "stalled"})
	w2.Teams = map[string]string{"w-0": "payments"}
	h2 := newHarness(t, w2, withTargetTeam("main"))
	h2.cmd(alice, "run prune target=infra-prd worker=w-0")
	h2.react(bob, h2.stepRef("check"), chatmodel.IntentDone)
	gate, ok = h2.chat.Find("Approval needed")
	require.True(t, ok, h2.chat.Transcript())
	assert.Contains(t, gate.Msg.Text, "· team `payments`")
}

func withTeamPolicy(cfg policy.Config) func(*bot.Options) {
	return func(o *bot.Options) {
		withTargetTeam("main")(o)
		o.Approvals = cfg
	}
}

// A plan touching the workers of two teams needs an approver eligible for
// both, and the gate says which team's policy asked what.
func TestTeams_TwoTeamPlanNeedsWhatEachTeamAsks(t *testing.T) {
	w := teamWorld()
	delete(w.Workers, "w-global")
	h := newHarness(t, w, withTeamPolicy(policy.Config{Teams: map[string]runmodel.Policy{
		"payments": {Approvers: []string{"group:payments-leads"}},
		"platform": {Approvers: []string{"group:platform"}, RequireGroups: []string{"group:platform"}},
	}}))
	h.chat.SetGroup("payments-leads", bob.ID, carol.ID)
	h.chat.SetGroup("platform", carol.ID)
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	gate, ok := h.chat.Find("Approval needed")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, gate.Msg.Text, "Needs 1 approval from @payments-leads who are also @platform (at least one from each of @platform)")
	assert.Contains(t, gate.Msg.Text, "Team `payments` (`approvals.teams.payments`): approvers @payments-leads")
	assert.Contains(t, gate.Msg.Text, "Team `platform` (`approvals.teams.platform`): approvers @platform, one from each of @platform")

	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	assert.Contains(t, h.chat.Ephemerals(bob.ID)[len(h.chat.Ephemerals(bob.ID))-1], "not an approver for team `platform`'s things (`approvals.teams.platform`: @platform)")
	assert.Equal(t, 0, w.CallCount("fake.prune"))
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, 1, w.CallCount("fake.prune"))
}

// runners at a team's level: a run naming the team is refused at start; a
// plan that turns out to touch it fails its step before the gate, saying
// who may, and nothing is changed.
func TestTeams_RunnersOfATeam(t *testing.T) {
	w := teamWorld()
	cfg := policy.Config{Teams: map[string]runmodel.Policy{"platform": {Runners: []string{"group:platform"}}}}
	h := newHarness(t, w, withTeamPolicy(cfg))
	h.chat.SetGroup("platform", carol.ID)

	h.cmd(alice, "run teamtouch target=infra-prd team=platform")
	assert.Contains(t, h.chat.Ephemerals(alice.ID)[0], "You may not run `teamtouch` on `infra-prd` for team `platform`: policy `approvals.teams.platform.runners` allows only @platform")
	h.cmd(alice, "run teamtouch target=infra-prd team=payments")
	assert.Equal(t, 1, w.CallCount("fake.touch"), "payments sets no runners")
	audit, err := h.db.AuditEntries(h.ctx, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"platform"}, audit[0].Teams, "the refusal says the team")
	assert.Equal(t, runmodel.ActionRunRefused, audit[0].Action)
	h = newHarness(t, w, withTeamPolicy(cfg))
	h.chat.SetGroup("platform", carol.ID)

	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	r := h.onlyRun()
	require.Equal(t, runmodel.RunFailed, r.State, h.chat.Transcript())
	assert.Nil(t, r.Gate, "no approval is asked for a change alice may not make")
	assert.Contains(t, r.Step("prune").Error, "not done: @alice may not change the things of teams `payments`, `platform`: policy `approvals.teams.platform.runners` allows only @platform to start runbooks that change team `platform`'s things (one of them may run it); nothing was changed")
	assert.Equal(t, 0, w.CallCount("fake.prune"))
	audit, err = h.db.AuditEntries(h.ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, runmodel.ActionChangeRefused, audit[len(audit)-2].Action, "then the run's end")

	// carol may.
	h2 := newHarness(t, teamWorld(), withTeamPolicy(cfg))
	h2.chat.SetGroup("platform", carol.ID)
	h2.cmd(carol, "run prune target=infra-prd")
	h2.react(bob, h2.stepRef("check"), chatmodel.IntentDone)
	assert.Equal(t, runmodel.RunAwaitingApproval, h2.onlyRun().State, h2.chat.Transcript())
	// Removed from the group before the approval: checked again right
	// before the call, and nothing is changed.
	h2.chat.SetGroup("platform")
	h2.react(bob, h2.gateRef(), chatmodel.IntentApprove)
	r = h2.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State, h2.chat.Transcript())
	assert.Contains(t, r.Step("prune").Error, "@carol may not change")
}

// A plan that changes before the call to touch another team asks again
// with that team's policy too.
func TestTeams_DriftToAnotherTeamAsksItsPolicy(t *testing.T) {
	w := bottest.NewWorld(map[string]string{"w-pay": "stalled", "w-plat": "running"})
	w.Teams = map[string]string{"w-pay": "payments", "w-plat": "platform"}
	h := newHarness(t, w, withTeamPolicy(policy.Config{Teams: map[string]runmodel.Policy{
		"payments": {Approvers: []string{"bob", "carol"}},
		"platform": {Approvers: []string{"carol"}},
	}}))
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	require.Equal(t, []string{"payments"}, h.onlyRun().Gate.Teams)
	w.Set("w-plat", "stalled")
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	g := h.onlyRun().Gate
	require.NotNil(t, g, h.chat.Transcript())
	assert.Equal(t, runmodel.GatePending, g.Decision)
	assert.Equal(t, []string{"payments", "platform"}, g.Teams)
	require.Len(t, g.Policy.Teams, 2)
	assert.Equal(t, [][]string{{"carol"}}, g.Policy.AlsoApprovers)
	assert.Equal(t, 0, w.CallCount("fake.prune"))
}

// A plan that grows, before the call, to a team the requester may not act
// on is not asked again: the step fails, and nothing is changed.
func TestTeams_DriftToATeamTheRequesterMayNotActOn(t *testing.T) {
	w := bottest.NewWorld(map[string]string{"w-pay": "stalled", "w-plat": "running"})
	w.Teams = map[string]string{"w-pay": "payments", "w-plat": "platform"}
	h := newHarness(t, w, withTeamPolicy(policy.Config{Teams: map[string]runmodel.Policy{"platform": {Runners: []string{"carol"}}}}))
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	w.Set("w-plat", "stalled")
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State, h.chat.Transcript())
	assert.Equal(t, runmodel.GateVoid, r.Gate.Decision)
	assert.Contains(t, r.Step("prune").Error, "policy `approvals.teams.platform.runners` allows only @carol")
	assert.Equal(t, 0, w.CallCount("fake.prune"))
}
