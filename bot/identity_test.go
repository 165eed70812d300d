package bot_test

import (
	"github.com/groundcrew/groundcrew/bot/bottest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func (h *harness) unreact(u chatmodel.User, ref chatmodel.MessageRef, intent chatmodel.Intent) {
	require.NoError(h.t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventReaction, User: u, Message: ref, Intent: intent, Removed: true,
		Conversation: chatmodel.Conversation{Channel: ref.Channel, Thread: ref.Thread}}))
	h.idle()
}

func (h *harness) press(u chatmodel.User, ref chatmodel.MessageRef, intent chatmodel.Intent) {
	r := h.onlyRun()
	require.NoError(h.t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventButton, User: u, Message: ref, Intent: intent, Value: r.ID + "|" + r.Gate.ID,
		Conversation: chatmodel.Conversation{Channel: ref.Channel, Thread: ref.Thread}}))
	h.idle()
}

// toGate starts prune as alice and answers its manual step as bob.
func (h *harness) toGate() *runmodel.Run {
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.Equal(h.t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())
	return r
}

func TestEngine_RequesterMayReject(t *testing.T) {
	for _, how := range []string{"command", "reaction", "button"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t, stalledWorld(), func(o *bot.Options) {
				o.Approvals.Default = runmodel.Policy{Approvers: []string{"carol"}}
			})
			r := h.toGate()
			switch how {
			case "command":
				h.cmd(alice, "reject "+r.ID+" wrong worker")
			case "reaction":
				h.react(alice, h.gateRef(), chatmodel.IntentReject)
			case "button":
				h.press(alice, h.gateRef(), "reject")
			}
			r = h.onlyRun()
			assert.Equal(t, runmodel.RunFailed, r.State, "rejecting is never a privilege:\n%s", h.chat.Transcript())
			assert.Contains(t, r.Steps[2].Error, "rejected by @alice")
			assert.Equal(t, 0, h.world.CallCount("fake.prune"))
		})
	}
}

func TestEngine_NonApproverMayReject(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Approvers: []string{"carol"}}
	})
	r := h.toGate()
	h.cmd(bob, "approve "+r.ID)
	assert.Contains(t, last(h.chat.Ephemerals(bob.ID)), "Your approval on `"+r.ID+"` was not counted: you are not an approver")
	h.cmd(bob, "reject "+r.ID)
	assert.Equal(t, runmodel.RunFailed, h.onlyRun().State)
}

func TestEngine_RequesterMayCancel(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	r := h.toGate()
	h.cmd(alice, "cancel "+r.ID+" not needed")
	assert.Equal(t, runmodel.RunCancelled, h.onlyRun().State)
}

func TestEngine_RemovedReactionWithdrawsOnlyItsVote(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Required: 3}
	})
	r := h.toGate()
	h.cmd(bob, "approve "+r.ID)
	h.unreact(bob, h.gateRef(), chatmodel.IntentApprove)
	g := h.onlyRun().Gate
	require.Len(t, g.Votes, 1, "a removed reaction does not withdraw a vote cast by command")
	assert.Equal(t, runmodel.ViaCommand, g.Votes[0].Via)
	assert.Empty(t, g.Withdrawals)

	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	require.Len(t, h.onlyRun().Gate.Votes, 2)
	h.unreact(carol, h.gateRef(), chatmodel.IntentApprove)
	g = h.onlyRun().Gate
	require.Len(t, g.Votes, 1, "a removed reaction withdraws the vote it cast")
	require.Len(t, g.Withdrawals, 1)
	assert.Equal(t, carol.ID, g.Withdrawals[0].User.ID)
	gate, _ := h.chat.Find("Approval needed")
	assert.Contains(t, gate.Msg.Text, "@carol withdrew their approval")
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	found := false
	for _, e := range j {
		if e.Actor == carol.ID && e.Message == "withdrew approval (reaction removed)" {
			found = true
		}
	}
	assert.True(t, found, "the withdrawal is journaled")
	audit, err := h.db.AuditEntries(h.ctx, r.ID)
	require.NoError(t, err)
	found = false
	for _, a := range audit {
		found = found || (a.Action == runmodel.ActionVoteWithdrawn && a.Actor == carol.ID)
	}
	assert.True(t, found, "the withdrawal is audited")
}

