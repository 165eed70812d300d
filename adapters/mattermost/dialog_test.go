package mattermost

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func submitDialog(t *testing.T, a *Adapter, req model.SubmitDialogRequest) (int, model.SubmitDialogResponse) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	rr := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(rr, httptest.NewRequest(http.MethodPost, DialogPath, bytes.NewReader(body)))
	var resp model.SubmitDialogResponse
	if rr.Body.Len() > 0 {
		require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	}
	return rr.Code, resp
}

// A run command missing its parameters opens an interactive dialog with the
// command's trigger; the submission is the command typed in full, and what
// the engine says about a field is shown on that field.
func TestDialog_OpenAndSubmit(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	form := chatmodel.Form{Title: "Run pause-pipeline", Command: "run pause-pipeline target=infra-prd", Fields: []chatmodel.FormField{
		{Name: "pipeline", Help: "pipeline name", Required: true},
		{Name: "mode", Default: "soft", Options: []string{"soft", "hard"}},
	}}
	rec.setReply(func(ctx context.Context, e chatmodel.Event) error {
		switch e.Text {
		case "run pause-pipeline target=infra-prd":
			return a.OpenForm(ctx, e, form)
		case "run pause-pipeline target=infra-prd mode=soft pipeline=bad!":
			return a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: `parameter "pipeline": "bad!" does not match the pattern [a-z]+`})
		}
		return nil
	})
	runAdapter(t, a, rec)

	postCommand(t, a, commandForm(cmdToken, "run pause-pipeline target=infra-prd"), nil)
	rec.next(t)
	f.mu.Lock()
	require.Len(t, f.dialogs, 1)
	d := f.dialogs[0]
	f.mu.Unlock()
	assert.Equal(t, "trigger-1", d.TriggerId)
	assert.Equal(t, "http://groundcrew.test:8080"+DialogPath, d.URL)
	require.Len(t, d.Dialog.Elements, 2)
	assert.Equal(t, model.DialogElement{DisplayName: "pipeline", Name: "pipeline", Type: "text", HelpText: "pipeline name", MaxLength: 150}, d.Dialog.Elements[0])
	assert.Equal(t, "select", d.Dialog.Elements[1].Type)
	assert.True(t, d.Dialog.Elements[1].Optional)
	assert.Equal(t, "soft", d.Dialog.Elements[1].Default)

	sub := model.SubmitDialogRequest{CallbackId: d.Dialog.CallbackId, State: d.Dialog.State, UserId: aliceID, ChannelId: channelID,
		Submission: map[string]any{"pipeline": "bad!", "mode": "soft"}}
	code, resp := submitDialog(t, a, sub)
	assert.Equal(t, http.StatusOK, code)
	e := rec.next(t)
	assert.Equal(t, chatmodel.User{ID: aliceID, Name: "alice"}, e.User, "the user is the one Mattermost names, named from its id")
	assert.Equal(t, map[string]string{"pipeline": `parameter "pipeline": "bad!" does not match the pattern [a-z]+`}, resp.Errors, "the error is on its field")

	sub.Submission = map[string]any{"pipeline": "main", "mode": "hard"}
	code, resp = submitDialog(t, a, sub)
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, resp.Errors)
	e = rec.next(t)
	assert.Equal(t, "run pause-pipeline target=infra-prd mode=hard pipeline=main", e.Text, "the same as typing it")

	// A forged state, or another user's, is refused.
	sub.UserId = carolID
	_, resp = submitDialog(t, a, sub)
	assert.Contains(t, resp.Error, "could not be verified")
	rec.none(t, 100*time.Millisecond)
}

// refreshStub answers a refresh with the workers of the target picked, or
// a note when it has none.
type refreshStub struct{ workers map[string][]string }

func (r refreshStub) RefreshForm(_ context.Context, _ chatmodel.Conversation, command string, values map[string]string) (chatmodel.Form, error) {
	f := chatmodel.Form{Title: "Run worker-stalled", Command: command, Fields: []chatmodel.FormField{
		{Name: "target", Required: true, Options: []string{"infra-dev", "infra-down"}, Default: values["target"], Refresh: true},
		{Name: "worker"},
	}}
	if ws, ok := r.workers[values["target"]]; ok {
		f.Fields[1].Options = ws
	} else {
		f.Note = "Could not read the workers of " + values["target"] + " (connection refused): type worker."
	}
	return f, nil
}

// The target of a dialog is a select with refresh: Mattermost posts its
// change to the dialog's source_url, answered with the dialog again, its
// worker select listing the new target's workers (or a note and free
// text). The state stays signed: a forged one is refused.
func TestDialog_TargetChangeRefreshesIt(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	a.SetFormRefresher(refreshStub{workers: map[string][]string{"infra-dev": {"dev-w-1", "dev-w-2"}}})
	rec := newRecorder()
	form, _ := refreshStub{}.RefreshForm(context.Background(), chatmodel.Conversation{}, "run worker-stalled", map[string]string{})
	form.Note = ""
	rec.setReply(func(ctx context.Context, e chatmodel.Event) error { return a.OpenForm(ctx, e, form) })
	runAdapter(t, a, rec)

	postCommand(t, a, commandForm(cmdToken, "run worker-stalled"), nil)
	rec.next(t)
	f.mu.Lock()
	d := f.dialogs[0]
	f.mu.Unlock()
	assert.True(t, d.Dialog.Elements[0].Refresh, "the target refreshes the dialog")
	assert.Equal(t, "http://groundcrew.test:8080"+DialogPath, d.Dialog.SourceURL)
	assert.Equal(t, "text", d.Dialog.Elements[1].Type)

	sub := model.SubmitDialogRequest{Type: "refresh", CallbackId: d.Dialog.CallbackId, State: d.Dialog.State, UserId: aliceID, ChannelId: channelID,
		Submission: map[string]any{"target": "infra-dev"}}
	code, resp := submitDialog(t, a, sub)
	assert.Equal(t, http.StatusOK, code)
	require.Equal(t, "form", resp.Type)
	require.NotNil(t, resp.Form)
	assert.Equal(t, d.Dialog.State, resp.Form.State, "the same signed state")
	w := resp.Form.Elements[1]
	assert.Equal(t, "select", w.Type)
	require.Len(t, w.Options, 2)
	assert.Equal(t, "dev-w-2", w.Options[1].Value)
	assert.Equal(t, "infra-dev", resp.Form.Elements[0].Default)
	assert.NoError(t, resp.IsValid(), "Mattermost takes it")
	rec.none(t, 100*time.Millisecond)

	sub.Submission = map[string]any{"target": "infra-down"}
	_, resp = submitDialog(t, a, sub)
	require.NotNil(t, resp.Form)
	assert.Contains(t, resp.Form.IntroductionText, "⚠️ Could not read the workers of infra-down (connection refused): type worker.")
	assert.Equal(t, "text", resp.Form.Elements[1].Type)

	sub.UserId = carolID
	_, resp = submitDialog(t, a, sub)
	assert.Nil(t, resp.Form)
	assert.Contains(t, resp.Error, "could not be verified")
}
