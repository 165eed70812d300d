package bot_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

var (
	dave = chatmodel.User{ID: "U4", Name: "dave"}
	erin = chatmodel.User{ID: "U5", Name: "erin"}
)

// recheckHarness: prune needs 2 approvals from @ci-oncall (carol, dave,
// erin); group memberships are cached for an hour, so only a fresh look-up
// sees a change.
func recheckHarness(t *testing.T, approvers ...string) *harness {
	t.Helper()
	if len(approvers) == 0 {
		approvers = []string{"group:ci-oncall"}
	}
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Runbooks = map[string]runmodel.Policy{"prune": {Approvers: approvers, Required: 2}}
		o.GroupTTL = time.Hour
	})
	h.chat.SetUser("dave", dave)
	h.chat.SetUser("erin", erin)
	h.chat.SetGroup("ci-oncall", carol.ID, dave.ID, erin.ID)
	return h
}

// gatePost is the open gate's message as it reads now.
func (h *harness) gatePost() bottest.Posted {
	ref := h.gateRef()
	for _, p := range h.chat.Posts() {
		if p.Ref.ID == ref.ID {
			return p
		}
	}
	require.FailNow(h.t, "no gate message", h.chat.Transcript())
	return bottest.Posted{}
}

func (h *harness) journalOf(typ runmodel.JournalType) []runmodel.JournalEntry {
	j, err := h.db.Journal(h.ctx, h.onlyRun().ID)
	require.NoError(h.t, err)
	var out []runmodel.JournalEntry
	for _, e := range j {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) auditOf(action runmodel.AuditAction) []runmodel.AuditEntry {
	a, err := h.db.AuditEntries(h.ctx, h.onlyRun().ID)
	require.NoError(h.t, err)
	var out []runmodel.AuditEntry
	for _, e := range a {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// TestRecheck_RemovedFromGroup: carol approves, is then removed from
// @ci-oncall; dave's approval completes the quorum, but right before the
// prune her approval is checked again (membership fetched fresh, past the
// hour-long cache): it is voided, nothing is pruned, and the gate asks
// again for the missing approval. erin's approval then executes it.
func TestRecheck_RemovedFromGroup(t *testing.T) {
	h := recheckHarness(t)
	h.toGate()
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.chat.SetGroup("ci-oncall", dave.ID, erin.ID)
	h.react(dave, h.gateRef(), chatmodel.IntentApprove)

	r := h.onlyRun()
	assert.Equal(t, 0, h.world.CallCount("fake.prune"), "never executed on a stale quorum:\n%s", h.chat.Transcript())
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())
	require.NotNil(t, r.Gate)
	assert.Equal(t, runmodel.GatePending, r.Gate.Decision)
	require.Len(t, r.Gate.Votes, 1)
	assert.Equal(t, dave.ID, r.Gate.Votes[0].User.ID, "dave's approval still counts")
	gate := h.gatePost()
	assert.Contains(t, gate.Msg.Text, "@carol's approval no longer counts: not in @ci-oncall any more")
	assert.Contains(t, gate.Msg.Text, "Still needed: 1 more approval")
	asked, ok := h.chat.Find("is asked again")
	require.True(t, ok, h.chat.Transcript())
	assert.True(t, asked.Msg.Broadcast, "the channel hears the request again")
	assert.Contains(t, asked.Msg.Text, "Nothing was done")

	j := h.journalOf(runmodel.JVoteVoided)
	require.Len(t, j, 1)
	assert.Equal(t, carol.ID, j[0].Actor)
	assert.Equal(t, "approval no longer counts: not in @ci-oncall any more", j[0].Message)
	a := h.auditOf(runmodel.ActionVoteVoided)
	require.Len(t, a, 1)
	assert.Equal(t, carol.ID, a[0].Actor)
	assert.Equal(t, r.Gate.PlanHash, a[0].PlanHash)

	// carol's new vote is refused; erin's completes the quorum.
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
	h.react(erin, h.gateRef(), chatmodel.IntentApprove)
	r = h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
	assert.Equal(t, []chatmodel.User{dave, erin}, r.Step("prune").ApprovedBy)
}

// TestRecheck_Deactivated: an approver deactivated after voting does not
// count at execution time.
func TestRecheck_Deactivated(t *testing.T) {
	h := recheckHarness(t)
	h.toGate()
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.chat.SetUser("carol", chatmodel.User{ID: carol.ID, Name: carol.Name, Kind: chatmodel.UserDeactivated})
	h.react(dave, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, 0, h.world.CallCount("fake.prune"), h.chat.Transcript())
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
	gate := h.gatePost()
	assert.Contains(t, gate.Msg.Text, "@carol's approval no longer counts: the account is deactivated")
}

// TestRecheck_HandleReassigned: the policy names @carol; after carol
// voted, the handle was given to another account: her approval no longer
// counts.
func TestRecheck_HandleReassigned(t *testing.T) {
	h := recheckHarness(t, "carol", "dave", "erin")
	h.toGate()
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.chat.SetUser("carol", chatmodel.User{ID: "U9", Name: "carol"})
	h.chat.SetUser("carol-old", carol)
	h.react(dave, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, 0, h.world.CallCount("fake.prune"), h.chat.Transcript())
	gate := h.gatePost()
	assert.Contains(t, gate.Msg.Text, "@carol's approval no longer counts: the handle @carol now names another account")
}

// TestRecheck_QuorumStillMet: when the approvals left still approve (a
// break-glass override here), the call goes ahead, approved by those
// left, and the gate still says whose approval was voided.
func TestRecheck_QuorumStillMet(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Runbooks = map[string]runmodel.Policy{"prune": {Approvers: []string{"group:ci-oncall"}, Required: 2, BreakGlass: []string{"bob"}}}
		o.GroupTTL = time.Hour
	})
	h.chat.SetGroup("ci-oncall", carol.ID)
	r := h.toGate()
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.chat.SetGroup("ci-oncall")
	h.cmd(bob, "approve "+r.ID+" --break-glass the pipeline is burning credits")
	r = h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
	assert.Equal(t, []chatmodel.User{bob}, r.Step("prune").ApprovedBy)
	assert.Len(t, h.journalOf(runmodel.JVoteVoided), 1)
	p, ok := h.chat.Find("BREAK-GLASS approved")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, p.History[len(p.History)-2].Text+p.Msg.Text, "@carol's approval no longer counts: not in @ci-oncall any more")
}

