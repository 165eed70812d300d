package bot_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func stalledWorld() *bottest.World {
	return bottest.NewWorld(map[string]string{"w-0": "stalled", "w-1": "running"})
}

func TestEngine_FullRunWithForcedGate(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")

	r := h.onlyRun()
	assert.Equal(t, runmodel.RunAwaitingManual, r.State, h.chat.Transcript())
	m, ok := h.chat.Find("ssh w-0")
	require.True(t, ok, "manual step shows the rendered command")
	h.react(bob, m.Ref, chatmodel.IntentApprove)

	r = h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, "destructive op is gated although the runbook has no approval step")
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
	gate, ok := h.chat.Find("Approval needed")
	require.True(t, ok)
	assert.Contains(t, gate.Msg.Text, "worker `w-0`")
	assert.Contains(t, gate.Msg.Text, "not @alice (requester)")

	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	r = h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
	assert.Equal(t, "", h.world.State("w-0"))
	assert.Equal(t, []chatmodel.User{bob}, r.Steps[2].ApprovedBy)

	// The gate message was edited in place to show the decision.
	g := h.chat.Posts()
	var gateMsg bottest.Posted
	for _, p := range g {
		if p.Ref.ID == r.Steps[2].PlanHash || len(p.History) > 1 && containsAny(p.History, "Approval needed") {
			gateMsg = p
		}
	}
	assert.Contains(t, gateMsg.Msg.Text, "Approved by @bob")

	// Journal: intent before outcome for the destructive call.
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	intent, outcome := -1, -1
	for i, e := range j {
		if e.Step == "prune" && e.Type == runmodel.JIntent {
			intent = i
		}
		if e.Step == "prune" && e.Type == runmodel.JOutcome {
			outcome = i
		}
	}
	require.GreaterOrEqual(t, intent, 0)
	assert.Greater(t, outcome, intent)
	final, ok := h.chat.Find("finished after")
	require.True(t, ok)
	assert.Contains(t, final.Msg.Text, "approved by @bob")
}

func containsAny(ms []chatmodel.Message, s string) bool {
	for _, m := range ms {
		if len(m.Text) > 0 && contains(m.Text, s) {
			return true
		}
	}
	return false
}

func contains(a, b string) bool { return len(a) >= len(b) && (a == b || indexOf(a, b) >= 0) }

func indexOf(a, b string) int {
	for i := 0; i+len(b) <= len(a); i++ {
		if a[i:i+len(b)] == b {
			return i
		}
	}
	return -1
}

func TestEngine_SelfApprovalRefused(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)

	h.react(alice, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunAwaitingApproval, r.State)
	assert.Empty(t, r.Gate.Votes)
	require.Len(t, r.Gate.Refusals, 1)
	assert.Equal(t, alice, r.Gate.Refusals[0].User)
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
	eph := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, eph)
	assert.Contains(t, eph[len(eph)-1], "you started this run")
	gate, _ := h.chat.Find("Approval needed")
	assert.Contains(t, gate.Msg.Text, "@alice — not counted: you started this run")

	// By command too.
	h.cmd(alice, "approve "+r.ID)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
}

func TestEngine_ApproverList(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 2}
		o.Chat.(*bottest.Chat).Groups = map[string][]string{"ci-oncall": {"U3", "U4"}}
	})
	h.chat.Groups = map[string][]string{"ci-oncall": {"U3", "U4"}}
	h.chat.SetUser("dave", chatmodel.User{ID: "U4", Name: "dave"}) // the platform knows every voter: approvals are checked again before the prune
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.Len(t, r.Gate.Refusals, 1)
	assert.Contains(t, r.Gate.Refusals[0].Reason, "not an approver")
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, "needs 2 approvals")
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Len(t, h.onlyRun().Gate.Votes, 1, "one vote per person")
	h.react(chatmodel.User{ID: "U4", Name: "dave"}, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
}

func TestEngine_RejectStopsTheRun(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	r := h.onlyRun()
	h.cmd(carol, "reject "+r.ID+" \"worker is being rebuilt\"")
	r = h.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State)
	assert.Contains(t, r.Error, "rejected by @carol: worker is being rebuilt")
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
}

