package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// A run form is a modal opened with the command's trigger_id; its
// submission is the command typed in full.
func TestForm_ModalOpenAndSubmit(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ev := a.commandEvent(slackapi.SlashCommand{TriggerID: "T123", UserID: "UALICE", UserName: "alice", ChannelID: "C0OPS", Text: "run pause-pipeline"})
	form := chatmodel.Form{Title: "Run pause-pipeline", Command: "run pause-pipeline target=infra-prd", Fields: []chatmodel.FormField{
		{Name: "pipeline", Help: "pipeline name", Required: true},
		{Name: "mode", Default: "soft", Options: []string{"soft", "hard"}},
	}}
	require.NoError(t, a.OpenForm(context.Background(), ev, form))
	f.mu.Lock()
	require.Len(t, f.views, 1)
	v := f.views[0]
	f.mu.Unlock()
	assert.Equal(t, "T123", v.Trigger)
	var view slackapi.ModalViewRequest
	require.NoError(t, json.Unmarshal([]byte(v.View), &view))
	assert.Equal(t, "Run pause-pipeline", view.Title.Text)
	require.Len(t, view.Blocks.BlockSet, 2)
	in := view.Blocks.BlockSet[0].(*slackapi.InputBlock)
	assert.Equal(t, "pipeline", in.BlockID)
	assert.False(t, in.Optional)
	assert.Equal(t, "pipeline name", in.Hint.Text)
	sel := view.Blocks.BlockSet[1].(*slackapi.InputBlock)
	assert.True(t, sel.Optional)
	assert.Regexp(t, `^mode\.[0-9a-f]{8}$`, sel.BlockID, "a select's block is named by its options")
	assert.Equal(t, "static_select", sel.Element.(*slackapi.SelectBlockElement).Type)

	// Slack sends the submission with the user and the state.
	cb := slackapi.InteractionCallback{Type: slackapi.InteractionTypeViewSubmission, User: slackapi.User{ID: "UALICE", Name: "alice"}}
	cb.View.CallbackID, cb.View.PrivateMetadata, cb.View.ID, cb.View.Hash = view.CallbackID, view.PrivateMetadata, "V1", "h1"
	cb.View.State = &slackapi.ViewState{Values: map[string]map[string]slackapi.BlockAction{
		"pipeline":  {"pipeline": {Value: " main/ci "}},
		sel.BlockID: {"mode": {SelectedOption: slackapi.OptionBlockObject{Value: "hard"}}},
	}}
	evs := a.interactionEvents(cb)
	require.Len(t, evs, 1)
	assert.Equal(t, chatmodel.EventCommand, evs[0].Kind)
	assert.Equal(t, "run pause-pipeline target=infra-prd mode=hard pipeline=main/ci", evs[0].Text, "the same as typing it")
	assert.Equal(t, chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}, evs[0].Conversation)
	assert.Equal(t, "UALICE", evs[0].User.ID)

	// A button press (▶ Run on /runbook show) opens it with its own trigger_id.
	require.NoError(t, a.OpenForm(context.Background(), chatmodel.Event{ID: "slack:action:T456", Conversation: chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}}, form))
	f.mu.Lock()
	assert.Equal(t, "T456", f.views[len(f.views)-1].Trigger)
	f.mu.Unlock()
	// Without a trigger there is no modal.
	assert.Error(t, a.OpenForm(context.Background(), chatmodel.Event{ID: "slack:action:UALICE:1795979200.000001"}, form))
	assert.Error(t, a.OpenForm(context.Background(), chatmodel.Event{ID: "Ev123"}, form))
}

// checkerStub refuses the values it is told to.
type checkerStub struct {
	refuse map[string]string
	got    chan map[string]string
}

func (c *checkerStub) CheckForm(_ context.Context, _ chatmodel.Conversation, command string, values map[string]string) map[string]string {
	c.got <- values
	return c.refuse
}

