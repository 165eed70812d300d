package mattermost

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/internal/httpguard/httpguardtest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// postCommand sends a slash command request to the adapter's handler.
func postCommand(t *testing.T, a *Adapter, form url.Values, header http.Header) (*httptest.ResponseRecorder, *model.CommandResponse) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, CommandPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	rr := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(rr, req)
	var resp model.CommandResponse
	if rr.Code == http.StatusOK {
		require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	}
	return rr, &resp
}

func commandForm(token, text string) url.Values {
	return url.Values{
		"token": {token}, "team_id": {teamID}, "channel_id": {channelID}, "channel_name": {"ci-ops"},
		"user_id": {aliceID}, "user_name": {"alice"}, "command": {"/runbook"}, "text": {text},
		"trigger_id": {"trigger-1"}, "root_id": {""},
	}
}

func TestCommand_Token(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)

	tests := []struct {
		name   string
		form   url.Values
		header http.Header
		want   int
	}{
		{name: "good token in form", form: commandForm(cmdToken, "list"), want: http.StatusOK},
		{name: "good token in header", form: func() url.Values { f := commandForm("", "list"); f.Del("token"); return f }(),
			header: http.Header{"Authorization": {"Token " + cmdToken}}, want: http.StatusOK},
		{name: "bad token", form: commandForm("commandtoken0000000000000b", "list"), want: http.StatusUnauthorized},
		{name: "token prefix", form: commandForm(cmdToken[:10], "list"), want: http.StatusUnauthorized},
		{name: "missing token", form: commandForm("", "list"), want: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr, _ := postCommand(t, a, tt.form, tt.header)
			assert.Equal(t, tt.want, rr.Code)
			if tt.want == http.StatusOK {
				e := rec.next(t)
				assert.Equal(t, chatmodel.EventCommand, e.Kind)
				assert.Equal(t, "list", e.Text)
			} else {
				rec.none(t, 50*time.Millisecond)
			}
		})
	}
}

func TestCommand_Event(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)

	rr, resp := postCommand(t, a, commandForm(cmdToken, "  run worker-stalled target=infra-prd  "), nil)
	require.Equal(t, http.StatusOK, rr.Code)
	assert.Equal(t, model.CommandResponseTypeEphemeral, resp.ResponseType)
	assert.Equal(t, "⏳ `/runbook run worker-stalled target=infra-prd`", resp.Text, "ack echoes the command")

	e := rec.next(t)
	assert.Equal(t, chatmodel.EventCommand, e.Kind)
	assert.Equal(t, "run worker-stalled target=infra-prd", e.Text)
	assert.Equal(t, chatmodel.User{ID: aliceID, Name: "alice"}, e.User)
	assert.Equal(t, chatmodel.Conversation{Platform: Platform, Channel: channelID}, e.Conversation)
	assert.True(t, hasPrefix(e.ID, "command:"), e.ID)
	assert.Zero(t, f.callCount("POST /api/v4/posts"), "the ack is the HTTP answer, not a post")
}

func TestCommand_InThread(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	root := f.addPost(&model.Post{ChannelId: channelID, UserId: aliceID, Message: "incident"})
	reply := f.addPost(&model.Post{ChannelId: channelID, UserId: aliceID, RootId: root.Id, Message: "looking"})

	tests := []struct{ name, rootID, want string }{
		{"typed in the thread", root.Id, root.Id},
		{"root_id is a reply", reply.Id, root.Id},
		{"channel level", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := commandForm(cmdToken, "run x")
			form.Set("root_id", tt.rootID)
			rr, _ := postCommand(t, a, form, nil)
			require.Equal(t, http.StatusOK, rr.Code)
			e := rec.next(t)
			assert.Equal(t, tt.want, e.Conversation.Thread)
		})
	}
}