func TestEngine_DriftRequiresNewApproval(t *testing.T) {
	w := bottest.NewWorld(map[string]string{"w-0": "stalled", "w-1": "running"})
	h := newHarness(t, w, nil)
	h.cmd(alice, "run prune target=infra-prd") // all non-running workers
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	first := h.gateRef()
	firstHash := h.onlyRun().Gate.PlanHash

	w.Set("w-1", "stalled") // the target changed before execution
	h.react(bob, first, chatmodel.IntentApprove)

	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())
	assert.NotEqual(t, firstHash, r.Gate.PlanHash)
	assert.Contains(t, r.Gate.Reason, "added `w-1`")
	assert.Equal(t, 0, w.CallCount("fake.prune"), "nothing executed on a stale approval")
	old, ok := h.chat.Find("Void")
	require.True(t, ok)
	assert.Equal(t, first.ID, old.Ref.ID)

	// A vote on the old, void request does not count.
	h.react(carol, first, chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)

	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State)
	assert.Equal(t, 1, w.CallCount("fake.prune"))
	assert.Equal(t, "", w.State("w-1"))
}

func TestEngine_NothingToDoSkipsTheGate(t *testing.T) {
	w := bottest.NewWorld(map[string]string{"w-1": "running"})
	h := newHarness(t, w, nil)
	h.cmd(alice, "run prune target=infra-prd")
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, runmodel.StepSkipped, r.Steps[1].Status, "when: false skips the manual step")
	assert.Equal(t, "skipped: none of the 1 workers is stalled", r.Steps[1].Summary, "in the words of its because, rendered when skipped")
	assert.NotContains(t, h.chat.Transcript(), "len(", "never the expression")
	assert.Equal(t, "nothing to prune", r.Steps[2].Summary)
	assert.JSONEq(t, `{"nothing_to_do": true, "found": [], "gone": [], "notes": []}`, string(r.Steps[2].Result), "a result the runbook can branch on")
}

// A worker removed while its gate is open (Concourse's
// stalled-worker-timeout, or someone else): after the approval nothing is
// pruned, and the step, the journal, the audit log and the end of the run
// say what was found of it, by name.
func TestEngine_ObjectsThatMovedFirstAreSaidByName(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.world.Remove("w-0")
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Zero(t, h.world.CallCount("fake.prune"), "no prune was sent")
	found := "w-0 is no longer registered: it was removed while the approval was asked"
	st := r.Step("prune")
	assert.Equal(t, found+" — nothing to prune", st.Summary)
	assert.Equal(t, []chatmodel.User{carol}, st.ApprovedBy)
	assert.JSONEq(t, `{"nothing_to_do": true, "found": [{"kind": "worker", "id": "w-0", "found": "`+found+`", "gone": true}], "gone": ["w-0"], "notes": []}`, string(st.Result))
	assert.Contains(t, h.chat.Transcript(), found)
	outcomes := h.journalOf(runmodel.JOutcome)
	require.Len(t, outcomes, 1)
	assert.Equal(t, runmodel.CallNotMade, outcomes[0].Outcome)
	audit := h.auditOf(runmodel.ActionNothingToDo)
	require.Len(t, audit, 1)
	assert.Equal(t, "fake.prune: not called, the objects of the approved plan moved first: "+found, audit[0].Detail)
	assert.Empty(t, h.auditOf(runmodel.ActionExecute))
	final, ok := h.chat.Find("*prune* on `infra-prd` finished")
	require.True(t, ok)
	assert.Contains(t, final.Msg.Text, "nothing was changed ("+found+" — nothing to prune)")
	assert.Empty(t, bot.RunChanges(r, outcomes))
}

func TestEngine_Expiry(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Expires: runmodel.Duration(30 * time.Minute)}
	})
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.clock.Advance(26 * time.Minute)
	h.tick()
	rem, ok := h.chat.Find("⏰ Approval")
	require.True(t, ok, h.chat.Transcript())
	assert.True(t, rem.Msg.Broadcast)
	h.clock.Advance(5 * time.Minute)
	h.tick()
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State)
	assert.Contains(t, r.Error, "approval expired")
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
}

func TestEngine_DryRunChangesNothing(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd --dry-run")
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Contains(t, r.Steps[2].Summary, "dry run: would prune 1 worker")
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
}

func TestEngine_WaitTimesOutToFallback(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run waiter target=infra-prd worker=w-0")
	assert.Equal(t, runmodel.RunWaiting, h.onlyRun().State)
	for range 21 {
		h.clock.Advance(time.Minute)
		h.tick()
	}
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunAwaitingManual, r.State, h.chat.Transcript())
	assert.Contains(t, r.Steps[0].Error, "timed out")
	assert.Equal(t, "fallback", r.Steps[r.Cursor].ID)
}

