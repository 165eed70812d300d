package bot

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// A fresh 30 min gate says 30 min, also when edited seconds later.
func TestExpiresIn_RoundsToTheMinute(t *testing.T) {
	assert.Equal(t, "30 min", human.Duration(expiresIn(30*time.Minute-2*time.Second)))
	assert.Equal(t, "29 min", human.Duration(expiresIn(29*time.Minute+10*time.Second)))
	assert.Equal(t, "1 min", human.Duration(expiresIn(59800*time.Millisecond)))
	assert.Equal(t, "40 s", human.Duration(expiresIn(40*time.Second)))
}

// "1 step", and no dangling colon when no step has a status to count.
func TestSummary_StepCount(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &runmodel.Run{ID: "r-1", Runbook: "pause-pipeline", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"},
		State: runmodel.RunFailed, FinishedAt: now.Add(time.Second),
		Steps: []runmodel.StepState{{ID: "pause", Status: runmodel.StepFailed, Error: "boom"}}}
	assert.Contains(t, summarize(r, nil, now).Text, "Started by @alice · 1 step: 1 failed")
	r.Steps = nil
	text := summarize(r, nil, now).Text
	assert.Contains(t, text, "Started by @alice · 0 steps")
	assert.NotContains(t, text, "0 steps:")
}

// A write that found everything already as wanted is no change.
func TestRunChanges_NoOpIsNoChange(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &runmodel.Run{ID: "r-1", Runbook: "unpause-pipeline", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"},
		State: runmodel.RunSucceeded, FinishedAt: now,
		Steps: []runmodel.StepState{{ID: "unpause", Status: runmodel.StepSucceeded, Items: []opmodel.ItemResult{{ID: "main/app", Outcome: opmodel.OutcomeAlreadyDone}}}}}
	j := []runmodel.JournalEntry{{Time: now, Step: "unpause", Type: runmodel.JOutcome, Message: "main/app was not paused"}}
	assert.Empty(t, RunChanges(r, j))
	detail := summaryDetail(r, j)
	assert.NotContains(t, detail, "Changes made")
	assert.Contains(t, detail, "No change needed:\n• unpause: main/app was not paused")
	r.Steps[0].Items[0].Outcome = opmodel.OutcomeSucceeded
	assert.Len(t, RunChanges(r, j), 1)
}

// A failed step is not "still open", and its error is not said again in
// the summary: "Why it stopped" points at the step that says it.
func TestSummary_FailedStepSaidOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	msg := "infra-prd: pruning worker `w-0` failed (500): " + strings.Repeat("server said no ", 18)
	r := &runmodel.Run{ID: "r-1", Runbook: "worker-stalled", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"},
		State: runmodel.RunFailed, FinishedAt: now, Error: msg,
		Steps: []runmodel.StepState{{ID: "list", Status: runmodel.StepSucceeded}, {ID: "prune", Title: "Prune worker", Status: runmodel.StepFailed, Error: msg}}}
	s := summarize(r, nil, now)
	all := s.Text + "\n" + s.Detail
	// The step's own message says it; the summary points at the step.
	assert.NotContains(t, all, msg)
	assert.Contains(t, s.Text, "Why it stopped: step 2/2 failed — its message says why")
	assert.NotContains(t, s.Detail, "Still open")
	assert.True(t, strings.HasSuffix(s.Detail, "2. ❌ Prune worker"), "named once, under Steps: %s", s.Detail)
	assert.NotContains(t, s.Detail, "Failed:")
	// A run still going is still open.
	r.State, r.FinishedAt, r.Cursor = runmodel.RunAwaitingManual, time.Time{}, 1
	assert.Contains(t, summarize(r, nil, now).Detail, "Still open:\n• the run is still")
}