func TestCommand_EphemeralRepliesGoIntoTheAnswer(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	rec.setReply(func(ctx context.Context, e chatmodel.Event) error {
		if e.Text == "help" {
			return a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "*Usage:* `/runbook run <name>`"})
		}
		if e.Text == "boom" {
			return errors.New("store is read-only")
		}
		return nil
	})
	runAdapter(t, a, rec)

	_, resp := postCommand(t, a, commandForm(cmdToken, "help"), nil)
	assert.Equal(t, "**Usage:** `/runbook run <name>`", resp.Text)
	assert.Zero(t, f.callCount("POST /api/v4/posts/ephemeral"))
	assert.Zero(t, f.callCount("POST /api/v4/posts"))
	rec.next(t)

	_, resp = postCommand(t, a, commandForm(cmdToken, "boom"), nil)
	assert.Contains(t, resp.Text, "store is read-only")
	rec.next(t)
}

func TestCommand_NotRunning(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rr, resp := postCommand(t, a, commandForm(cmdToken, "list"), nil)
	require.Equal(t, http.StatusOK, rr.Code)
	assert.Contains(t, resp.Text, "starting")
}

func TestRegisterCommand(t *testing.T) {
	register := func(c *Config) { c.RegisterCommand, c.CommandToken = true, "" }
	want := "http://groundcrew.test:8080/mattermost/command"
	tests := []struct {
		name       string
		existing   *model.Command
		wantCreate int
		wantUpdate int
	}{
		{name: "creates when missing", wantCreate: 1},
		{name: "fixes a wrong URL", existing: &model.Command{Id: "cmd1", TeamId: teamID, Trigger: "runbook", URL: "http://old/cmd", Method: "P", Token: "registeredtoken00000000000"}, wantUpdate: 1},
		{name: "keeps a correct one", existing: &model.Command{Id: "cmd1", TeamId: teamID, Trigger: "runbook", URL: want, Method: "P", AutoComplete: true, Token: "registeredtoken00000000000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMM(t)
			if tt.existing != nil {
				f.commands = append(f.commands, tt.existing)
			}
			a := newTestAdapter(t, f, register)
			rec := newRecorder()
			runAdapter(t, a, rec)
			assert.Equal(t, tt.wantCreate, f.callCount("POST /api/v4/commands"))
			assert.Equal(t, tt.wantUpdate, f.callCount("PUT /api/v4/commands/cmd1"))
			require.Len(t, f.commands, 1)
			assert.Equal(t, want, f.commands[0].URL)
			assert.Equal(t, model.CommandMethodPost, f.commands[0].Method)
			assert.Equal(t, teamID, f.commands[0].TeamId)

			// The registered command's token is accepted.
			rr, _ := postCommand(t, a, commandForm("registeredtoken00000000000", "list"), nil)
			assert.Equal(t, http.StatusOK, rr.Code)
			rec.next(t)
		})
	}
}