// TestRecheck_DirectoryDown: when the platform cannot be asked at
// execution time, nothing is done (fail closed), even with a cached list.
func TestRecheck_DirectoryDown(t *testing.T) {
	h := recheckHarness(t)
	h.toGate()
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.chat.GroupsErr = assert.AnError
	h.react(dave, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, 0, h.world.CallCount("fake.prune"), h.chat.Transcript())
	assert.Equal(t, runmodel.RunFailed, r.State)
	assert.Contains(t, r.Step("prune").Error, "checking the approvals again before executing")
	assert.Contains(t, r.Step("prune").Error, "nothing was changed")
}

// TestRecheck_EscalationStartsOver: a gate asked again escalates again,
// counting from the new request.
func TestRecheck_EscalationStartsOver(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Runbooks = map[string]runmodel.Policy{"prune": {Approvers: []string{"group:ci-oncall"}, Required: 2,
			Escalate: []runmodel.Escalation{{After: runmodel.Duration(10 * time.Minute), Notify: []string{"bob"}}}}}
		o.GroupTTL = time.Hour
	})
	h.chat.SetUser("dave", dave)
	h.chat.SetGroup("ci-oncall", carol.ID, dave.ID)
	h.toGate()
	h.clock.Advance(11 * time.Minute)
	h.tick()
	require.Equal(t, 1, h.onlyRun().Gate.Escalated, h.chat.Transcript())
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.chat.SetGroup("ci-oncall", dave.ID)
	h.react(dave, h.gateRef(), chatmodel.IntentApprove)
	g := h.onlyRun().Gate
	require.Equal(t, runmodel.GatePending, g.Decision)
	assert.Equal(t, 0, g.Escalated, "escalation starts over")
	assert.Equal(t, h.clock.Now(), g.RequestedAt)
	h.clock.Advance(11 * time.Minute)
	h.tick()
	assert.Equal(t, 1, h.onlyRun().Gate.Escalated, h.chat.Transcript())
}
