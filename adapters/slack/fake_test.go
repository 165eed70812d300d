package slack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slacktest"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Identities of the fake workspace.
const (
	fakeBotUserID = "UBOT"
	fakeBotID     = "BBOT"
	testSecret    = "8f742231b10e8888abcd99yyyzzz85a5"
	testBotToken  = "xoxb-test-bot-token"
	testAppToken  = "xapp-test-app-token"
)

// fakeMsg is a message the fake Slack holds.
type fakeMsg struct {
	Channel   string
	TS        string
	ThreadTS  string
	Text      string
	Blocks    slackapi.Blocks
	Broadcast bool
	Ephemeral bool
	User      string // ephemeral recipient
	Updates   int
}

// fakeSlack is slacktest's server with the Web API methods the adapter uses
// added (slacktest lacks chat.update, usergroups, conversations.replies …,
// and gives whole-second ts values that collide): messages get unique ts, and
// 429s can be injected per method.
type fakeSlack struct {
	srv *slacktest.Server

	mu         sync.Mutex
	seq        int
	msgs       []*fakeMsg
	calls      []fakeCall
	channels   []slackapi.Channel
	users      map[string]string   // id -> name
	userAttrs  map[string]obj      // id -> extra users.info fields (is_bot, deleted, profile)
	groups     map[string]string   // handle -> id
	members    map[string][]string // group id -> user ids
	throttle   map[string][]string // method -> Retry-After values to answer with 429 first
	notInChans map[string]bool     // channels the bot must join before posting
	private    map[string]bool     // private channels (conversations.info)
	hidden     map[string]bool     // channels the bot cannot see (private, not invited)
	ws         func(*websocket.Conn)
	openErr    string // apps.connections.open answers this error when set
	authErr    string // auth.test answers this error when set
	// infoErr, when set, is conversations.info's answer (an ok:false body),
	// infoStatus an HTTP status it answers with instead.
	infoErr    obj
	infoStatus int
	// hung methods take the request and answer only once the channel is
	// closed (a Slack that hangs).
	hung map[string]chan struct{}
	// responses are the JSON bodies POSTed to the response_url
	// (responseURL()).
	responses []slackapi.WebhookMessage
	// uploads are the files shared with files.completeUploadExternal;
	// uploadErr, when set, is files.getUploadURLExternal's error.
	uploads   []fakeUpload
	pending   map[string]*fakeUpload // file id → uploaded, not completed
	uploadErr string
	views     []fakeView // views.open
	// updates are the views.update calls accepted; viewHash the current
	// hash of each open view (a views.update with another is refused with
	// hash_conflict, as Slack does).
	updates  []fakeView
	viewHash map[string]string
}

// fakeView is a view opened (Trigger) or updated (ID, Hash: the hash the
// update gave).
type fakeView struct{ Trigger, View, ID, Hash string }

// touchView changes a view's hash as an update from elsewhere would.
func (f *fakeSlack) touchView(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.viewHash[id] += "-elsewhere"
}

func (f *fakeSlack) viewUpdates() []fakeView {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeView(nil), f.updates...)
}

// fakeUpload is a file uploaded through the external upload flow.
type fakeUpload struct {
	ID, Name, AltText, Title, Channel, Thread string
	Data                                      []byte
}

type fakeCall struct {
	Method string
	At     time.Time
	Status int
	Form   map[string]string
}

