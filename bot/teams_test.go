package bot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
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