func TestEngine_OnlyActivePeopleCount(t *testing.T) {
	for _, u := range []chatmodel.User{
		{ID: "B1", Name: "deploy-bot", Kind: chatmodel.UserBot},
		{ID: "D1", Name: "gone", Kind: chatmodel.UserDeactivated},
		{ID: "X1", Kind: chatmodel.UserUnknown},
		{ID: ""},
	} {
		t.Run(string(u.Kind)+u.ID, func(t *testing.T) {
			h := newHarness(t, stalledWorld(), nil)
			h.cmd(u, "run prune target=infra-prd worker=w-0")
			runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
			require.NoError(t, err)
			assert.Empty(t, runs, "never starts a run")

			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			h.react(u, h.stepRef("check"), chatmodel.IntentApprove)
			assert.Equal(t, runmodel.RunAwaitingManual, h.onlyRun().State, "never answers a manual step")
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)

			h.react(u, h.gateRef(), chatmodel.IntentApprove)
			h.press(u, h.gateRef(), "approve")
			h.cmd(u, "approve "+h.onlyRun().ID)
			h.react(u, h.gateRef(), chatmodel.IntentReject)
			r := h.onlyRun()
			assert.Equal(t, runmodel.RunAwaitingApproval, r.State)
			assert.Empty(t, r.Gate.Votes, "never votes")
			require.NotEmpty(t, r.Gate.Refusals)
			assert.Equal(t, u.NotAPerson(), r.Gate.Refusals[0].Reason)
			gate, _ := h.chat.Find("Approval needed")
			assert.Contains(t, gate.Msg.Text, "not counted: "+u.NotAPerson(), "the gate says why")
			h.cmd(u, "cancel "+r.ID)
			assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, "never cancels")
			assert.Equal(t, 0, h.world.CallCount("fake.prune"))
		})
	}
}

func TestEngine_NamesNeverStandForIDs(t *testing.T) {
	mallory := chatmodel.User{ID: "UMALLORY", Name: "bob"} // a request claiming bob's name
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Approvers: []string{"bob"}, Runners: []string{"alice", "bob"}}
	})
	h.cmd(chatmodel.User{ID: "UEVE", Name: "alice"}, "run prune target=infra-prd worker=w-0")
	runs, _ := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	assert.Empty(t, runs, "runners match ids, not the name a request carries")
	r := h.toGate()
	h.press(mallory, h.gateRef(), "approve")
	h.react(mallory, h.gateRef(), chatmodel.IntentApprove)
	assert.Empty(t, h.onlyRun().Gate.Votes, "approvers match ids, not names")
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
	h.cmd(bob, "approve "+r.ID)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())
}

func TestEngine_GroupsMatchIDs(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Approvers: []string{"group:ci-oncall"}}
	})
	h.chat.Groups = map[string][]string{"ci-oncall": {"U3", "carol"}}
	r := h.toGate()
	h.cmd(chatmodel.User{ID: "UMALLORY", Name: "carol"}, "approve "+r.ID)
	assert.Empty(t, h.onlyRun().Gate.Votes, "group membership is by id")
	h.cmd(carol, "approve "+r.ID)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State)
}

func TestEngine_DefaultWithOnlyRunners(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Runners: []string{"alice"}}
	})
	h.cmd(bob, "run prune target=infra-prd worker=w-0")
	assert.Contains(t, last(h.chat.Ephemerals(bob.ID)), "policy `approvals.default.runners` allows only @alice")
	runs, _ := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	assert.Empty(t, runs)
	r := h.toGate()
	assert.Equal(t, 1, r.Gate.Policy.Required, "the built-in default still fills the rest")
	h.cmd(alice, "approve "+r.ID)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, "the requester still cannot approve")
	h.cmd(bob, "approve "+r.ID)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State)
}

