package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/adapters/mattermost"
	"github.com/groundcrew/groundcrew/internal/secret"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func secretOf(s string) secret.Secret { return secret.Secret(s) }

// recorder is a bot.Handler that records events and can answer some of
// them synchronously, as the engine does for quick refusals.
type recorder struct {
	events chan chatmodel.Event
	mu     sync.Mutex
	reply  func(ctx context.Context, e chatmodel.Event)
}

func newRecorder() *recorder { return &recorder{events: make(chan chatmodel.Event, 100)} }

func (r *recorder) Handle(ctx context.Context, e chatmodel.Event) error {
	r.mu.Lock()
	reply := r.reply
	r.mu.Unlock()
	if reply != nil {
		reply(ctx, e)
	}
	r.events <- e
	return nil
}

func (r *recorder) setReply(f func(ctx context.Context, e chatmodel.Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reply = f
}

// waitFor returns the first event matching ok, failing after timeout. Other
// events are dropped.
func (r *recorder) waitFor(t *testing.T, what string, timeout time.Duration, ok func(chatmodel.Event) bool) chatmodel.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case e := <-r.events:
			if ok(e) {
				return e
			}
			t.Logf("skipping event while waiting for %s: %+v", what, e)
		case <-deadline:
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
	}
}

// serveAdapter serves the adapter's HTTP endpoints on a free loopback port
// and returns the callback URL.
func serveAdapter(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String()
}

