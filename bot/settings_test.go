package bot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// A reload changes the policy of the runs that start after it; a run
// already started keeps the policy it started with, and says so.
func TestEngine_ReloadKeepsTheRunsPolicy(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals = policy.Config{Default: runmodel.Policy{Approvers: []string{"bob"}, Required: 1}}
	})
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	old := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingManual, old.State, h.chat.Transcript())

	require.NoError(t, h.eng.Reload(h.ctx, policy.Config{Default: runmodel.Policy{Approvers: []string{"carol"}, Required: 1}}))

	h.cmd(alice, "status "+old.ID)
	h.cmd(alice, "status")
	eph := h.chat.Ephemerals(alice.ID)
	require.Len(t, eph, 2)
	assert.Contains(t, eph[0], "The configuration was reloaded at 03:00 UTC: this run keeps the runbook and approval policy it started with")
	assert.Contains(t, eph[1], "keeps the runbook and policy it started with (config reloaded since)")

	// The run's gate opens after the reload with the policy before it.
	m, ok := h.chat.Find("ssh w-0")
	require.True(t, ok)
	h.react(bob, m.Ref, chatmodel.IntentApprove)
	r := h.onlyRun()
	require.NotNil(t, r.Gate, h.chat.Transcript())
	assert.Equal(t, []string{"bob"}, r.Gate.Policy.Approvers)
	h.react(carol, r.Gate.Message, chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, "carol approves only under the new policy")
	h.react(bob, r.Gate.Message, chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())

	// A run started after the reload gets the new policy.
	h.cmd(alice, "run toucher target=infra-prd")
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{Active: true})
	require.NoError(t, err)
	require.Len(t, runs, 1)
	require.NotNil(t, runs[0].Gate, h.chat.Transcript())
	assert.Equal(t, []string{"carol"}, runs[0].Gate.Policy.Approvers)
}
