package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

func escalations(h *harness) []bottest.Posted {
	var out []bottest.Posted
	for _, p := range h.chat.Posts() {
		if strings.Contains(p.Msg.Text, "🔔 Escalation") {
			out = append(out, p)
		}
	}
	return out
}

// TestEngine_GateEscalates: a gate nobody answers mentions more people
// at each step of the policy's escalate list, each step once, journaled
// and in the summary; the escalation never lowers the bar.
func TestEngine_GateEscalates(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals = policy.Config{Default: runmodel.Policy{Approvers: []string{"bob"}, Required: 1, Expires: runmodel.Duration(30 * time.Minute),
			Escalate: []runmodel.Escalation{
				{After: runmodel.Duration(10 * time.Minute), Notify: []string{"carol"}},
				{After: runmodel.Duration(20 * time.Minute), Notify: []string{"group:leads", "@carol"}, Channel: true},
			}}}
	})
	h.chat.Groups = map[string][]string{"leads": {"U1", "U3"}}
	h.cmd(alice, "run toucher target=infra-prd")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())

	h.clock.Advance(9 * time.Minute)
	h.tick()
	assert.Empty(t, escalations(h), "not yet")

	h.clock.Advance(time.Minute)
	h.tick()
	h.tick()
	esc := escalations(h)
	require.Len(t, esc, 1, h.chat.Transcript())
	assert.Equal(t, []string{"U3"}, esc[0].Msg.Mentions)
	assert.Equal(t, r.Gate.Message.Thread, esc[0].To.Thread, "in the gate's thread")
	assert.False(t, esc[0].Msg.Broadcast)
	assert.Contains(t, esc[0].Msg.Text, "🔔 Escalation 1/2: approval for `"+r.ID+"` (call fake.touch name=x) has waited 10 min with 0 of 1 approvals. Needs 1 approval from @bob")
	assert.Contains(t, esc[0].Msg.Text, "expires in 20 min")

	// carol was told, not made an approver.
	h.cmd(carol, "approve "+r.ID)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, "an escalated gate needs the same approvals")

	h.clock.Advance(10 * time.Minute)
	h.tick()
	esc = escalations(h)
	require.Len(t, esc, 2, h.chat.Transcript())
	assert.Equal(t, []string{"U1", "U3"}, esc[1].Msg.Mentions, "group members, each once")
	assert.Contains(t, esc[1].Msg.Text, "🔔 Escalation 2/2 — @leads: approval for", "the group is named, carol (mentioned) is not named twice")
	assert.True(t, esc[1].Msg.Broadcast, "channel: true shows it in the channel")
	assert.Equal(t, 2, h.onlyRun().Gate.Escalated)

	h.cmd(alice, "status")
	eph := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, eph)
	assert.Contains(t, eph[len(eph)-1], "*1 open approval request, oldest first*\n• `"+r.ID+"` waiting 20 min — call fake.touch name=x: 0 of 1 approvals · escalated 2 of 2 · expires in 10 min")

	h.clock.Advance(5 * time.Minute)
	h.tick()
	assert.Len(t, escalations(h), 2, "each step once")

	h.cmd(bob, "approve "+r.ID)
	r = h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	var notes []string
	for _, e := range j {
		if e.Type == runmodel.JGateEscalated {
			notes = append(notes, e.Message)
		}
	}
	assert.Equal(t, []string{"escalated after 10 min without a decision: notified @carol", "escalated after 20 min without a decision: notified @leads, @carol"}, notes)
	h.cmd(alice, "summary "+r.ID)
	found := false
	for _, p := range h.chat.Posts() {
		if strings.Contains(p.Msg.Detail, "escalated after 10 min without a decision: notified @carol") &&
			strings.Contains(p.Msg.Detail, "escalated after 20 min") {
			found = true
		}
	}
	assert.True(t, found, "the summary lists the escalations")
}

// TestEngine_GateEscalatesAfterSeconds: a step shorter than a minute
// says how long the request really waited (not "0 s", not "1 min").
func TestEngine_GateEscalatesAfterSeconds(t *testing.T) {
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Approvals = policy.Config{Default: runmodel.Policy{Approvers: []string{"bob"}, Required: 1, Expires: runmodel.Duration(2 * time.Minute),
			Escalate: []runmodel.Escalation{
				{After: runmodel.Duration(20 * time.Second), Notify: []string{"carol"}},
				{After: runmodel.Duration(40 * time.Second), Notify: []string{"carol"}},
			}}}
	})
	h.cmd(alice, "run toucher target=infra-prd")
	require.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, h.chat.Transcript())

	h.clock.Advance(20 * time.Second)
	h.tick()
	h.clock.Advance(20 * time.Second)
	h.tick()
	esc := escalations(h)
	require.Len(t, esc, 2, h.chat.Transcript())
	assert.Contains(t, esc[0].Msg.Text, "has waited 20 s with 0 of 1 approvals")
	assert.Contains(t, esc[1].Msg.Text, "has waited 40 s with 0 of 1 approvals")
}