func TestEngine_WaitSucceeds(t *testing.T) {
	w := stalledWorld()
	h := newHarness(t, w, nil)
	h.cmd(alice, "run waiter target=infra-prd worker=w-0")
	w.Set("w-0", "running")
	h.clock.Advance(time.Minute)
	h.tick()
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, runmodel.StepPending, r.Steps[2].Status, "goto: end skips the fallback")
}

func TestEngine_ApprovalStepBindsToTheWriteCall(t *testing.T) {
	w := stalledWorld()
	h := newHarness(t, w, nil)
	h.cmd(alice, "run toucher target=infra-prd")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())
	assert.Equal(t, "touch", r.Gate.StepID, "the approval step is combined with the gate of the action it protects")
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State)
	assert.Equal(t, 1, w.CallCount("fake.touch"))
}

func TestEngine_CommandErrors(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	cases := []struct{ text, want string }{
		{"rnu prune", "Did you mean `run`?"},
		{"run prnue", "Did you mean `prune`?"},
		{"run prune target=infra-prod", "Did you mean `infra-prd`?"},
		{"run prune wroker=w-0", "wroker"},
		{"run waiter target=infra-prd", "worker"},
		{"run prune target", "key=value"},
		{"approve r-zzzz", "There is no run `r-zzzz`"},
	}
	for _, c := range cases {
		t.Run(c.text, func(t *testing.T) {
			h.cmd(alice, c.text)
			eph := h.chat.Ephemerals(alice.ID)
			require.NotEmpty(t, eph)
			assert.Contains(t, eph[len(eph)-1], c.want)
		})
	}
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs, "bad commands start nothing")
}

func TestEngine_DuplicateEventsIgnored(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	ev := chatmodel.Event{ID: "Ev1", Kind: chatmodel.EventCommand, User: alice, Conversation: chan1, Text: "run prune target=infra-prd"}
	require.NoError(t, h.eng.Handle(h.ctx, ev))
	h.idle()
	h.restart()
	require.NoError(t, h.eng.Handle(h.ctx, ev))
	h.idle()
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Len(t, runs, 1)
}

func TestEngine_ApprovalSurvivesRestart(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) { o.Approvals.Default = runmodel.Policy{Required: 2} })
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	h.restart()
	r := h.onlyRun()
	require.Len(t, r.Gate.Votes, 1)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State)
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
}

func TestEngine_FailedPostsGoToTheOutbox(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.chat.FailPosts = 1 // the root message fails
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	items, err := h.db.ListOutbox(h.ctx)
	require.NoError(t, err)
	require.Len(t, items, 3, "the root, and the two step messages waiting for it (not posted outside its thread)")
	h.clock.Advance(time.Minute)
	h.tick()
	items, err = h.db.ListOutbox(h.ctx)
	require.NoError(t, err)
	assert.Empty(t, items)
	r := h.onlyRun()
	require.False(t, r.Root.IsZero(), "root ref saved after the retry")
	assert.Empty(t, r.RootPending)
	for _, p := range h.chat.Posts() {
		if p.Msg.Role == chatmodel.RoleStep {
			assert.Equal(t, r.Root.ID, p.To.Thread, "step messages are in the root's thread: %s", p.Msg.Text)
		}
	}
	require.False(t, h.stepRef("check").IsZero(), "the manual step's message ref is saved: reactions on it count")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
}

func TestEngine_ApplyErrorFailsTheStep(t *testing.T) {
	w := stalledWorld()
	w.FailApply = errors.New("infra-prd: prune worker \"w-0\": 500 boom")
	h := newHarness(t, w, nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunFailed, r.State)
	assert.Contains(t, r.Steps[2].Error, "500 boom")
	_ = context.Background()
}

func TestEngine_RunPolicy(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Targets = map[string]runmodel.Policy{"infra-prd": {Runners: []string{"group:ci-oncall"}}}
	})
	h.chat.Groups = map[string][]string{"ci-oncall": {"U2"}}
	h.cmd(alice, "run prune target=infra-prd")
	eph := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, eph)
	assert.Contains(t, eph[len(eph)-1], "You may not run `prune` on `infra-prd`: policy `approvals.targets.infra-prd.runners` allows only @ci-oncall")
	runs, _ := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	assert.Empty(t, runs)
	h.cmd(bob, "run prune target=infra-prd")
	assert.Equal(t, runmodel.RunAwaitingManual, h.onlyRun().State)
}

