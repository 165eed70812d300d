package slack

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// TestE2E_VotesCheckedAgainBeforeThePrune (#22.1): the gate needs two
// approvals from @ci-oncall. carol approves; then she leaves the usergroup
// (or her account is deactivated); erin's approval completes the quorum,
// but right before the prune every counted vote is checked again with
// Slack asked afresh (past the adapter's and the engine's caches): her
// approval is voided, nothing is pruned, the gate says why and asks again.
func TestE2E_VotesCheckedAgainBeforeThePrune(t *testing.T) {
	for _, change := range []string{"left the group", "deactivated"} {
		t.Run(change, func(t *testing.T) {
			env := newE2E(t, ModeHTTP, nil)
			f, in, sim := env.f, env.in, env.sim
			require.NoError(t, env.eng.Reload(env.ctx, policy.Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 2}}))
			f.mu.Lock()
			f.users["UDAVE"], f.users["UERIN"] = "dave", "erin"
			f.members["S0CIONCALL"] = []string{"UERIN", "UCAROL", "UDAVE"}
			f.mu.Unlock()

			in.command(t, slashFields("UALICE", "alice", "run stalled-worker target=infra-prd worker=w-0", "trig-start"))
			manual := waitFor(t, f, "the manual step", hasButton("done"))
			in.event(t, reactionJSON("Ev-manual", "reaction_added", "UDAVE", "white_check_mark", manual))
			gate := waitFor(t, f, "the approval gate", hasButton("approve"))

			in.interaction(t, buttonJSON("trig-carol", "UCAROL", "carol", "approve", gate))
			require.Eventually(t, func() bool { return hasText("@carol ✅ approved")(mustMsg(f, gate.TS)) }, 10*time.Second, 10*time.Millisecond, transcript(f))

			f.mu.Lock()
			want := "not in @ci-oncall any more"
			if change == "deactivated" {
				f.userAttrs["UCAROL"] = obj{"deleted": true}
				want = "the account is deactivated"
			} else {
				f.members["S0CIONCALL"] = []string{"UERIN", "UDAVE"}
			}
			f.mu.Unlock()

			in.interaction(t, buttonJSON("trig-erin", "UERIN", "erin", "approve", gate))
			waitFor(t, f, "the request asked again", func(m fakeMsg) bool {
				return m.ThreadTS == gate.ThreadTS && m.Broadcast && hasText("is asked again")(m)
			})
			require.Eventually(t, func() bool {
				m := mustMsg(f, gate.TS)
				ok, _ := buttonValue(m, "approve")
				return ok && hasText("@carol's approval no longer counts: "+want)(m) && hasText("Still needed: 1 more approval")(m)
			}, 10*time.Second, 10*time.Millisecond, "the gate says why and asks again:\n%s", transcript(f))
			require.NoError(t, env.eng.WaitIdle(env.ctx))
			_, ok := sim.Worker("w-0")
			require.True(t, ok, "nothing pruned on a stale quorum:\n%s", transcript(f))

			// dave's approval completes the quorum that still counts.
			in.interaction(t, buttonJSON("trig-dave", "UDAVE", "dave", "approve", gate))
			require.Eventually(t, func() bool { _, ok := sim.Worker("w-0"); return !ok }, 10*time.Second, 10*time.Millisecond,
				"pruned once erin and dave approved:\n%s", transcript(f))
			waitFor(t, f, "the final message", func(m fakeMsg) bool {
				return m.ThreadTS == gate.ThreadTS && m.Broadcast && hasText("@erin")(m) && hasText("@dave")(m) && !hasText("approved by @carol")(m) && m.TS > gate.TS
			})
		})
	}
}