func TestEngine_RunbookApproversNarrowThePolicy(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Approvers: []string{"bob", "carol"}}
	})
	h.cmd(alice, "run narrowed target=infra-prd")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())
	assert.Equal(t, 2, r.Gate.Policy.Required, "required is the larger")
	assert.Equal(t, 10*time.Minute, r.Gate.ExpiresAt.Sub(r.Gate.RequestedAt), "expiry the shorter")
	h.cmd(bob, "approve "+r.ID)
	assert.Contains(t, last(h.chat.Ephemerals(bob.ID)), "not an approver", "bob is allowed by the config but not by the runbook")
	h.cmd(carol, "approve "+r.ID)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
}

// Issue #13 point 5: a vote cast by command and then again by reaction
// keeps both channels; removing the reaction leaves the command's vote.
func TestEngine_RemovedReactionKeepsTheSameVoteCastByCommand(t *testing.T) {
	for _, first := range []string{"command", "button", "reaction"} {
		t.Run(first, func(t *testing.T) {
			h := newHarness(t, stalledWorld(), func(o *bot.Options) {
				o.Approvals.Default = runmodel.Policy{Required: 2}
			})
			r := h.toGate()
			switch first {
			case "command":
				h.cmd(bob, "approve "+r.ID)
				h.react(bob, h.gateRef(), chatmodel.IntentApprove)
			case "button":
				h.press(bob, h.gateRef(), chatmodel.IntentApprove)
				h.react(bob, h.gateRef(), chatmodel.IntentApprove)
			case "reaction": // the reaction first, then the command
				h.react(bob, h.gateRef(), chatmodel.IntentApprove)
				h.cmd(bob, "approve "+r.ID)
			}
			require.Len(t, h.onlyRun().Gate.Votes, 1, "one vote per person")
			h.unreact(bob, h.gateRef(), chatmodel.IntentApprove)
			g := h.onlyRun().Gate
			require.Len(t, g.Votes, 1, "the vote cast by %s stands:\n%s", first, h.chat.Transcript())
			assert.NotEqual(t, runmodel.ViaReaction, g.Votes[0].Via)
			assert.Empty(t, g.Votes[0].AlsoVia)
			assert.Empty(t, g.Withdrawals)
			gate, _ := h.chat.Find("Approval needed")
			assert.NotContains(t, gate.Msg.Text, "withdrew")
			assert.Contains(t, gate.Msg.Text, "@bob ✅ approved")

			audit, err := h.db.AuditEntries(h.ctx, r.ID)
			require.NoError(t, err)
			kept := false
			for _, a := range audit {
				assert.NotEqual(t, runmodel.ActionVoteWithdrawn, a.Action, "nothing was withdrawn")
				kept = kept || (a.Action == runmodel.ActionReactionRemoved && a.Actor == bob.ID)
			}
			assert.True(t, kept, "the removed reaction is audited, with the vote standing")

			// The vote survives a restart, and carol's approval completes the gate.
			h.restart()
			require.Len(t, h.onlyRun().Gate.Votes, 1)
			h.cmd(carol, "approve "+r.ID)
			assert.Equal(t, 1, h.world.CallCount("fake.prune"), "bob's and carol's approvals open the gate:\n%s", h.chat.Transcript())
		})
	}
}

// A reaction added to a command's vote and removed after a restart still
// takes back only the reaction.
func TestEngine_VoteChannelsSurviveRestart(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Required: 3}
	})
	r := h.toGate()
	h.cmd(bob, "approve "+r.ID)
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	h.restart()
	g := h.onlyRun().Gate
	require.Len(t, g.Votes, 2)
	assert.Equal(t, []runmodel.VoteVia{runmodel.ViaReaction}, g.Votes[0].AlsoVia)
	h.unreact(bob, h.gateRef(), chatmodel.IntentApprove)
	h.unreact(carol, h.gateRef(), chatmodel.IntentApprove)
	g = h.onlyRun().Gate
	require.Len(t, g.Votes, 1, h.chat.Transcript())
	assert.Equal(t, bob.ID, g.Votes[0].User.ID)
	require.Len(t, g.Withdrawals, 1)
	assert.Equal(t, carol.ID, g.Withdrawals[0].User.ID)
}