func TestEngine_BreakGlass(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Required: 2, BreakGlass: []string{"@alice"}}
	})
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	r := h.onlyRun()
	h.cmd(bob, "approve "+r.ID+" --break-glass no other approver awake")
	assert.Contains(t, last(h.chat.Ephemerals(bob.ID)), "Only @alice may break glass")
	h.cmd(alice, "approve "+r.ID+" --break-glass")
	assert.Contains(t, last(h.chat.Ephemerals(alice.ID)), "needs a reason")
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
	h.cmd(alice, "approve "+r.ID+" --break-glass customer outage, prune now")
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())
	m, ok := h.chat.Find("Break-glass")
	require.True(t, ok)
	assert.True(t, m.Msg.Broadcast)
	audit, err := h.db.AuditEntries(h.ctx, r.ID)
	require.NoError(t, err)
	found := false
	for _, a := range audit {
		if a.Action == "break_glass" && a.Actor == alice.ID && a.Detail == "customer outage, prune now" {
			found = true
		}
	}
	assert.True(t, found, "break-glass is audited")
}

func TestEngine_RequireGroups(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Required: 1, RequireGroups: []string{"group:dba"}}
	})
	h.chat.Groups = map[string][]string{"dba": {"U3"}}
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(bob, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State)
	gate, _ := h.chat.Find("Still needed")
	assert.Contains(t, gate.Msg.Text, "Still needed: one from @dba")
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State)
}

func last(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[len(xs)-1]
}

// TestEngine_RunRefusedWhereTheBotCannotPost: a run is refused up front,
// privately, in a channel the bot cannot post in (#19.5).
func TestEngine_RunRefusedWhereTheBotCannotPost(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.chat.CannotPost = map[string]string{chan1.Channel: "I am not in this private channel: invite me with `/invite @groundcrew`, then run it again."}
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs, "no run created")
	eph := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, eph)
	assert.Contains(t, eph[len(eph)-1], "/invite @groundcrew")
}

// TestEngine_OutboxRetriesAreBounded: a post that keeps failing is given
// up after a bounded number of tries, and /runbook status says so (#19.5).
func TestEngine_OutboxRetriesAreBounded(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.chat.FailPosts = 1000
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	for range 30 {
		h.clock.Advance(10 * time.Minute)
		h.tick()
	}
	items, err := h.db.ListOutbox(h.ctx)
	require.NoError(t, err)
	require.NotEmpty(t, items)
	for _, it := range items {
		assert.True(t, it.GaveUp, "given up: %+v", it)
		assert.LessOrEqual(t, it.Attempts, 10)
	}
	h.chat.FailPosts = 0
	r := h.onlyRun()
	h.cmd(alice, "status "+r.ID)
	eph := h.chat.Ephemerals(alice.ID)
	assert.Contains(t, eph[len(eph)-1], "could not be posted")
}

// A request nobody answers, whose objects moved first meanwhile, does not
// fail the run for want of an approval nothing needed: before it expires
// the plan is resolved again, and the step says what was found.
func TestEngine_ExpiryWhenTheWorldMovedFirst(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals.Default = runmodel.Policy{Expires: runmodel.Duration(30 * time.Minute)}
	})
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.world.Remove("w-0")
	h.clock.Advance(31 * time.Minute)
	h.tick()
	h.idle()
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Zero(t, h.world.CallCount("fake.prune"))
	assert.Equal(t, "w-0 is no longer registered: it was removed while the approval was asked — nothing to prune", r.Step("prune").Summary)
	assert.Empty(t, h.auditOf(runmodel.ActionApprovalExpired))
	require.Len(t, h.auditOf(runmodel.ActionNothingToDo), 1)
	assert.NotContains(t, h.chat.Transcript(), "Expired after")
	assert.Contains(t, h.chat.Transcript(), "Void — this request no longer applies")

	t.Run("the objects are still there: it expires", func(t *testing.T) {
		h := newHarness(t, stalledWorld(), func(o *bot.Options) {
			o.Approvals.Default = runmodel.Policy{Expires: runmodel.Duration(30 * time.Minute)}
		})
		h.cmd(alice, "run prune target=infra-prd worker=w-0")
		h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
		h.clock.Advance(31 * time.Minute)
		h.tick()
		assert.Equal(t, runmodel.RunFailed, h.onlyRun().State)
		assert.Len(t, h.auditOf(runmodel.ActionApprovalExpired), 1)
	})
}