// An approval step says who approved it once, not "approved by @carol"
// then "Approved by @carol" on the next line.
func TestApprovalStep_ApproverSaidOnce(t *testing.T) {
	carol := chatmodel.User{ID: "U3", Name: "carol"}
	st := runmodel.StepState{ID: "ok", Kind: "approval", Status: runmodel.StepSucceeded, Summary: "approved by @carol", ApprovedBy: []chatmodel.User{carol}}
	r := &runmodel.Run{ID: "r-1", Runbook: "x", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"}, State: runmodel.RunSucceeded, Steps: []runmodel.StepState{st}}
	md := RunMarkdown(r, nil)
	assert.Equal(t, 1, strings.Count(strings.ToLower(md), "approved by @carol"), md)
}

func TestApprovalStep_ReplySaysApproverOnce(t *testing.T) {
	carol := chatmodel.User{ID: "U3", Name: "carol"}
	r := &runmodel.Run{ID: "r-1", Runbook: "x", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"}, State: runmodel.RunSucceeded,
		Steps: []runmodel.StepState{{ID: "ok", Kind: "approval", Status: runmodel.StepSucceeded, Summary: "approved by @carol", ApprovedBy: []chatmodel.User{carol}}}}
	text := renderStep(r, &r.Steps[0], time.Now(), hints{}).Text
	assert.Equal(t, 1, strings.Count(strings.ToLower(text), "approved by @carol"), text)
}

// A refused voter is named in the summary after the gate executed (the run
// no longer holds the gate): by the name their journal entry recorded,
// never by raw id (#22.4).
func TestSummary_RefusedVoterNamedAfterExecution(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	r := &runmodel.Run{ID: "r-1", Runbook: "worker-stalled", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"},
		State: runmodel.RunSucceeded, FinishedAt: now,
		Steps: []runmodel.StepState{{ID: "prune", Status: runmodel.StepSucceeded, ApprovedBy: []chatmodel.User{{ID: "ucarol", Name: "carol"}}}}}
	j := []runmodel.JournalEntry{
		{Time: now, Step: "prune", Type: runmodel.JVoteRefused, Actor: "7izt1mr53ff37p69mapcsz71or", ActorName: "dave", Message: "approve not counted: not in @ci-oncall"},
		{Time: now, Step: "prune", Type: runmodel.JVote, Actor: "ucarol", ActorName: "carol", Message: "approve"},
	}
	detail := summaryDetail(r, j)
	assert.Contains(t, detail, "@dave's approval was not counted: not in @ci-oncall")
	assert.NotContains(t, detail, "7izt1mr53ff37p69mapcsz71or")
	assert.Contains(t, detail, "@carol approved")
}

type emojiHints struct{}

func (emojiHints) Symbol(i chatmodel.Intent) string {
	return map[chatmodel.Intent]string{chatmodel.IntentApprove: "✅", chatmodel.IntentReject: "❌", chatmodel.IntentDone: "✅", chatmodel.IntentSkip: "⏭", chatmodel.IntentFail: "❌"}[i]
}

// A manual step whose text says what ✅ and ⏭ lead to is not followed by
// a hint giving them other meanings ("❌ if it failed" on a question).
func TestManualStep_ChoiceTextKeepsItsMeanings(t *testing.T) {
	h := hintsFor(emojiHints{})
	r := &runmodel.Run{ID: "r-1", Runbook: "x", Target: "infra-prd", State: runmodel.RunAwaitingManual,
		Steps: []runmodel.StepState{{ID: "ask", Kind: "manual", Status: runmodel.StepManual,
			Text: "✅ it will never come back → prune it\n⏭ it may come back → leave it (the run stops)"}}}
	text := renderStep(r, &r.Steps[0], time.Now(), h).Text
	assert.Contains(t, text, "React ✅, ⏭ or ❌ as said above — or `/runbook done r-1` (or `skip`, `fail`).")
	assert.NotContains(t, text, "when done")
	assert.NotContains(t, text, "if it failed")

	// plain instructions keep the usual meanings
	r.Steps[0].Text = "ssh to the worker and restart it"
	assert.Contains(t, renderStep(r, &r.Steps[0], time.Now(), h).Text, "React ✅ when done, ⏭ to skip, ❌ if it failed — or `/runbook done r-1`.")
}

// A skipped step says why in the words of its because, rendered with the
// run's state, and never shows its expression; without a because, a plain
// sentence.
func TestSkipReason_WordsNotExpressions(t *testing.T) {
	env := runbooks.NewEnv(map[string]string{"action": "ask"}, nil, "infra-prd", "infra-prd",
		map[string]runbooks.StepEnv{"worker": {Status: "succeeded", Result: map[string]any{"name": "w-0", "state": "running"}}}, runbooks.RunEnv{})
	spec := &runbookmodel.Step{ID: "never_back", When: `steps.worker.result.state == "stalled"`,
		Because: `{{ .steps.worker.result.name | default "the worker" }} is {{ .steps.worker.result.state | default "not stalled" }}, not stalled`}
	assert.Equal(t, "w-0 is running, not stalled", skipReason(spec, env))
	spec.Because = ""
	assert.Equal(t, "its condition was not met", skipReason(spec, env))
	spec.Because = "   "
	assert.Equal(t, "its condition was not met", skipReason(spec, env))
}

// An item that did not succeed for the reason the step's error already
// gives is listed by id, not with that reason again.
func TestStep_FailedItemReasonSaidOnce(t *testing.T) {
	why := "infra-prd: build 200 is still pending: it never started"
	r := &runmodel.Run{ID: "r-1", Runbook: "abort-build", Target: "infra-prd", State: runmodel.RunFailed,
		Steps: []runmodel.StepState{{ID: "abort", Title: "Abort build 200", Status: runmodel.StepFailed,
			Error: "infra-prd: no build could be aborted: " + why,
			Items: []opmodel.ItemResult{{ID: "200", Outcome: opmodel.OutcomeFailed, Reason: why}, {ID: "201", Outcome: opmodel.OutcomeFailed, Reason: "gone"}}}}}
	text := renderStep(r, &r.Steps[0], time.Now(), hints{}).Text
	assert.Equal(t, 1, strings.Count(text, why), text)
	assert.Contains(t, text, "Did not succeed: `200`, `201` (gone)")

	// A summary that names every item that did not succeed is not
	// followed by their list again.
	r.Steps[0].Summary = "aborted 0 of 2 builds; 1 still pending after 60 s (200): never started; 1 failed (201)"
	text = renderStep(r, &r.Steps[0], time.Now(), hints{}).Text
	assert.NotContains(t, text, "Did not succeed", text)
	r.Steps[0].Summary = "aborted 0 of 2 builds; 1 still pending after 60 s (200): never started"
	text = renderStep(r, &r.Steps[0], time.Now(), hints{}).Text
	assert.Contains(t, text, "Did not succeed: `200`, `201` (gone)", "201 is not in the summary")
}

// runs show (Markdown, a post-mortem document) says a failed step's error
// once, in the Steps table; the Reason and the timeline point at it.
func TestRunMarkdown_ErrorSaidOnce(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	msg := "resolving the plan: infra-prd: pipeline `main/nope` not found"
	r := &runmodel.Run{ID: "r-1", Runbook: "pause-pipeline", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"},
		State: runmodel.RunFailed, CreatedAt: now, FinishedAt: now, Error: "step pause failed: " + msg,
		Steps: []runmodel.StepState{{ID: "pause", Title: "Pause nope", Kind: "action", Status: runmodel.StepFailed, Error: msg}}}
	j := []runmodel.JournalEntry{
		{Time: now, Type: runmodel.JRunStarted},
		{Time: now, Step: "pause", Type: runmodel.JStepFailed, Message: msg},
		{Time: now, Type: runmodel.JRunFinished, Message: "failed: step pause failed: " + msg},
	}
	md := RunMarkdown(r, j)
	assert.Equal(t, 1, strings.Count(md, msg), md)
	assert.Contains(t, md, "- **Reason:** step 1/1 failed — its error is in the Steps table\n")
	assert.Contains(t, md, "| 1 | Pause nope | action | failed | "+mdCell(msg)+" |")
	assert.Contains(t, md, "Z Pause nope — step failed\n")
	assert.Contains(t, md, "Z run finished: failed at step 1/1 (Pause nope)\n")
	assert.NotContains(t, md, "`pause`", "steps by title, never by id")
}

// A page that shows a failed run's steps points at the step that ended it,
// as the run's status in chat does; an error of no step is said as it is.
func TestRunStopped_PointsAtTheStep(t *testing.T) {
	msg := "resolving the plan: infra-prd: pipeline `main/nope` not found"
	r := &runmodel.Run{ID: "r-1", State: runmodel.RunFailed, Error: "step pause failed: " + msg,
		Steps: []runmodel.StepState{{ID: "pause", Title: "Pause nope", Status: runmodel.StepFailed, Error: msg}}}
	step, words, ok := RunStopped(r)
	require.True(t, ok)
	assert.Equal(t, "pause", step)
	assert.Equal(t, "failed at step 1/1 (Pause nope)", words)
	assert.NotContains(t, words, msg, "the step says the error")

	r.Steps[0].Status, r.Steps[0].Error, r.Error = runmodel.StepSucceeded, "", "the store could not be read"
	_, _, ok = RunStopped(r)
	assert.False(t, ok, "an error of no step")
	r.State, r.Error = runmodel.RunCancelled, "cancelled by @alice"
	_, _, ok = RunStopped(r)
	assert.False(t, ok)
}

// The run page's timeline (JournalLine) says when the step failed and
// where the run stopped, not the step's error again: the page shows it on
// the step.
func TestJournalLine_StepErrorOnTheStepOnly(t *testing.T) {
	msg := "resolving the plan: infra-prd: pipeline `main/nope` not found"
	r := &runmodel.Run{ID: "r-1", State: runmodel.RunFailed, Error: "step pause failed: " + msg,
		Steps: []runmodel.StepState{{ID: "pause", Title: "Pause nope", Status: runmodel.StepFailed, Error: msg}}}
	assert.Equal(t, "step failed", JournalLine(runmodel.JournalEntry{Step: "pause", Type: runmodel.JStepFailed, Message: msg}, r))
	assert.Equal(t, "run finished: failed at step 1/1 (Pause nope)", JournalLine(runmodel.JournalEntry{Type: runmodel.JRunFinished, Message: "failed: step pause failed: " + msg}, r))
}

// A gate of one item whose plan summary names it says it once, with its
// detail, not again on a line of its own; a summary that does not name
// the item keeps the item's line.
func TestGate_OneItemSaidOnce(t *testing.T) {
	r := &runmodel.Run{ID: "r-1", Runbook: "pause-pipeline", Target: "infra-prd", Requester: chatmodel.User{ID: "U1", Name: "alice"},
		Steps: []runmodel.StepState{{ID: "pause", Title: "Pause main/app", Status: runmodel.StepGated}}}
	g := &runmodel.Gate{ID: "g", StepID: "pause", Decision: runmodel.GatePending, ExpiresAt: time.Now().Add(time.Hour),
		Plan: &opmodel.Plan{Op: "pause-pipelines", Summary: "pause 1 pipeline: main/app", Items: []opmodel.PlanItem{{Kind: "pipeline", ID: "main/app", Detail: "running, public no"}}}}
	text := renderGate(r, g, time.Now(), hints{}).Text
	assert.Contains(t, text, "\nPlan: pause 1 pipeline: main/app (running, public no)\n")
	assert.Equal(t, 2, strings.Count(text, "main/app"), "the title and the plan: "+text)

	g.Plan = &opmodel.Plan{Op: "abort-builds", Summary: "abort 1 build of main/app (1 pending)", Items: []opmodel.PlanItem{{Kind: "build", ID: "102", Detail: "main/app/unit #60, pending"}}}
	text = renderGate(r, g, time.Now(), hints{}).Text
	assert.Contains(t, text, "\nPlan: abort 1 build of main/app (1 pending)\n• build `102` — main/app/unit #60, pending")
}

func TestWordAt(t *testing.T) {
	assert.Equal(t, -1, wordAt("abort 1021 builds", "1"))
	assert.Equal(t, 6, wordAt("abort 1 build", "1"))
	assert.Equal(t, 16, wordAt("prune 1 worker: w-0 — Concourse removes w-0", "w-0"))
	assert.Equal(t, -1, wordAt("pause main/app-2", "main/app"))
	assert.Equal(t, 6, wordAt("pause main/app.", "main/app"))
	assert.Equal(t, -1, wordAt("", "x"))
}

// /runbook show names a required parameter that has no default by its
// name: "Resources of <pipeline>", not "Resources of".
func TestShow_ARequiredParameterIsNamed(t *testing.T) {
	rb := &runbookmodel.Runbook{Name: "caches", Params: []runbookmodel.Param{
		{Name: "pipeline", Required: true}, {Name: "team"}, {Name: "since", Default: "24h"}},
		Steps: []runbookmodel.Step{{ID: "r", Title: "Resources of {{ with .params.team }}{{ . }}/{{ end }}{{ .params.pipeline }} (last {{ .params.since }})"}}}
	assert.Equal(t, "Resources of <pipeline> (last 24h)", runbooks.RenderTitle(rb.Steps[0].Title, showEnv(rb)))
}