func newFakeSlack(t testing.TB) *fakeSlack {
	t.Helper()
	f := &fakeSlack{
		channels:   []slackapi.Channel{chanOf("C0OPS", "ci-ops"), chanOf("C0RUN", "runbooks")},
		users:      map[string]string{"UALICE": "alice", "UBOB": "bob", "UCAROL": "carol", fakeBotUserID: "groundcrew"},
		groups:     map[string]string{"ci-oncall": "S0CIONCALL"},
		members:    map[string][]string{"S0CIONCALL": {"UBOB", "UCAROL"}},
		userAttrs:  map[string]obj{},
		throttle:   map[string][]string{},
		notInChans: map[string]bool{},
		private:    map[string]bool{},
		hidden:     map[string]bool{},
		viewHash:   map[string]string{},
	}
	methods := map[string]func(http.ResponseWriter, *http.Request) any{
		"auth.test":                    f.authTest,
		"chat.postMessage":             f.postMessage,
		"chat.postEphemeral":           f.postEphemeral,
		"chat.update":                  f.update,
		"conversations.list":           f.conversationsList,
		"conversations.replies":        f.replies,
		"conversations.join":           f.join,
		"conversations.info":           f.conversationsInfo,
		"users.info":                   f.usersInfo,
		"users.list":                   f.usersList,
		"usergroups.list":              f.usergroupsList,
		"usergroups.users.list":        f.usergroupMembers,
		"apps.connections.open":        f.connectionsOpen,
		"files.getUploadURLExternal":   f.uploadURL,
		"files.completeUploadExternal": f.completeUpload,
		"views.open": func(_ http.ResponseWriter, r *http.Request) any {
			var req struct {
				TriggerID string          `json:"trigger_id"`
				View      json.RawMessage `json:"view"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.TriggerID == "" {
				return slackErr("invalid_trigger_id")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			id := fmt.Sprintf("V%d", len(f.views)+1)
			f.viewHash[id] = id + "-h0"
			f.views = append(f.views, fakeView{Trigger: req.TriggerID, View: string(req.View), ID: id, Hash: f.viewHash[id]})
			return obj{"ok": true, "view": obj{"id": id, "hash": f.viewHash[id]}}
		},
		"views.update": func(_ http.ResponseWriter, r *http.Request) any {
			var req struct {
				View   json.RawMessage `json:"view"`
				ViewID string          `json:"view_id"`
				Hash   string          `json:"hash"`
			}
			if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
				return slackErr("invalid_arguments")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			cur, ok := f.viewHash[req.ViewID]
			switch {
			case !ok:
				return slackErr("not_found")
			case req.Hash != "" && req.Hash != cur:
				return slackErr("hash_conflict")
			}
			next := fmt.Sprintf("%s-h%d", req.ViewID, len(f.updates)+1)
			f.viewHash[req.ViewID] = next
			f.updates = append(f.updates, fakeView{View: string(req.View), ID: req.ViewID, Hash: req.Hash})
			return obj{"ok": true, "view": obj{"id": req.ViewID, "hash": next}}
		},
	}
	f.srv = slacktest.NewTestServer(func(c slacktest.Customize) {
		for name, h := range methods {
			c.Handle("/"+name, f.wrap(name, h))
		}
		c.Handle("/upload/", func(w http.ResponseWriter, r *http.Request) {
			file, _, err := r.FormFile("file")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			data, _ := io.ReadAll(file)
			f.mu.Lock()
			if u := f.pending[strings.TrimPrefix(r.URL.Path, "/upload/")]; u != nil {
				u.Data = data
			}
			f.mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})
		c.Handle("/response", func(w http.ResponseWriter, r *http.Request) {
			var m slackapi.WebhookMessage
			if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			f.mu.Lock()
			f.responses = append(f.responses, m)
			f.mu.Unlock()
			w.WriteHeader(http.StatusOK)
		})
		c.Handle("/ws", func(w http.ResponseWriter, r *http.Request) {
			f.mu.Lock()
			ws := f.ws
			f.mu.Unlock()
			if ws == nil {
				http.Error(w, "no websocket handler", http.StatusNotFound)
				return
			}
			slacktest.Websocket(ws)(w, r)
		})
	})
	f.srv.Start()
	t.Cleanup(f.srv.Stop)
	return f
}

func chanOf(id, name string) slackapi.Channel {
	var c slackapi.Channel
	c.ID, c.Name = id, name
	return c
}

func (f *fakeSlack) url() string { return f.srv.GetAPIURL() }

// hang makes method take requests and not answer them until the returned
// func is called.
func (f *fakeSlack) hang(method string) (release func()) {
	ch := make(chan struct{})
	f.mu.Lock()
	if f.hung == nil {
		f.hung = map[string]chan struct{}{}
	}
	f.hung[method] = ch
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.hung, method)
			f.mu.Unlock()
			close(ch)
		})
	}
}

// responseURL is the fake's response_url endpoint.
func (f *fakeSlack) responseURL() string { return f.srv.GetAPIURL() + "response" }

func (f *fakeSlack) webhookResponses() []slackapi.WebhookMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]slackapi.WebhookMessage(nil), f.responses...)
}

// wrap records the call, answers an injected 429, else calls h and writes
// its result as JSON.
func (f *fakeSlack) wrap(method string, h func(http.ResponseWriter, *http.Request) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		form := map[string]string{}
		for k := range r.Form {
			form[k] = r.Form.Get(k)
		}
		f.mu.Lock()
		call := fakeCall{Method: method, At: time.Now(), Status: http.StatusOK, Form: form}
		if ra := f.throttle[method]; len(ra) > 0 {
			f.throttle[method] = ra[1:]
			call.Status = http.StatusTooManyRequests
			f.calls = append(f.calls, call)
			f.mu.Unlock()
			if ra[0] != "" {
				w.Header().Set("Retry-After", ra[0])
			}
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		if ch := f.hung[method]; ch != nil {
			f.mu.Unlock()
			<-ch
			f.mu.Lock()
		}
		if method == "conversations.info" && f.infoStatus != 0 {
			call.Status = f.infoStatus
			f.calls = append(f.calls, call)
			f.mu.Unlock()
			w.WriteHeader(call.Status)
			return
		}
		f.calls = append(f.calls, call)
		f.mu.Unlock()
		resp := h(w, r)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
}

type obj = map[string]any

func slackErr(code string) obj { return obj{"ok": false, "error": code} }

func (f *fakeSlack) authTest(http.ResponseWriter, *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.authErr != "" {
		return slackErr(f.authErr)
	}
	return obj{"ok": true, "user": "groundcrew", "user_id": fakeBotUserID, "bot_id": fakeBotID, "team": "Ops", "team_id": "T0OPS"}
}

func (f *fakeSlack) connectionsOpen(http.ResponseWriter, *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.openErr != "" {
		return slackErr(f.openErr)
	}
	return obj{"ok": true, "url": f.srv.GetWSURL()}
}

// nextTS returns a unique ts; f.mu must be held.
func (f *fakeSlack) nextTS() string {
	f.seq++
	return fmt.Sprintf("1795979000.%06d", f.seq)
}

func (f *fakeSlack) newMsg(r *http.Request) (*fakeMsg, error) {
	m := &fakeMsg{
		Channel:   r.Form.Get("channel"),
		ThreadTS:  r.Form.Get("thread_ts"),
		Text:      r.Form.Get("text"),
		Broadcast: r.Form.Get("reply_broadcast") == "true",
	}
	if b := r.Form.Get("blocks"); b != "" {
		if err := json.Unmarshal([]byte(b), &m.Blocks); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (f *fakeSlack) postMessage(_ http.ResponseWriter, r *http.Request) any {
	m, err := f.newMsg(r)
	if err != nil {
		return slackErr("invalid_blocks")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notInChans[m.Channel] {
		return slackErr("not_in_channel")
	}
	if !slices.ContainsFunc(f.channels, func(c slackapi.Channel) bool { return c.ID == m.Channel }) {
		return slackErr("channel_not_found")
	}
	m.TS = f.nextTS()
	f.msgs = append(f.msgs, m)
	return obj{"ok": true, "channel": m.Channel, "ts": m.TS}
}

func (f *fakeSlack) postEphemeral(_ http.ResponseWriter, r *http.Request) any {
	m, err := f.newMsg(r)
	if err != nil {
		return slackErr("invalid_blocks")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hidden[m.Channel] {
		return slackErr("channel_not_found")
	}
	if f.notInChans[m.Channel] {
		return slackErr("not_in_channel")
	}
	m.Ephemeral, m.User, m.TS = true, r.Form.Get("user"), f.nextTS()
	f.msgs = append(f.msgs, m)
	return obj{"ok": true, "message_ts": m.TS}
}

func (f *fakeSlack) update(_ http.ResponseWriter, r *http.Request) any {
	upd, err := f.newMsg(r)
	if err != nil {
		return slackErr("invalid_blocks")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.msgs {
		if m.Channel == upd.Channel && m.TS == r.Form.Get("ts") && !m.Ephemeral {
			m.Text, m.Blocks = upd.Text, upd.Blocks
			m.Updates++
			return obj{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text}
		}
	}
	return slackErr("message_not_found")
}

// conversationsList pages one channel at a time, to exercise the cursor.
func (f *fakeSlack) conversationsList(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	i, _ := strconv.Atoi(r.Form.Get("cursor"))
	if i >= len(f.channels) {
		return obj{"ok": true, "channels": []any{}}
	}
	next := ""
	if i+1 < len(f.channels) {
		next = strconv.Itoa(i + 1)
	}
	return obj{"ok": true, "channels": f.channels[i : i+1], "response_metadata": obj{"next_cursor": next}}
}

func (f *fakeSlack) join(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.hidden[r.Form.Get("channel")] {
		return slackErr("channel_not_found")
	}
	if f.private[r.Form.Get("channel")] {
		return slackErr("method_not_supported_for_channel_type")
	}
	delete(f.notInChans, r.Form.Get("channel"))
	return obj{"ok": true, "channel": obj{"id": r.Form.Get("channel")}}
}

func (f *fakeSlack) replies(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch, ts := r.Form.Get("channel"), r.Form.Get("ts")
	var out []obj
	for _, m := range f.msgs {
		if m.Channel != ch || m.Ephemeral || (m.TS != ts && m.ThreadTS != ts) {
			continue
		}
		msg := obj{"type": "message", "ts": m.TS, "text": m.Text, "user": fakeBotUserID, "bot_id": fakeBotID, "blocks": m.Blocks}
		if m.ThreadTS != "" {
			msg["thread_ts"] = m.ThreadTS
		}
		out = append(out, msg)
	}
	if len(out) == 0 {
		return slackErr("thread_not_found")
	}
	return obj{"ok": true, "messages": out, "has_more": false}
}

func (f *fakeSlack) usersInfo(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.Form.Get("user")
	if _, ok := f.users[id]; !ok {
		return slackErr("user_not_found")
	}
	return obj{"ok": true, "user": f.userObj(id)}
}

// userObj is a user record as users.info and users.list give it.
func (f *fakeSlack) userObj(id string) obj {
	u := obj{"id": id, "name": f.users[id]}
	for k, v := range f.userAttrs[id] {
		u[k] = v
	}
	return u
}

func (f *fakeSlack) usersList(http.ResponseWriter, *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var us []obj
	for id := range f.users {
		us = append(us, f.userObj(id))
	}
	return obj{"ok": true, "members": us, "response_metadata": obj{"next_cursor": ""}}
}

func (f *fakeSlack) conversationsInfo(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.Form.Get("channel")
	if f.infoErr != nil {
		return f.infoErr
	}
	if f.hidden[id] {
		return slackErr("channel_not_found")
	}
	for _, c := range f.channels {
		if c.ID == id {
			return obj{"ok": true, "channel": obj{"id": id, "name": c.Name, "is_private": f.private[id], "is_member": !f.notInChans[id]}}
		}
	}
	return slackErr("channel_not_found")
}

func (f *fakeSlack) usergroupsList(http.ResponseWriter, *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var gs []obj
	for h, id := range f.groups {
		gs = append(gs, obj{"id": id, "handle": h, "is_usergroup": true})
	}
	return obj{"ok": true, "usergroups": gs}
}

func (f *fakeSlack) usergroupMembers(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	ids, ok := f.members[r.Form.Get("usergroup")]
	if !ok {
		return slackErr("no_such_subteam")
	}
	return obj{"ok": true, "users": ids}
}

// messages returns a copy of the messages, in posting order.
func (f *fakeSlack) messages() []fakeMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]fakeMsg, 0, len(f.msgs))
	for _, m := range f.msgs {
		out = append(out, *m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TS < out[j].TS })
	return out
}

func (f *fakeSlack) message(ts string) (fakeMsg, bool) {
	for _, m := range f.messages() {
		if m.TS == ts {
			return m, true
		}
	}
	return fakeMsg{}, false
}

// callsTo returns the recorded calls of one method.
func (f *fakeSlack) callsTo(method string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSlack) setWebsocket(h func(*websocket.Conn)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ws = h
}

// blockTexts returns the texts of a message's section and context blocks and
// the action ids of its buttons.
func blockTexts(m fakeMsg) (texts, actions []string) {
	for _, b := range m.Blocks.BlockSet {
		switch b := b.(type) {
		case *slackapi.SectionBlock:
			texts = append(texts, b.Text.Text)
		case *slackapi.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if t, ok := e.(*slackapi.TextBlockObject); ok {
					texts = append(texts, t.Text)
				}
			}
		case *slackapi.ActionBlock:
			for _, e := range b.Elements.ElementSet {
				if btn, ok := e.(*slackapi.ButtonBlockElement); ok {
					actions = append(actions, btn.ActionID)
				}
			}
		}
	}
	return texts, actions
}

// recorder is a fake bot.Handler that records events.
type recorder struct {
	events chan chatmodel.Event
	err    error
}

func newRecorder() *recorder { return &recorder{events: make(chan chatmodel.Event, 100)} }

// Handle implements bot.Handler.
func (r *recorder) Handle(_ context.Context, e chatmodel.Event) error {
	r.events <- e
	return r.err
}

// next waits for the next event.
func (r *recorder) next(t *testing.T) chatmodel.Event {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event delivered to the handler within 5s")
		return chatmodel.Event{}
	}
}

// none asserts no event arrives within d.
func (r *recorder) none(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case e := <-r.events:
		t.Fatalf("unexpected event delivered: %+v", e)
	case <-time.After(d):
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() || os.Getenv("SLACK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return nil
}

// newTestAdapter returns an adapter talking to f, with a short post interval.
func newTestAdapter(t *testing.T, f *fakeSlack, cfg Config) *Adapter {
	t.Helper()
	if cfg.BotToken == "" {
		cfg.BotToken = testBotToken
	}
	if cfg.Mode == "" || cfg.Mode == ModeSocket {
		cfg.AppToken = testAppToken
	}
	if cfg.Mode == ModeHTTP && cfg.SigningSecret == "" {
		cfg.SigningSecret = testSecret
	}
	a, err := New(cfg, Options{Logger: testLogger(t), APIURL: f.url(), PostInterval: 5 * time.Millisecond})
	require.NoError(t, err)
	return a
}

// runAdapter runs a.Run in the background until the test ends.
func runAdapter(t *testing.T, a *Adapter, h chatmodel.Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("Run did not return within 5s of cancellation")
		}
	})
	require.Eventually(t, func() bool { return a.selfID() != "" }, 5*time.Second, 5*time.Millisecond, "auth.test not done")
}

// sign returns the Slack v0 signature of body at ts with secret.
func sign(secret, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%s:", ts)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func (f *fakeSlack) uploadURL(_ http.ResponseWriter, r *http.Request) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.uploadErr != "" {
		return slackErr(f.uploadErr)
	}
	if f.pending == nil {
		f.pending = map[string]*fakeUpload{}
	}
	id := fmt.Sprintf("F%d", len(f.pending)+1)
	f.pending[id] = &fakeUpload{ID: id, Name: r.Form.Get("filename"), AltText: r.Form.Get("alt_txt")}
	return obj{"ok": true, "upload_url": f.srv.GetAPIURL() + "upload/" + id, "file_id": id}
}

func (f *fakeSlack) completeUpload(_ http.ResponseWriter, r *http.Request) any {
	var files []struct{ ID, Title string }
	if err := json.Unmarshal([]byte(r.Form.Get("files")), &files); err != nil || len(files) != 1 {
		return slackErr("invalid_arguments")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.pending[files[0].ID]
	if u == nil || u.Data == nil {
		return slackErr("file_not_found")
	}
	u.Title, u.Channel, u.Thread = files[0].Title, r.Form.Get("channel_id"), r.Form.Get("thread_ts")
	f.uploads = append(f.uploads, *u)
	return obj{"ok": true, "files": []obj{{"id": u.ID, "title": u.Title}}}
}

func (f *fakeSlack) sharedFiles() []fakeUpload {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeUpload(nil), f.uploads...)
}