// runAdapter runs the adapter until the test ends; cleanup cancels it and
// checks that Run returns, without error, within 10 s.
func runAdapter(ctx context.Context, t *testing.T, a *mattermost.Adapter, h chatmodel.Handler) {
	t.Helper()
	runCtx, stopRun := context.WithCancel(ctx)
	runDone := make(chan error, 1)
	go func() { runDone <- a.Run(runCtx, h) }()
	t.Cleanup(func() {
		stopRun()
		select {
		case err := <-runDone:
			assert.NoError(t, err, "Run")
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("GROUNDCREW_E2E_VERBOSE") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitCommand waits until /runbook is registered in the team.
func waitCommand(ctx context.Context, t *testing.T, w *world) *model.Command {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cmds, _, err := w.Admin.ListCommands(ctx, w.Team.Id, true)
		require.NoError(t, err)
		for _, c := range cmds {
			if c.Trigger == mattermost.Trigger {
				return c
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the adapter did not register /runbook within 30s")
	return nil
}

// ephemeralListener collects the ephemeral messages a user receives.
type ephemeralListener struct {
	ws    *model.WebSocketClient
	posts chan *model.Post
}

func listenEphemeral(t *testing.T, serverURL string, u *mmUser) *ephemeralListener {
	t.Helper()
	ws, err := model.NewWebSocketClient4("ws"+strings.TrimPrefix(serverURL, "http"), u.AuthToken)
	require.NoError(t, err)
	ws.Listen()
	l := &ephemeralListener{ws: ws, posts: make(chan *model.Post, 20)}
	go func() {
		for ev := range ws.EventChannel {
			if ev.EventType() != model.WebsocketEventEphemeralMessage {
				continue
			}
			raw, _ := ev.GetData()["post"].(string)
			var p model.Post
			if err := json.Unmarshal([]byte(raw), &p); err == nil {
				l.posts <- &p
			}
		}
	}()
	go func() {
		for range ws.ResponseChannel {
		}
	}()
	t.Cleanup(ws.Close)
	return l
}

func (l *ephemeralListener) waitFor(t *testing.T, substr string, timeout time.Duration) *model.Post {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case p := <-l.posts:
			if strings.Contains(p.Message, substr) {
				return p
			}
		case <-deadline:
			t.Fatalf("no ephemeral message containing %q within %s", substr, timeout)
		}
	}
}

// TestAdapterAgainstServer drives the adapter against a real server with a
// recording handler: command registration and token, commands in threads,
// bot posts, buttons, reactions, reconnect, ephemeral replies, threads and
// groups.
func TestAdapterAgainstServer(t *testing.T) {
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	proxy := newCutProxy(t, srv.URL)
	rec := newRecorder()
	mux := http.NewServeMux()
	callback := serveAdapter(t, mux)
	// forgeAs, when set, rewrites the user_name of button callbacks on their
	// way to groundcrew: a callback with a genuine signed context, the real
	// user_id and someone else's name (#19.1).
	var forgeMu sync.Mutex
	forgeAs := ""
	a, err := mattermost.New(mattermost.Config{
		URL:             proxy.URL,
		BotToken:        secretOf(w.BotToken),
		ActionHMACKey:   secretOf("e2e-hmac-key-0123456789abcdef"),
		Team:            "ops",
		CallbackURL:     callback,
		RegisterCommand: true,
	}, mattermost.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	mux.Handle("/mattermost/", forging(a.HTTPHandler(), func() string { forgeMu.Lock(); defer forgeMu.Unlock(); return forgeAs }))
	runAdapter(ctx, t, a, rec)

	cmd := waitCommand(ctx, t, w)
	assert.Equal(t, callback+mattermost.CommandPath, cmd.URL)
	alice, carol, dave := w.Users["alice"], w.Users["carol"], w.Users["dave"]

	// The engine answers "help" with an ephemeral message while handling it:
	// it must come back as the command's (truly ephemeral) answer.
	rec.setReply(func(ctx context.Context, e chatmodel.Event) {
		if e.Kind == chatmodel.EventCommand && e.Text == "help" {
			_ = a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "*Usage:* `/runbook run <name>`"})
		}
		if e.Kind == chatmodel.EventButton && e.User.ID == alice.User.Id {
			_ = a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "Not counted: you started this run."})
		}
	})
	resp, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook help")
	require.NoError(t, err)
	assert.Equal(t, "**Usage:** `/runbook run <name>`", resp.Text)
	e := rec.waitFor(t, "the help command", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventCommand })
	assert.Equal(t, "help", e.Text)
	assert.Equal(t, chatmodel.User{ID: alice.User.Id, Name: "alice"}, e.User)
	assert.Equal(t, chatmodel.Conversation{Platform: "mattermost", Channel: w.Channel.Id}, e.Conversation)

	// A wrong token is refused before anything else.
	r, err := http.PostForm(callback+mattermost.CommandPath, map[string][]string{"token": {"nope"}, "user_id": {alice.User.Id}, "channel_id": {w.Channel.Id}, "text": {"run x"}})
	require.NoError(t, err)
	r.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)

	// The bot posts a run: a root message (by channel name) and a gate reply.
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "🛠 *demo* on sim — started by @alice"})
	require.NoError(t, err)
	assert.Equal(t, w.Channel.Id, root.Channel)
	p, _, err := carol.GetPost(ctx, root.ID, "")
	require.NoError(t, err)
	assert.Equal(t, "🛠 **demo** on sim — started by @alice", p.Message)
	assert.Equal(t, w.BotUser.Id, p.UserId, "run messages are posted by the bot account")

	gate, err := a.Post(ctx, chatmodel.Conversation{Channel: root.Channel, Thread: root.ID}, chatmodel.Message{
		Text:    "🔒 Approval needed — prune worker `w0`",
		Detail:  "name  state\nw0    stalled",
		Buttons: []chatmodel.Button{{Action: "approve", Label: "Approve", Value: "r1/s5", Style: "primary"}, {Action: "reject", Label: "Reject", Value: "r1/s5", Style: "danger"}},
	})
	require.NoError(t, err)
	assert.Equal(t, root.ID, gate.Thread)
	p, _, err = carol.GetPost(ctx, gate.ID, "")
	require.NoError(t, err)
	require.Len(t, p.Attachments(), 1)
	actions := p.Attachments()[0].Actions
	require.Len(t, actions, 2)
	assert.Equal(t, "Approve", actions[0].Name)
	assert.Nil(t, actions[0].Integration, "the signed context stays hidden from users")

	// A reaction by a user arrives; the bot's own does not.
	_, _, err = carol.SaveReaction(ctx, &model.Reaction{UserId: carol.User.Id, PostId: gate.ID, EmojiName: "white_check_mark"})
	require.NoError(t, err)
	e = rec.waitFor(t, "carol's ✅", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventReaction })
	assert.Equal(t, gate.ID, e.Message.ID)
	assert.Equal(t, root.ID, e.Message.Thread)
	assert.Equal(t, chatmodel.IntentApprove, e.Intent)
	assert.Equal(t, chatmodel.User{ID: carol.User.Id, Name: "carol"}, e.User)
	assert.True(t, strings.HasPrefix(e.ID, "reaction:"+gate.ID+":"+carol.User.Id+":white_check_mark:added:"), e.ID)
	carolAddID := e.ID

	botClient := model.NewAPIv4Client(srv.URL)
	botClient.SetToken(w.BotToken)
	_, _, err = botClient.SaveReaction(ctx, &model.Reaction{UserId: w.BotUser.Id, PostId: gate.ID, EmojiName: "eyes"})
	require.NoError(t, err)
	_, _, err = dave.SaveReaction(ctx, &model.Reaction{UserId: dave.User.Id, PostId: gate.ID, EmojiName: "+1"})
	require.NoError(t, err)
	e = rec.waitFor(t, "dave's +1", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventReaction })
	assert.Equal(t, dave.User.Id, e.User.ID, "the bot's own reaction must not be delivered")
	assert.Equal(t, chatmodel.IntentApprove, e.Intent)

	// Every reaction groundcrew advertises exists on this server: reacting
	// with it through the API works (no 404) and arrives as its intent
	// (#19.8: track_next does not exist on Mattermost 11.1).
	for _, r := range chatutil.Reactions {
		name := r.Names[0]
		_, _, err := dave.SaveReaction(ctx, &model.Reaction{UserId: dave.User.Id, PostId: root.ID, EmojiName: name})
		require.NoError(t, err, "reacting :%s: (advertised for %s)", name, r.Intent)
		e = rec.waitFor(t, "dave's :"+name+":", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventReaction && e.Message.ID == root.ID })
		assert.Equal(t, r.Intent, e.Intent, name)
	}
	for _, i := range []chatmodel.Intent{chatmodel.IntentApprove, chatmodel.IntentReject, chatmodel.IntentSkip, chatmodel.IntentDone, chatmodel.IntentFail} {
		assert.NotEmpty(t, a.Symbol(i), "a hint symbol for %s", i)
	}

	// A bot account's reaction is delivered flagged as a bot: it never counts.
	other, _, err := w.Admin.CreateBot(ctx, &model.Bot{Username: "ci-bot", DisplayName: "CI bot"})
	require.NoError(t, err)
	otherTok, _, err := w.Admin.CreateUserAccessToken(ctx, other.UserId, "e2e")
	require.NoError(t, err)
	_, _, err = w.Admin.AddTeamMember(ctx, w.Team.Id, other.UserId)
	require.NoError(t, err)
	_, _, err = w.Admin.AddChannelMember(ctx, w.Channel.Id, other.UserId)
	require.NoError(t, err)
	otherClient := model.NewAPIv4Client(srv.URL)
	otherClient.SetToken(otherTok.Token)
	_, _, err = otherClient.SaveReaction(ctx, &model.Reaction{UserId: other.UserId, PostId: gate.ID, EmojiName: "white_check_mark"})
	require.NoError(t, err)
	e = rec.waitFor(t, "the other bot's ✅", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventReaction && e.User.ID == other.UserId })
	assert.Equal(t, chatmodel.User{ID: other.UserId, Name: "ci-bot", Kind: chatmodel.UserBot}, e.User)

	// A deactivated user resolves as such (policies name people; the
	// engine never counts them).
	mallory := createUser(ctx, t, srv.URL, "mallory")
	_, err = w.Admin.DeleteUser(ctx, mallory.User.Id)
	require.NoError(t, err)
	u, err := a.ResolveUser(ctx, "@mallory")
	require.NoError(t, err)
	assert.Equal(t, chatmodel.UserDeactivated, u.Kind)
	u, err = a.ResolveUser(ctx, "carol")
	require.NoError(t, err)
	assert.Equal(t, chatmodel.User{ID: carol.User.Id, Name: "carol"}, u)

	// Buttons: the clicker comes from Mattermost's user_id; the requester's
	// refusal comes back to her as an ephemeral message.
	clickAs(ctx, t, carol, gate.ID, "Approve")
	e = rec.waitFor(t, "carol's click", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventButton })
	assert.Equal(t, chatmodel.IntentApprove, e.Intent)
	assert.Equal(t, "r1/s5", e.Value)
	assert.Equal(t, carol.User.Id, e.User.ID)
	assert.Equal(t, gate, e.Message)

	aliceEph := listenEphemeral(t, srv.URL, alice)
	clickAs(ctx, t, alice, gate.ID, "Approve")
	rec.waitFor(t, "alice's click", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventButton })
	aliceEph.waitFor(t, "you started this run", 10*time.Second)

	// Alice's click forged to say user_name "carol" (the signed context is
	// genuine) is refused, and never reaches the engine (#19.1).
	forgeMu.Lock()
	forgeAs = "carol"
	forgeMu.Unlock()
	clickAs(ctx, t, alice, gate.ID, "Approve")
	aliceEph.waitFor(t, "does not match its user id", 10*time.Second)
	forgeMu.Lock()
	forgeAs = ""
	forgeMu.Unlock()
	select {
	case e := <-rec.events:
		assert.NotEqual(t, chatmodel.EventButton, e.Kind, "a forged click must not be delivered: %+v", e)
	case <-time.After(500 * time.Millisecond):
	}

	// Updating the gate in place drops the buttons.
	require.NoError(t, a.Update(ctx, gate, chatmodel.Message{Text: "✅ Approved by @carol"}))
	p, _, err = carol.GetPost(ctx, gate.ID, "")
	require.NoError(t, err)
	assert.Equal(t, "✅ Approved by @carol", p.Message)
	assert.Empty(t, p.Attachments())

	// A command typed in a thread (from a reply) is tied to the root.
	_, err = alice.runCommand(ctx, w.Channel.Id, gate.ID, "/runbook status")
	require.NoError(t, err)
	e = rec.waitFor(t, "the command in the thread", 10*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventCommand })
	assert.Equal(t, "status", e.Text)
	assert.Equal(t, root.ID, e.Conversation.Thread)

	// Outside a command, a bot cannot post ephemeral messages: it mentions
	// the user in the thread instead.
	require.NoError(t, a.Ephemeral(ctx, chatmodel.Conversation{Channel: root.Channel, Thread: root.ID}, chatmodel.User{ID: alice.User.Id}, chatmodel.Message{Text: "Not counted: you started this run."}))
	posts, err := threadPosts(ctx, carol.Client4, root.ID)
	require.NoError(t, err)
	assert.Equal(t, "@alice Not counted: you started this run.", posts[len(posts)-1].Message)

	// The thread reads back in order, details included.
	msgs, err := a.ReadThread(ctx, chatmodel.Conversation{Channel: root.Channel, Thread: root.ID})
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	assert.Contains(t, msgs[0].Text, "demo")
	assert.True(t, msgs[0].Bot)
	assert.Equal(t, "groundcrew", msgs[0].Author.Name)

	// Groups: team admins (the team's creator), system admins, and a
	// private channel standing in for a user group.
	got, err := a.GroupMembers(ctx, "group:team_admin")
	require.NoError(t, err)
	assert.Equal(t, []string{w.Admin.User.Id}, got)
	got, err = a.GroupMembers(ctx, "system_admin")
	require.NoError(t, err)
	assert.Equal(t, []string{w.Admin.User.Id}, got)
	oncall, _, err := w.Admin.CreateChannel(ctx, &model.Channel{TeamId: w.Team.Id, Name: "ci-oncall", DisplayName: "CI on-call", Type: model.ChannelTypePrivate})
	require.NoError(t, err)
	for _, id := range []string{carol.User.Id, dave.User.Id, w.BotUser.Id} {
		_, _, err = w.Admin.AddChannelMember(ctx, oncall.Id, id)
		require.NoError(t, err)
	}
	got, err = a.GroupMembers(ctx, "group:ci-oncall")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{w.Admin.User.Id, carol.User.Id, dave.User.Id}, got)
	_, err = a.GroupMembers(ctx, "group:ci-ops") // public: never a group
	assert.True(t, errors.Is(err, mattermost.ErrUnknownGroup), "got %v", err)

	// Reconnect: reactions changed while the WebSocket was down are
	// re-read and delivered with the ids live events would have had.
	proxy.cut()
	time.Sleep(500 * time.Millisecond)
	_, err = carol.DeleteReaction(ctx, &model.Reaction{UserId: carol.User.Id, PostId: gate.ID, EmojiName: "white_check_mark"})
	require.NoError(t, err)
	_, _, err = dave.SaveReaction(ctx, &model.Reaction{UserId: dave.User.Id, PostId: gate.ID, EmojiName: "x"})
	require.NoError(t, err)
	proxy.restore()
	removed := rec.waitFor(t, "carol's ✅ removal, re-read", 30*time.Second, func(e chatmodel.Event) bool { return e.Kind == chatmodel.EventReaction && e.Removed })
	assert.Equal(t, strings.Replace(carolAddID, ":added:", ":removed:", 1), removed.ID)
	added := rec.waitFor(t, "dave's ❌, re-read", 10*time.Second, func(e chatmodel.Event) bool {
		return e.Kind == chatmodel.EventReaction && !e.Removed && e.Message.ID == gate.ID
	})
	assert.Equal(t, chatmodel.IntentReject, added.Intent)
	assert.Equal(t, dave.User.Id, added.User.ID)
	assert.Equal(t, gate.ID, added.Message.ID)
}

