package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// formListener collects what Mattermost pushes to a user for a run form:
// ephemeral messages (with their action cookies) and dialogs to open.
type formListener struct {
	ephemeral chan *model.Post
	dialogs   chan model.OpenDialogRequest
}

func listenForms(t *testing.T, serverURL string, u *mmUser) *formListener {
	t.Helper()
	ws, err := model.NewWebSocketClient4("ws"+strings.TrimPrefix(serverURL, "http"), u.AuthToken)
	require.NoError(t, err)
	ws.Listen()
	t.Cleanup(ws.Close)
	l := &formListener{ephemeral: make(chan *model.Post, 20), dialogs: make(chan model.OpenDialogRequest, 4)}
	go func() {
		for ev := range ws.EventChannel {
			switch ev.EventType() {
			case model.WebsocketEventEphemeralMessage:
				raw, _ := ev.GetData()["post"].(string)
				var p model.Post
				if json.Unmarshal([]byte(raw), &p) == nil {
					l.ephemeral <- &p
				}
			case model.WebsocketEventOpenDialog:
				raw, _ := ev.GetData()["dialog"].(string)
				var d model.OpenDialogRequest
				if json.Unmarshal([]byte(raw), &d) == nil {
					l.dialogs <- d
				}
			}
		}
	}()
	go func() {
		for range ws.ResponseChannel {
		}
	}()
	time.Sleep(500 * time.Millisecond) // the socket is listening
	return l
}

func (l *formListener) ephemeralWith(t *testing.T, substr string) *model.Post {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case p := <-l.ephemeral:
			if strings.Contains(p.Message, substr) {
				return p
			}
		case <-deadline:
			t.Fatalf("no ephemeral message containing %q", substr)
		}
	}
}

func (l *formListener) dialog(t *testing.T) model.OpenDialogRequest {
	t.Helper()
	select {
	case d := <-l.dialogs:
		return d
	case <-time.After(20 * time.Second):
		t.Fatal("no dialog opened")
	}
	return model.OpenDialogRequest{}
}

func element(t *testing.T, d model.Dialog, name string) model.DialogElement {
	t.Helper()
	for _, el := range d.Elements {
		if el.Name == name {
			return el
		}
	}
	t.Fatalf("no element %q in dialog %q", name, d.Title)
	return model.DialogElement{}
}

func optionValues(el model.DialogElement) []string {
	var out []string
	for _, o := range el.Options {
		out = append(out, o.Value)
	}
	return out
}

// TestGroundcrewRunForm: the real `groundcrew serve` on Mattermost 11.1
// with two Concourse targets (simulators). `/runbook show worker-stalled`
// answers privately with a ▶ Run button; pressing it opens the run dialog
// (target a select that refreshes the dialog, worker free text until a
// target is picked). Changing the target — the refresh request the web
// app sends to the dialog's source_url, through the server — gives the
// workers of that target on its simulator, for each target; submitting
// starts the run on the target and worker picked. A `/runbook run` with
// the target given opens the dialog with that target's pipelines read
// live.
func TestGroundcrewRunForm(t *testing.T) {
	requireBuiltins(t, groundcrewBinary(t))
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice, carol := w.Users["alice"], w.Users["carol"]
	createOncall(ctx, t, w, alice, carol)

	prd := e2eSim(t)
	devWorld := concoursesim.NewWorld().
		AddUser("groundcrew", "groundcrew-pass", map[string]string{"main": concoursesim.RoleOwner}).
		RunningWorkers("dev-worker", 2).
		AddPipeline(concoursesim.Pipeline{Team: "main", Name: "dev-app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	dev, err := concoursesim.New(*devWorld)
	require.NoError(t, err)
	t.Cleanup(dev.Close)
	// The second target continues the targets map of the config.
	second := fmt.Sprintf(`  infra-dev:
    url: %s
    team: main
    username: groundcrew
    password: groundcrew-pass
`, dev.URL())
	cfgPath, listen := writeGroundcrewConfig(t, w, prd, second+defaultApprovals)
	startGroundcrewWith(t, cfgPath, listen)
	waitCommand(ctx, t, w)
	forms := listenForms(t, srv.URL, alice)

	// ▶ Run on /runbook show, an ephemeral message: pressed with its cookie.
	_, err = alice.runCommand(ctx, w.Channel.Id, "", "/runbook show worker-stalled")
	require.NoError(t, err)
	show := forms.ephemeralWith(t, "worker-stalled")
	var run *model.PostAction
	for _, att := range show.Attachments() {
		for _, act := range att.Actions {
			if act.Name == "▶ Run" {
				run = act
			}
		}
	}
	require.NotNil(t, run, "a ▶ Run button on /runbook show: %+v", show.Attachments())
	_, err = alice.DoPostActionWithCookie(ctx, show.Id, run.Id, "", run.Cookie)
	require.NoError(t, err)
	d := forms.dialog(t)
	assert.Equal(t, "Run worker-stalled", d.Dialog.Title)
	target := element(t, d.Dialog, "target")
	assert.Equal(t, "select", target.Type)
	assert.Equal(t, []string{"infra-dev", "infra-prd"}, optionValues(target))
	assert.True(t, target.Refresh, "a target change refreshes the dialog")
	require.NotEmpty(t, d.Dialog.SourceURL)
	assert.Equal(t, "text", element(t, d.Dialog, "worker").Type, "no target yet: free text")

	// The refresh, as the web app sends it when the target changes.
	refresh := func(target string) *model.Dialog {
		t.Helper()
		resp, _, err := alice.SubmitInteractiveDialog(ctx, model.SubmitDialogRequest{Type: "refresh", URL: d.Dialog.SourceURL, CallbackId: d.Dialog.CallbackId,
			State: d.Dialog.State, ChannelId: w.Channel.Id, TeamId: w.Team.Id, Submission: map[string]any{"target": target, "worker": ""}})
		require.NoError(t, err)
		require.Equal(t, "form", resp.Type, "the refresh answers with the dialog: %+v", resp)
		require.NotNil(t, resp.Form)
		return resp.Form
	}
	f := refresh("infra-dev")
	assert.Equal(t, []string{"dev-worker-0", "dev-worker-1"}, optionValues(element(t, *f, "worker")), "infra-dev's workers, read from its simulator")
	assert.Equal(t, "infra-dev", element(t, *f, "target").Default)
	f = refresh("infra-prd")
	var want []string
	for i := range 4 {
		want = append(want, fmt.Sprintf("%s%d", workerPrefix, i))
	}
	assert.Equal(t, want, optionValues(element(t, *f, "worker")), "infra-prd's workers")

	// Submitted: the run starts on the target and worker picked.
	since := time.Now()
	resp, _, err := alice.SubmitInteractiveDialog(ctx, model.SubmitDialogRequest{URL: d.URL, CallbackId: f.CallbackId, State: f.State,
		ChannelId: w.Channel.Id, TeamId: w.Team.Id, Submission: map[string]any{"target": "infra-prd", "worker": workerPrefix + "1"}})
	require.NoError(t, err)
	assert.Empty(t, resp.Errors)
	assert.Empty(t, resp.Error)
	root := findRunRoot(ctx, t, w, alice, since, "worker-stalled", workerPrefix+"1")
	assert.Contains(t, root.Message, "infra-prd")

	// The target given: the dialog lists its pipelines at once.
	_, err = alice.runCommand(ctx, w.Channel.Id, "", "/runbook run pause-pipeline target=infra-dev")
	require.NoError(t, err)
	d = forms.dialog(t)
	assert.Equal(t, []string{"main/dev-app"}, optionValues(element(t, d.Dialog, "pipeline")))
}