func TestRun_Fatal(t *testing.T) {
	tests := []struct {
		name    string
		mod     func(c *Config)
		prepare func(f *fakeMM)
		want    string
	}{
		{name: "bad bot token", mod: func(c *Config) { c.BotToken = "wrong" }, want: "rejected the bot token"},
		{name: "unknown team", mod: func(c *Config) { c.Team = "nope" }, want: `team "nope" not found`},
		{name: "no permission to register", mod: func(c *Config) { c.RegisterCommand = true },
			prepare: func(f *fakeMM) { f.failStatus["GET /api/v4/commands"] = http.StatusForbidden }, want: "make the bot a team admin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeMM(t)
			if tt.prepare != nil {
				tt.prepare(f)
			}
			a := newTestAdapter(t, f, tt.mod)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := a.Run(ctx, newRecorder())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRun_RetriesWhileServerFails(t *testing.T) {
	f := newFakeMM(t)
	f.failStatus["GET /api/v4/users/me"] = http.StatusServiceUnavailable
	a := newTestAdapter(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, newRecorder()) }()
	require.Eventually(t, func() bool { return f.callCount("GET /api/v4/users/me") >= 6 }, 5*time.Second, 5*time.Millisecond)
	f.mu.Lock()
	delete(f.failStatus, "GET /api/v4/users/me")
	f.mu.Unlock()
	waitConnected(t, a)
	assert.Equal(t, botID, a.BotUserID())
	cancel()
	assert.NoError(t, <-done)
}

// TestCommand_TricklingRequestIsDropped: a request trickling its body is
// cut off at the body deadline, not held (#19.7).
func TestCommand_TricklingRequestIsDropped(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	srv := httptest.NewUnstartedServer(a.HTTPHandler())
	srv.Config = httpguard.Server(a.HTTPHandler())
	srv.Start()
	defer srv.Close()
	took, answer := httpguardtest.Trickle(t, srv.Listener.Addr().String(), CommandPath, 500*time.Millisecond, 20*time.Second)
	assert.NotEqual(t, "still open", answer)
	assert.Less(t, took, httpguard.BodyTimeout+3*time.Second, answer)
}

func TestAllowedSources(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, func(c *Config) { c.AllowedSources = []string{"10.0.4.0/24", "192.0.2.7"} })
	for remote, want := range map[string]int{
		"10.0.4.17:4000": http.StatusUnauthorized, // let through: the token check answers
		"192.0.2.7:1":    http.StatusUnauthorized,
		"192.0.2.8:1":    http.StatusForbidden,
		"[::1]:80":       http.StatusForbidden,
	} {
		r := httptest.NewRequest(http.MethodPost, CommandPath, strings.NewReader("token=bad"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.RemoteAddr = remote
		rr := httptest.NewRecorder()
		a.HTTPHandler().ServeHTTP(rr, r)
		assert.Equal(t, want, rr.Code, remote)
	}
	_, err := New(Config{URL: "https://chat.example.com", BotToken: "x", CommandToken: "y", AllowedSources: []string{"nope"}}, Options{})
	assert.ErrorContains(t, err, "allowed_sources[0]")
}

// An answer with buttons (▶ Run on /runbook show) goes into the command's
// answer as an ephemeral message with its buttons, signed for the user
// and channel it is shown to (Mattermost picks the ephemeral post's id):
// the user's click is a button event with its trigger; the same button
// clicked by someone else, or in another channel, is refused.
func TestCommand_EphemeralButtonsGoIntoTheAnswer(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	rec.setReply(func(ctx context.Context, e chatmodel.Event) error {
		if e.Text == "show worker-stalled" {
			return a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "worker-stalled: A worker is stalled",
				Buttons: []chatmodel.Button{{Action: chatmodel.IntentRun, Label: "▶ Run", Value: "worker-stalled", Style: "primary"}}})
		}
		return nil
	})
	runAdapter(t, a, rec)

	_, resp := postCommand(t, a, commandForm(cmdToken, "show worker-stalled"), nil)
	rec.next(t)
	assert.Equal(t, "worker-stalled: A worker is stalled", resp.Text)
	require.Len(t, resp.Attachments, 1)
	require.Len(t, resp.Attachments[0].Actions, 1)
	act := resp.Attachments[0].Actions[0]
	assert.Equal(t, "▶ Run", act.Name)
	assert.Equal(t, "http://groundcrew.test:8080"+ActionPath, act.Integration.URL)
	assert.Zero(t, f.callCount("POST /api/v4/posts"), "nothing public")

	click := model.PostActionIntegrationRequest{PostId: "ephemeralpostid", UserId: aliceID, ChannelId: channelID, TriggerId: "trigger-9", Context: act.Integration.Context}
	postAction(t, a, click)
	e := rec.next(t)
	assert.Equal(t, chatmodel.EventButton, e.Kind)
	assert.Equal(t, chatmodel.IntentRun, e.Intent)
	assert.Equal(t, "worker-stalled", e.Value)
	assert.Equal(t, aliceID, e.User.ID)
	assert.Empty(t, e.Conversation.Thread, "an ephemeral message is no thread: the run posts in the channel")
	assert.Equal(t, "trigger-9", a.triggers().get(e.ID), "a form opens with the click's trigger")

	for _, forged := range []model.PostActionIntegrationRequest{
		{PostId: "ephemeralpostid", UserId: carolID, ChannelId: channelID, Context: act.Integration.Context},
		{PostId: "ephemeralpostid", UserId: aliceID, ChannelId: "otherchannel", Context: act.Integration.Context},
	} {
		r := postAction(t, a, forged)
		assert.Contains(t, r.EphemeralText, "could not be verified")
	}
	rec.none(t, 100*time.Millisecond)
}