// forging rewrites the user_name of button callbacks to as() when set.
func forging(next http.Handler, as func() string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := as()
		if name == "" || r.URL.Path != mattermost.ActionPath {
			next.ServeHTTP(w, r)
			return
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req["user_name"] = name
		b, _ := json.Marshal(req)
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}

// clickAs presses the button labelled label on a post as u, as the web app
// does (with the action's cookie).
func clickAs(ctx context.Context, t *testing.T, u *mmUser, postID, label string) {
	t.Helper()
	p, _, err := u.GetPost(ctx, postID, "")
	require.NoError(t, err)
	for _, att := range p.Attachments() {
		for _, act := range att.Actions {
			if act.Name == label {
				_, err := u.DoPostActionWithCookie(ctx, postID, act.Id, "", act.Cookie)
				require.NoError(t, err, "%s pressing %q", u.User.Username, label)
				return
			}
		}
	}
	t.Fatalf("no %q button on post %s", label, postID)
}

// interactiveAdapter is an adapter of the bootstrapped bot on team ops
// with buttons and dialogs (HMAC key, callback URL served for the test)
// and its slash command registered.
func interactiveAdapter(t *testing.T, srv *mmServer, w *world) *mattermost.Adapter {
	t.Helper()
	mux := http.NewServeMux()
	a, err := mattermost.New(mattermost.Config{URL: srv.URL, BotToken: secretOf(w.BotToken), Team: "ops",
		ActionHMACKey: secretOf("e2e-hmac-key-0123456789abcdef"), CallbackURL: serveAdapter(t, mux), RegisterCommand: true},
		mattermost.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	mux.Handle("/mattermost/", a.HTTPHandler())
	return a
}
