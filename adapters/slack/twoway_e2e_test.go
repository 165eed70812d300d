package slack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// twoApprovals starts the e2e runbook with a gate that needs two
// approvals from @ci-oncall (bob, carol) and returns the gate's message.
func twoApprovals(t *testing.T, env *e2eEnv) fakeMsg {
	t.Helper()
	require.NoError(t, env.eng.Reload(env.ctx, policy.Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 2}}))
	env.f.mu.Lock()
	env.f.users["UDAVE"] = "dave"
	env.f.mu.Unlock()
	env.in.command(t, slashFields("UALICE", "alice", "run stalled-worker target=infra-prd worker=w-0", "trig-start"))
	manual := waitFor(t, env.f, "the manual step", hasButton("done"))
	env.in.event(t, reactionJSON("Ev-manual", "reaction_added", "UDAVE", "white_check_mark", manual))
	return waitFor(t, env.f, "the approval gate", hasButton("approve"))
}

// onlyRunOf is the single run in the e2e store.
func onlyRunOf(t *testing.T, env *e2eEnv) *runmodel.Run {
	t.Helper()
	runs, err := env.db.ListRuns(env.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	return runs[0]
}

// TestE2E_VoteCastTwoWays (#35.2): on Slack, bob approves a 2-of-N gate by
// ✅ and by button and takes the reaction back: the gate says his approval
// still counts (cast by button too). carol approves: the gate says
// approved by @bob, @carol, and the re-check right before the prune counts
// the same two approvals (bob looked up by his id, as when he voted): the
// worker is pruned once, nothing is voided or asked again.
func TestE2E_VoteCastTwoWays(t *testing.T) {
	env := newE2E(t, ModeHTTP, nil)
	f, in, sim := env.f, env.in, env.sim
	gate := twoApprovals(t, env)

	in.event(t, reactionJSON("Ev-bob-add", "reaction_added", "UBOB", "white_check_mark", gate))
	require.Eventually(t, func() bool { return hasText("@bob ✅ approved")(mustMsg(f, gate.TS)) }, 10*time.Second, 10*time.Millisecond, transcript(f))
	in.interaction(t, buttonJSON("trig-bob", "UBOB", "bob", "approve", gate))
	require.Eventually(t, func() bool {
		g := onlyRunOf(t, env).Gate
		return g != nil && len(g.Votes) == 1 && len(g.Votes[0].AlsoVia) == 1
	}, 10*time.Second, 10*time.Millisecond, "bob's vote is cast by reaction and by button")
	in.event(t, reactionJSON("Ev-bob-remove", "reaction_removed", "UBOB", "white_check_mark", gate))
	require.Eventually(t, func() bool {
		j, err := env.db.Journal(env.ctx, onlyRunOf(t, env).ID)
		require.NoError(t, err)
		for _, e := range j {
			if strings.Contains(e.Message, "approval still counted (cast by button too)") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the removed reaction leaves the button's vote")
	require.NoError(t, env.eng.WaitIdle(env.ctx))
	assert.True(t, hasText("@bob ✅ approved")(mustMsg(f, gate.TS)), transcript(f))
	_, ok := sim.Worker("w-0")
	require.True(t, ok, "one approval of two prunes nothing")

	in.interaction(t, buttonJSON("trig-carol", "UCAROL", "carol", "approve", gate))
	require.Eventually(t, func() bool { _, ok := sim.Worker("w-0"); return !ok }, 10*time.Second, 10*time.Millisecond,
		"bob's and carol's approvals prune w-0:\n%s", transcript(f))
	require.Eventually(t, func() bool { return onlyRunOf(t, env).State == runmodel.RunSucceeded }, 10*time.Second, 10*time.Millisecond, transcript(f))
	r := onlyRunOf(t, env)
	assert.Equal(t, []chatmodel.User{{ID: "UBOB", Name: "bob"}, {ID: "UCAROL", Name: "carol"}}, r.Step("prune").ApprovedBy)
	for _, m := range f.messages() {
		assert.False(t, hasText("no longer counts")(m) || hasText("is asked again")(m), "nothing voided, nothing asked again:\n%s", transcript(f))
	}
	prunes := 0
	for _, c := range sim.Calls() {
		if c.Method == "PUT" && strings.HasSuffix(strings.SplitN(c.Path, "?", 2)[0], "/prune") {
			prunes++
		}
	}
	assert.Equal(t, 1, prunes, "pruned once")
}

// TestE2E_PressWithAnotherNameCountsForTheID (#35.2): a signed press on the
// gate (matched on its channel and ts) whose payload carries bob's id with
// carol's name is bob's vote: counted for the id, shown as @bob; carol has
// not voted, and her own press is a second approval.
func TestE2E_PressWithAnotherNameCountsForTheID(t *testing.T) {
	env := newE2E(t, ModeHTTP, nil)
	f, in, sim := env.f, env.in, env.sim
	gate := twoApprovals(t, env)

	in.interaction(t, buttonJSON("trig-bob-as-carol", "UBOB", "carol", "approve", gate))
	require.Eventually(t, func() bool { return hasText("@bob ✅ approved")(mustMsg(f, gate.TS)) }, 10*time.Second, 10*time.Millisecond, transcript(f))
	require.NoError(t, env.eng.WaitIdle(context.Background()))
	g := onlyRunOf(t, env).Gate
	require.NotNil(t, g)
	require.Len(t, g.Votes, 1)
	assert.Equal(t, chatmodel.User{ID: "UBOB", Name: "bob"}, g.Votes[0].User, "the voter is the id, named by the id's handle")
	assert.Equal(t, runmodel.ViaButton, g.Votes[0].Via)
	assert.False(t, hasText("@carol")(mustMsg(f, gate.TS)), "carol has not voted:\n%s", transcript(f))
	for _, m := range f.messages() {
		assert.False(t, m.Ephemeral && (m.User == "UBOB" || m.User == "UCAROL"), "nobody is refused or told off: %+v", m)
	}
	_, ok := sim.Worker("w-0")
	require.True(t, ok, "one approval of two prunes nothing")

	in.interaction(t, buttonJSON("trig-carol", "UCAROL", "carol", "approve", gate))
	require.Eventually(t, func() bool { _, ok := sim.Worker("w-0"); return !ok }, 10*time.Second, 10*time.Millisecond,
		"bob's and carol's approvals prune w-0:\n%s", transcript(f))
	require.Eventually(t, func() bool { return onlyRunOf(t, env).State == runmodel.RunSucceeded }, 10*time.Second, 10*time.Millisecond, transcript(f))
	assert.Equal(t, []chatmodel.User{{ID: "UBOB", Name: "bob"}, {ID: "UCAROL", Name: "carol"}}, onlyRunOf(t, env).Step("prune").ApprovedBy)
}
