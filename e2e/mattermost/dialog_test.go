package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// TestDialogOnServer: against Mattermost 11.1, a command that lacks its
// parameters opens an interactive dialog for the user who typed it (with
// the command's trigger_id), and submitting it through the server reaches
// groundcrew as the command typed in full; a refused value comes back on
// its field.
func TestDialogOnServer(t *testing.T) {
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := interactiveAdapter(t, srv, w)
	rec := newRecorder()
	form := chatmodel.Form{Title: "Run pause-pipeline", Command: "run pause-pipeline", Fields: []chatmodel.FormField{
		{Name: "pipeline", Help: "pipeline name", Required: true},
		{Name: "mode", Default: "soft", Options: []string{"soft", "hard"}},
	}}
	rec.setReply(func(ctx context.Context, e chatmodel.Event) {
		switch {
		case e.Text == "run pause-pipeline":
			assert.NoError(t, a.OpenForm(ctx, e, form))
		case strings.Contains(e.Text, "pipeline=bad"):
			_ = a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: `parameter "pipeline": "bad" is not a pipeline`})
		}
	})
	runAdapter(ctx, t, a, rec)
	waitCommand(ctx, t, w)
	alice := w.Users["alice"]

	ws, err := model.NewWebSocketClient4("ws"+strings.TrimPrefix(srv.URL, "http"), alice.AuthToken)
	require.NoError(t, err)
	ws.Listen()
	t.Cleanup(ws.Close)
	dialogs := make(chan model.OpenDialogRequest, 4)
	go func() {
		for ev := range ws.EventChannel {
			if ev.EventType() != model.WebsocketEventOpenDialog {
				continue
			}
			raw, _ := ev.GetData()["dialog"].(string)
			var d model.OpenDialogRequest
			if json.Unmarshal([]byte(raw), &d) == nil {
				dialogs <- d
			}
		}
	}()
	go func() {
		for range ws.ResponseChannel {
		}
	}()
	time.Sleep(500 * time.Millisecond) // the socket is listening

	_, err = alice.runCommand(ctx, w.Channel.Id, "", "/runbook run pause-pipeline")
	require.NoError(t, err)
	var d model.OpenDialogRequest
	select {
	case d = <-dialogs:
	case <-time.After(20 * time.Second):
		t.Fatal("no dialog opened for alice")
	}
	require.Len(t, d.Dialog.Elements, 2)
	assert.Equal(t, "select", d.Dialog.Elements[1].Type)

	sub := model.SubmitDialogRequest{URL: d.URL, CallbackId: d.Dialog.CallbackId, State: d.Dialog.State, ChannelId: w.Channel.Id, TeamId: w.Team.Id,
		Submission: map[string]any{"pipeline": "bad", "mode": "soft"}}
	resp, _, err := alice.SubmitInteractiveDialog(ctx, sub)
	require.NoError(t, err)
	assert.Equal(t, `parameter "pipeline": "bad" is not a pipeline`, resp.Errors["pipeline"], "the error is on its field")

	sub.Submission = map[string]any{"pipeline": "main", "mode": "hard"}
	resp, _, err = alice.SubmitInteractiveDialog(ctx, sub)
	require.NoError(t, err)
	assert.Empty(t, resp.Errors)
	e := rec.waitFor(t, "the submitted command", 10*time.Second, func(e chatmodel.Event) bool { return strings.Contains(e.Text, "pipeline=main") })
	assert.Equal(t, "run pause-pipeline mode=hard pipeline=main", e.Text, "the same as typing it")
	assert.Equal(t, alice.User.Id, e.User.ID)
}
