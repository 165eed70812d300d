package bot_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// fakeRoles is Concourse's auth as a map: user id → team → role.
type fakeRoles struct {
	mu    sync.Mutex
	roles map[string]map[string]string
	fresh int // questions asked afresh (chatmodel.Fresh)
}

func (f *fakeRoles) Role(ctx context.Context, _, team string, u chatmodel.User) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if chatmodel.WantsFresh(ctx) {
		f.fresh++
	}
	r, ok := f.roles[u.ID]
	if !ok {
		return "", fmt.Errorf("%s: %w", u.Display(), policy.ErrNoIdentity)
	}
	return r[team], nil
}

func (f *fakeRoles) set(user, team, role string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roles[user][team] = role
}

func withRoles(roles *fakeRoles) func(*bot.Options) {
	return func(o *bot.Options) {
		o.Targets = map[string]bot.TargetInfo{"infra-prd": {Team: "main", Authority: bot.AuthorityConcourse}}
		o.Roles = roles
	}
}

func paymentsWorker() *bottest.World {
	w := bottest.NewWorld(map[string]string{"w-pay": "stalled"})
	w.Teams = map[string]string{"w-pay": "payments"}
	w.TeamRoles = map[string]string{"fake.prune": policy.RoleMember, "fake.touch": policy.RolePipelineOperator}
	return w
}

func TestRoles_AViewerMayReadButNotChange(t *testing.T) {
	roles := &fakeRoles{roles: map[string]map[string]string{
		alice.ID: {"payments": policy.RoleViewer},
		bob.ID:   {"payments": policy.RolePipelineOperator},
	}}
	h := newHarness(t, paymentsWorker(), withRoles(roles))
	h.cmd(alice, "run teamtouch target=infra-prd team=payments")
	assert.Contains(t, lastReply(h, alice), "You may not run `teamtouch` on `infra-prd`: @alice is a viewer of team `payments` on `infra-prd`, and this change needs pipeline-operator or more there (authority: concourse).")
	h.cmd(carol, "run teamtouch target=infra-prd team=payments")
	assert.Contains(t, lastReply(h, carol), "@carol has no Concourse identity groundcrew can look up on `infra-prd` (authority: concourse): add it under `users:` in groundcrew.yaml")
	assert.Equal(t, 0, h.world.CallCount("fake.touch"))
	h.cmd(bob, "run teamtouch target=infra-prd team=payments")
	assert.Equal(t, 1, h.world.CallCount("fake.touch"), h.chat.Transcript())
}

// A change of a team's worker: every approver needs member on the team,
// and it is asked again, afresh, right before the call.
func TestRoles_ApproversNeedTheRoleAndItIsCheckedAgainBeforeTheCall(t *testing.T) {
	roles := &fakeRoles{roles: map[string]map[string]string{
		alice.ID: {"payments": policy.RoleMember},
		bob.ID:   {"payments": policy.RoleViewer},
		carol.ID: {"payments": policy.RoleOwner},
	}}
	w := paymentsWorker()
	h := newHarness(t, w, func(o *bot.Options) {
		withRoles(roles)(o)
		// carol's role is taken away the moment her approval is counted.
		o.Hook = func(point string) {
			if point == "voted:"+carol.ID {
				roles.set(carol.ID, "payments", policy.RoleViewer)
			}
		}
	})
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	gate, ok := h.chat.Find("Approval needed")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, gate.Msg.Text, "Concourse roles decide too (authority: concourse): each approver needs member or more on `payments`, on `infra-prd`")

	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	assert.Contains(t, lastReply(h, bob), "@bob is a viewer of team `payments` on `infra-prd`, and this change needs member or more there")
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)

	// Checked again, afresh, before the call, carol's approval no longer
	// counts: nothing is done, the approval is asked again.
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.NotNil(t, r.Gate, h.chat.Transcript())
	require.NotEmpty(t, r.Gate.Voided, h.chat.Transcript())
	assert.Contains(t, r.Gate.Voided[0].Reason, "@carol is a viewer of team `payments`")
	assert.Equal(t, runmodel.GatePending, r.Gate.Decision, "asked again")
	assert.Equal(t, 0, w.CallCount("fake.prune"))
	assert.Positive(t, roles.fresh, "the roles are asked afresh before the call")
}

// The requester's own role is asked again right before the call.
func TestRoles_TheRequesterDemotedBeforeTheCall(t *testing.T) {
	roles := &fakeRoles{roles: map[string]map[string]string{
		alice.ID: {"payments": policy.RoleMember},
		carol.ID: {"payments": policy.RoleOwner},
	}}
	w := paymentsWorker()
	h := newHarness(t, w, withRoles(roles))
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	roles.set(alice.ID, "payments", policy.RoleViewer)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State, h.chat.Transcript())
	assert.Contains(t, r.Step("prune").Error, "not done: @alice is a viewer of team `payments`")
	assert.Equal(t, 0, w.CallCount("fake.prune"))
}

// A global worker (of no team): only a Concourse admin may prune it.
func TestRoles_AGlobalWorkerNeedsAnAdmin(t *testing.T) {
	roles := &fakeRoles{roles: map[string]map[string]string{alice.ID: {"payments": policy.RoleOwner}}}
	w := bottest.NewWorld(map[string]string{"w-0": "stalled"})
	w.TeamRoles = map[string]string{"fake.prune": policy.RoleMember}
	h := newHarness(t, w, withRoles(roles))
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State, h.chat.Transcript())
	assert.Contains(t, r.Step("prune").Error, "only a Concourse admin (an owner of team `main`) of `infra-prd` may change things of no team (a global worker)")
}