// submissionPayload is a view_submission of a form opened for fields.
func submissionPayload(t *testing.T, a *Adapter, f *fakeSlack, values map[string]string) string {
	t.Helper()
	ev := a.commandEvent(slackapi.SlashCommand{TriggerID: "T9", UserID: "UALICE", UserName: "alice", ChannelID: "C0OPS", Text: "run waiter"})
	form := chatmodel.Form{Title: "Run waiter", Command: "run waiter target=infra-prd", Fields: []chatmodel.FormField{{Name: "worker", Required: true}, {Name: "note"}}}
	require.NoError(t, a.OpenForm(context.Background(), ev, form))
	f.mu.Lock()
	raw := f.views[len(f.views)-1].View
	f.mu.Unlock()
	var view slackapi.ModalViewRequest
	require.NoError(t, json.Unmarshal([]byte(raw), &view))
	state := map[string]map[string]any{}
	for k, v := range values {
		state[k] = map[string]any{k: map[string]any{"type": "plain_text_input", "value": v}}
	}
	b, err := json.Marshal(map[string]any{"type": "view_submission", "user": map[string]any{"id": "UALICE", "name": "alice"},
		"view": map[string]any{"id": "V9", "hash": "h9", "callback_id": view.CallbackID, "private_metadata": view.PrivateMetadata, "state": map[string]any{"values": state}}})
	require.NoError(t, err)
	return string(b)
}

// A value the engine's check refuses is answered on its field
// (response_action "errors" in the HTTP answer): the modal stays open and
// nothing is submitted; accepted values close it and become the command.
func TestForm_RefusedValueShownOnItsField_HTTP(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	check := &checkerStub{refuse: map[string]string{"worker": "Parameter \"worker\": character 2 is U+202E.", "elsewhere": "not on the form"}, got: make(chan map[string]string, 4)}
	a.SetFormChecker(check)
	rec := newRecorder()
	runAdapter(t, a, rec)

	body := []byte(url.Values{"payload": {submissionPayload(t, a, f, map[string]string{"worker": "w\u202e0", "note": "a b"})}}.Encode())
	res := serve(t, a.HTTPHandler(), PathInteractivity, formType, body, time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)
	assert.JSONEq(t, `{"response_action":"errors","errors":{"worker":"Parameter \"worker\": character 2 is U+202E."}}`, res.Body.String())
	assert.Equal(t, map[string]string{"worker": "w\u202e0", "note": "ab"}, <-check.got, "the values as the command would carry them")
	rec.none(t, 100*time.Millisecond)

	check.refuse = nil
	res = serve(t, a.HTTPHandler(), PathInteractivity, formType, body, time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)
	assert.Empty(t, res.Body.String(), "accepted: the modal closes")
	<-check.got
	e := rec.next(t)
	assert.Equal(t, "run waiter target=infra-prd note=ab worker=w\u202e0", e.Text)
}

// In Socket Mode the errors are the ack's payload.
func TestForm_RefusedValueShownOnItsField_Socket(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeSocket})
	payload := submissionPayload(t, a, f, map[string]string{"worker": "bad"})
	script := &socketScript{acks: make(chan string, 10), payloads: make(chan json.RawMessage, 10), conns: [][]map[string]any{{
		envelope("env-view", "interactive", rawJSON([]byte(payload))),
	}}}
	f.setWebsocket(script.serve(t))
	check := &checkerStub{refuse: map[string]string{"worker": "No such worker."}, got: make(chan map[string]string, 4)}
	a.SetFormChecker(check)
	rec := newRecorder()
	runAdapter(t, a, rec)

	select {
	case id := <-script.acks:
		assert.Equal(t, "env-view", id)
	case <-time.After(5 * time.Second):
		t.Fatal("the submission was not acked")
	}
	assert.JSONEq(t, `{"response_action":"errors","errors":{"worker":"No such worker."}}`, string(<-script.payloads))
	rec.none(t, 100*time.Millisecond)
}
