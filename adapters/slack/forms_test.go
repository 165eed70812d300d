package slack

import (
	"context"
	"encoding/json"
	"testing"

	slackapi "github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
)

// A run form is a modal opened with the command's trigger_id; its
// submission is the command typed in full.
func TestForm_ModalOpenAndSubmit(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ev := a.commandEvent(slackapi.SlashCommand{TriggerID: "T123", UserID: "UALICE", UserName: "alice", ChannelID: "C0OPS", Text: "run pause-pipeline"})
	form := bot.Form{Title: "Run pause-pipeline", Command: "run pause-pipeline target=infra-prd", Fields: []bot.FormField{
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
	assert.Equal(t, "static_select", sel.Element.(*slackapi.SelectBlockElement).Type)

	// Slack sends the submission with the user and the state.
	cb := slackapi.InteractionCallback{Type: slackapi.InteractionTypeViewSubmission, User: slackapi.User{ID: "UALICE", Name: "alice"}}
	cb.View.CallbackID, cb.View.PrivateMetadata, cb.View.ID, cb.View.Hash = view.CallbackID, view.PrivateMetadata, "V1", "h1"
	cb.View.State = &slackapi.ViewState{Values: map[string]map[string]slackapi.BlockAction{
		"pipeline": {"pipeline": {Value: " main/ci "}},
		"mode":     {"mode": {SelectedOption: slackapi.OptionBlockObject{Value: "hard"}}},
	}}
	evs := a.interactionEvents(cb)
	require.Len(t, evs, 1)
	assert.Equal(t, bot.EventCommand, evs[0].Kind)
	assert.Equal(t, "run pause-pipeline target=infra-prd mode=hard pipeline=main/ci", evs[0].Text, "the same as typing it")
	assert.Equal(t, bot.Conversation{Platform: Platform, Channel: "C0OPS"}, evs[0].Conversation)
	assert.Equal(t, "UALICE", evs[0].User.ID)

	// Without a trigger (not a slash command) there is no modal.
	assert.Error(t, a.OpenForm(context.Background(), bot.Event{ID: "slack:action:x"}, form))
}
