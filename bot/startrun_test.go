package bot_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// TestEngine_StartRun: the typed start (an incident's Run button) starts
// the run in the given thread with the given parameters, checked as a
// typed command; one run per event id; a refusal is a *UserError, also
// said privately to the person.
func TestEngine_StartRun(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	thread := chatmodel.Conversation{Platform: chan1.Platform, Channel: chan1.Channel, Thread: "incident-root"}
	req := runmodel.StartRequest{Runbook: "prune", Target: "infra-prd", Params: map[string]string{"worker": "w-0\u202e"},
		Thread: thread, User: alice, EventID: "ev-1"}
	err := h.eng.StartRun(h.ctx, req)
	var ue *chatmodel.UserError
	require.ErrorAs(t, err, &ue, "a parameter value a typed command would refuse is refused here too")
	eph := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, eph)
	assert.Contains(t, eph[len(eph)-1], ue.Msg)

	req.Params["worker"], req.EventID = "w-0", "ev-2"
	require.NoError(t, h.eng.StartRun(h.ctx, req))
	require.NoError(t, h.eng.StartRun(h.ctx, req), "the same event again starts nothing")
	h.idle()
	r := h.onlyRun()
	assert.Equal(t, "prune", r.Runbook)
	assert.Equal(t, "infra-prd", r.Target)
	assert.Equal(t, "w-0", r.Params["worker"])
	assert.Equal(t, thread, r.Conversation, "the run posts in the incident's thread")
	assert.Equal(t, alice.ID, r.Requester.ID)

	err = h.eng.StartRun(h.ctx, runmodel.StartRequest{Runbook: "nope", Thread: thread, User: alice})
	require.ErrorAs(t, err, &ue)
}