// TestEngine_VoteCastTwoWaysCountsTheSameAtTheRecheck (#35.2): bob
// approves a 2-of-N gate by ✅ and by button, takes the reaction back (his
// approval still counts: cast by button too), carol approves: the gate
// says approved by @bob, @carol, and the re-check right before the prune
// counts the same two approvals — one rule (policy.Count), the voter
// looked up by id as when the vote was cast — so the prune runs, once,
// approved by both, and nothing is voided or asked again. The platform
// here tells names and ids apart (as Slack does): a re-check that looked
// the voter up as a name would find no account.
func TestEngine_VoteCastTwoWaysCountsTheSameAtTheRecheck(t *testing.T) {
	for _, order := range []string{"reaction first", "button first"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t, stalledWorld(), func(o *bot.Options) {
				o.Approvals.Default = runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 2}
				o.GroupTTL = time.Hour
			})
			h.chat.NamesOnly = true
			h.chat.SetGroup("ci-oncall", bob.ID, carol.ID)
			r := h.toGate()
			if order == "reaction first" {
				h.react(bob, h.gateRef(), chatmodel.IntentApprove)
				h.press(bob, h.gateRef(), chatmodel.IntentApprove)
			} else {
				h.press(bob, h.gateRef(), chatmodel.IntentApprove)
				h.react(bob, h.gateRef(), chatmodel.IntentApprove)
			}
			h.unreact(bob, h.gateRef(), chatmodel.IntentApprove)
			g := h.onlyRun().Gate
			require.Len(t, g.Votes, 1, h.chat.Transcript())
			assert.Equal(t, runmodel.ViaButton, g.Votes[0].Via, "the button's vote stands")
			assert.Contains(t, h.gatePost().Msg.Text, "@bob ✅ approved")

			h.cmd(carol, "approve "+r.ID)
			r = h.onlyRun()
			assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
			assert.Equal(t, 1, h.world.CallCount("fake.prune"), h.chat.Transcript())
			assert.Equal(t, []chatmodel.User{bob, carol}, r.Step("prune").ApprovedBy, "the call is approved by whom the gate counted")
			assert.Empty(t, h.journalOf(runmodel.JVoteVoided), "nothing counted on the gate is voided at the re-check")
			_, asked := h.chat.Find("is asked again")
			assert.False(t, asked, h.chat.Transcript())
			decided := h.journalOf(runmodel.JGateDecided)
			require.NotEmpty(t, decided)
			assert.Equal(t, "approved by @bob, @carol", decided[0].Message)
			intents := h.journalOf(runmodel.JIntent)
			require.Len(t, intents, 1)
			assert.Equal(t, "@bob, @carol", intents[0].Intent.ApprovedBy)
		})
	}
}

// A cancel stops the manual step it waited on: its message no longer asks
// for an answer (no buttons, no "React ✅"), it says it was cancelled.
func TestEngine_CancelEditsTheWaitingStep(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	ref := h.stepRef("check")
	h.cmd(alice, "cancel "+h.onlyRun().ID+" not needed")
	require.Equal(t, runmodel.RunCancelled, h.onlyRun().State)
	var step bottest.Posted
	for _, p := range h.chat.Posts() {
		if p.Ref == ref {
			step = p
		}
	}
	require.Positive(t, step.Edits, h.chat.Transcript())
	assert.Empty(t, step.Msg.Buttons, "a cancelled step asks nothing")
	assert.Contains(t, step.Msg.Text, "🚫 *Check the worker*")
	assert.NotContains(t, step.Msg.Text, "React")
}
