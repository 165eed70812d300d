package mattermost

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/require"
)

// Ids used by the fake server.
const (
	botID     = "botuserid00000000000000000"
	teamID    = "teamid0000000000000000000a"
	channelID = "channelid00000000000000000"
	aliceID   = "aliceid0000000000000000000"
	carolID   = "carolid0000000000000000000"
	adminID   = "adminid0000000000000000000"
	testKey   = "0123456789abcdef-test-key"
	cmdToken  = "commandtoken0000000000000a"
)

// fakeMM is an httptest fake of the Client4 endpoints and the WebSocket the
// adapter uses. All fields are guarded by mu.
type fakeMM struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	seq       int
	posts     map[string]*model.Post
	reactions map[string][]*model.Reaction
	users     map[string]*model.User
	channels  map[string]*model.Channel
	members   map[string][]string // channel id → user ids
	dialogs   []model.OpenDialogRequest
	team      []*model.TeamMember
	commands  []*model.Command
	calls     []string
	// throttle makes the next n calls of "METHOD /path" answer 429 with
	// the Retry-After value.
	throttle      map[string]throttle
	failStatus    map[string]int // "METHOD /path" → status to answer, always
	ephemeralOK   bool
	ephemerals    []*model.PostEphemeral
	wsConn        *websocket.Conn
	wsConnects    int
	wsAuthRefused bool
	// userGroups are the licensed user groups (nil: no licence, 501).
	userGroups map[string][]string
	// onPatch, when set, runs (without the lock) before a patch is applied.
	onPatch func(postID string)
	// frozen holds every REST request (the WebSocket excepted) until
	// thaw, as a server stopped with SIGSTOP: the requests are taken
	// and answered — done — once it runs again, whether the client still
	// waits or not.
	frozen chan struct{}
	// pending maps a pending_post_id to the post created with it, as the
	// server's 30 s cache does: a second create returns that post.
	pending map[string]string
}

// freeze makes the server take requests and not answer them until thaw.
func (f *fakeMM) freeze() {
	f.mu.Lock()
	f.frozen = make(chan struct{})
	f.mu.Unlock()
}

// thaw lets the held requests and the next ones through.
func (f *fakeMM) thaw() {
	f.mu.Lock()
	if f.frozen != nil {
		close(f.frozen)
		f.frozen = nil
	}
	f.mu.Unlock()
}

type throttle struct {
	n          int
	retryAfter string
}

func newFakeMM(t *testing.T) *fakeMM {
	f := &fakeMM{
		t:         t,
		posts:     map[string]*model.Post{},
		reactions: map[string][]*model.Reaction{},
		users: map[string]*model.User{
			botID:   {Id: botID, Username: "groundcrew", IsBot: true},
			aliceID: {Id: aliceID, Username: "alice"},
			carolID: {Id: carolID, Username: "carol"},
			adminID: {Id: adminID, Username: "admin", Roles: "system_admin system_user"},
		},
		channels: map[string]*model.Channel{
			"ci-ops":    {Id: channelID, TeamId: teamID, Name: "ci-ops", Type: model.ChannelTypeOpen},
			"ci-oncall": {Id: "oncallchannel0000000000000", TeamId: teamID, Name: "ci-oncall", Type: model.ChannelTypePrivate},
		},
		members: map[string][]string{"oncallchannel0000000000000": {carolID, botID, aliceID}},
		team: []*model.TeamMember{
			{TeamId: teamID, UserId: adminID, SchemeAdmin: true, SchemeUser: true},
			{TeamId: teamID, UserId: aliceID, SchemeUser: true},
			{TeamId: teamID, UserId: carolID, Roles: "team_user team_admin"},
			{TeamId: teamID, UserId: botID, SchemeAdmin: true},
		},
		throttle:   map[string]throttle{},
		failStatus: map[string]int{},
	}
	mux := http.NewServeMux()
	h := func(pattern string, fn func(w http.ResponseWriter, r *http.Request)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			key := r.Method + " " + r.URL.Path
			f.mu.Lock()
			if frozen := f.frozen; frozen != nil && r.URL.Path != "/api/v4/websocket" {
				f.mu.Unlock()
				<-frozen
				f.mu.Lock()
			}
			f.calls = append(f.calls, key)
			th, throttled := f.throttle[key]
			if throttled {
				if th.n--; th.n <= 0 {
					delete(f.throttle, key)
				} else {
					f.throttle[key] = th
				}
			}
			status := f.failStatus[key]
			f.mu.Unlock()
			if r.URL.Path != "/api/v4/websocket" && r.Header.Get("Authorization") != "BEARER bot-token" {
				writeAppError(w, http.StatusUnauthorized, "api.context.session_expired.app_error")
				return
			}
			if throttled {
				w.Header().Set("Retry-After", th.retryAfter)
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte("limit exceeded\n"))
				return
			}
			if status != 0 {
				writeAppError(w, status, "fake.failure")
				return
			}
			fn(w, r)
		})
	}
	h("GET /api/v4/config/client", func(w http.ResponseWriter, r *http.Request) {
		f.writeJSON(w, map[string]string{"SiteURL": "https://chat.example.com/"})
	})
	h("POST /api/v4/actions/dialogs/open", func(w http.ResponseWriter, r *http.Request) {
		var req model.OpenDialogRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.TriggerId == "" {
			writeAppError(w, http.StatusBadRequest, "interactive_message.decode_trigger_id.app_error")
			return
		}
		f.mu.Lock()
		f.dialogs = append(f.dialogs, req)
		f.mu.Unlock()
		f.writeJSON(w, map[string]string{"status": "OK"})
	})
	h("GET /api/v4/users/me", func(w http.ResponseWriter, r *http.Request) { f.writeJSON(w, f.user(botID)) })
	h("GET /api/v4/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		if u := f.user(r.PathValue("id")); u != nil {
			f.writeJSON(w, u)
			return
		}
		writeAppError(w, http.StatusNotFound, "app.user.missing_account.const")
	})
	h("GET /api/v4/users/username/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		var found *model.User
		for _, u := range f.users {
			if u.Username == r.PathValue("name") {
				found = u
			}
		}
		f.mu.Unlock()
		if found != nil {
			f.writeJSON(w, found)
			return
		}
		writeAppError(w, http.StatusNotFound, "app.user.missing_account.const")
	})
	h("POST /api/v4/users/ids", func(w http.ResponseWriter, r *http.Request) {
		var ids []string
		f.decode(r, &ids)
		var out []*model.User
		for _, id := range ids {
			if u := f.user(id); u != nil {
				out = append(out, u)
			}
		}
		f.writeJSON(w, out)
	})
	h("GET /api/v4/users", func(w http.ResponseWriter, r *http.Request) {
		var out []*model.User
		if r.URL.Query().Get("page") == "0" && r.URL.Query().Get("role") == "system_admin" {
			out = append(out, f.user(adminID))
		}
		f.writeJSON(w, out)
	})
	h("GET /api/v4/teams/name/{name}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("name") != "ops" {
			writeAppError(w, http.StatusNotFound, "app.team.get_by_name.missing.app_error")
			return
		}
		f.writeJSON(w, &model.Team{Id: teamID, Name: "ops"})
	})
	h("GET /api/v4/teams/"+teamID+"/members", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if r.URL.Query().Get("page") != "0" {
			f.writeJSONLocked(w, []*model.TeamMember{})
			return
		}
		f.writeJSONLocked(w, f.team)
	})
	h("GET /api/v4/teams/"+teamID+"/channels/name/{name}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		c := f.channels[r.PathValue("name")]
		f.mu.Unlock()
		if c == nil {
			writeAppError(w, http.StatusNotFound, "app.channel.get_by_name.missing.app_error")
			return
		}
		f.writeJSON(w, c)
	})
	h("GET /api/v4/channels/{id}/members", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out model.ChannelMembers
		if r.URL.Query().Get("page") == "0" {
			for _, u := range f.members[r.PathValue("id")] {
				out = append(out, model.ChannelMember{ChannelId: r.PathValue("id"), UserId: u})
			}
		}
		f.writeJSONLocked(w, out)
	})
	h("GET /api/v4/channels/{id}/members/{user}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		id, user := r.PathValue("id"), r.PathValue("user")
		if id == channelID && user == botID {
			f.writeJSONLocked(w, model.ChannelMember{ChannelId: id, UserId: user})
			return
		}
		for _, u := range f.members[id] {
			if u == user {
				f.writeJSONLocked(w, model.ChannelMember{ChannelId: id, UserId: user})
				return
			}
		}
		writeAppError(w, http.StatusNotFound, "app.channel.get_member.missing.app_error")
	})
	h("POST /api/v4/groups/names", func(w http.ResponseWriter, r *http.Request) {
		var names []string
		f.decode(r, &names)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.userGroups == nil {
			writeAppError(w, http.StatusNotImplemented, "api.context.license.app_error") // unlicensed server
			return
		}
		var out []*model.Group
		for _, n := range names {
			if _, ok := f.userGroups[n]; ok {
				out = append(out, &model.Group{Id: "group-" + n, Name: model.NewPointer(n)})
			}
		}
		f.writeJSONLocked(w, out)
	})
	h("GET /api/v4/groups/{id}/members", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		ids := f.userGroups[strings.TrimPrefix(r.PathValue("id"), "group-")]
		var list model.GroupMemberList
		if r.URL.Query().Get("page") == "0" {
			for _, id := range ids {
				list.Members = append(list.Members, f.users[id])
			}
		}
		list.Count = len(ids)
		f.writeJSONLocked(w, list)
	})
	h("GET /api/v4/commands", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.writeJSONLocked(w, f.commands)
	})
	h("POST /api/v4/commands", func(w http.ResponseWriter, r *http.Request) {
		var c model.Command
		f.decode(r, &c)
		f.mu.Lock()
		defer f.mu.Unlock()
		c.Id, c.Token = f.newIDLocked(), "registeredtoken00000000000"
		f.commands = append(f.commands, &c)
		f.writeJSONLocked(w, &c)
	})
	h("PUT /api/v4/commands/{id}", func(w http.ResponseWriter, r *http.Request) {
		var c model.Command
		f.decode(r, &c)
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, old := range f.commands {
			if old.Id == r.PathValue("id") {
				f.commands[i] = &c
			}
		}
		f.writeJSONLocked(w, &c)
	})
	h("POST /api/v4/posts", f.createPost)
	h("POST /api/v4/posts/ephemeral", func(w http.ResponseWriter, r *http.Request) {
		var e model.PostEphemeral
		f.decode(r, &e)
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.ephemeralOK {
			writeAppError(w, http.StatusForbidden, "api.context.permissions.app_error")
			return
		}
		f.ephemerals = append(f.ephemerals, &e)
		f.writeJSONLocked(w, e.Post)
	})
	h("GET /api/v4/posts/{id}", func(w http.ResponseWriter, r *http.Request) {
		if p := f.post(r.PathValue("id")); p != nil {
			f.writeJSON(w, p)
			return
		}
		writeAppError(w, http.StatusNotFound, "app.post.get.app_error")
	})
	h("PUT /api/v4/posts/{id}/patch", func(w http.ResponseWriter, r *http.Request) {
		var patch model.PostPatch
		f.decode(r, &patch)
		f.mu.Lock()
		hook := f.onPatch
		f.mu.Unlock()
		if hook != nil {
			hook(r.PathValue("id"))
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		p := f.posts[r.PathValue("id")]
		if p == nil {
			writeAppError(w, http.StatusNotFound, "app.post.get.app_error")
			return
		}
		p.Patch(&patch)
		p.EditAt = time.Now().UnixMilli()
		f.writeJSONLocked(w, p)
	})
	h("GET /api/v4/posts/{id}/thread", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		list := model.NewPostList()
		for _, p := range f.posts {
			if p.Id == r.PathValue("id") || p.RootId == r.PathValue("id") {
				list.AddPost(p.Clone())
				list.AddOrder(p.Id)
			}
		}
		f.writeJSONLocked(w, list)
	})
	h("POST /api/v4/posts/ids/reactions", func(w http.ResponseWriter, r *http.Request) {
		var ids []string
		f.decode(r, &ids)
		f.mu.Lock()
		defer f.mu.Unlock()
		out := map[string][]*model.Reaction{}
		for _, id := range ids {
			if rs := f.reactions[id]; len(rs) > 0 {
				out[id] = rs
			}
		}
		f.writeJSONLocked(w, out)
	})
	h("GET /api/v4/websocket", f.serveWS)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func writeAppError(w http.ResponseWriter, status int, id string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(&model.AppError{Id: id, Message: id, StatusCode: status})
}

func (f *fakeMM) writeJSON(w http.ResponseWriter, v any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeJSONLocked(w, v)
}

func (f *fakeMM) writeJSONLocked(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	require.NoError(f.t, json.NewEncoder(w).Encode(v))
}

func (f *fakeMM) decode(r *http.Request, v any) {
	require.NoError(f.t, json.NewDecoder(r.Body).Decode(v))
}

func (f *fakeMM) newIDLocked() string {
	f.seq++
	return fmt.Sprintf("id%024d", f.seq)
}

func (f *fakeMM) user(id string) *model.User {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.users[id]
}

func (f *fakeMM) post(id string) *model.Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.posts[id]; p != nil {
		return p.Clone()
	}
	return nil
}

func (f *fakeMM) createPost(w http.ResponseWriter, r *http.Request) {
	var p model.Post
	f.decode(r, &p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.RootId != "" {
		root := f.posts[p.RootId]
		if root == nil || root.RootId != "" {
			writeAppError(w, http.StatusBadRequest, errIDRootID)
			return
		}
	}
	if id, seen := f.pending[p.PendingPostId]; seen && p.PendingPostId != "" {
		f.writeJSONLocked(w, f.posts[id])
		return
	}
	p.Id = f.newIDLocked()
	p.UserId = botID
	p.CreateAt = time.Now().UnixMilli() + int64(f.seq) // strictly increasing
	f.posts[p.Id] = &p
	if p.PendingPostId != "" {
		if f.pending == nil {
			f.pending = map[string]string{}
		}
		f.pending[p.PendingPostId] = p.Id
	}
	f.writeJSONLocked(w, &p)
}

// addPost stores a post directly (as if a user wrote it).
func (f *fakeMM) addPost(p *model.Post) *model.Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.Id = f.newIDLocked()
	p.CreateAt = time.Now().UnixMilli() + int64(f.seq)
	f.posts[p.Id] = p
	return p.Clone()
}

// react adds or removes a reaction in the store and returns it as the
// server would broadcast it.
func (f *fakeMM) react(post, user, emoji string, remove bool, at int64) *model.Reaction {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kept []*model.Reaction
	for _, r := range f.reactions[post] {
		if r.UserId != user || r.EmojiName != emoji {
			kept = append(kept, r)
		}
	}
	r := &model.Reaction{UserId: user, PostId: post, EmojiName: emoji, CreateAt: at, UpdateAt: at, ChannelId: channelID}
	if remove {
		r.CreateAt, r.DeleteAt, r.ChannelId = 0, at+1, ""
	} else {
		kept = append(kept, r)
	}
	f.reactions[post] = kept
	return r
}

var upgrader = websocket.Upgrader{}

// serveWS accepts one WebSocket: it checks the authentication challenge,
// answers OK and sends hello, then keeps the connection for sendEvent.
func (f *fakeMM) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	var challenge struct {
		Seq    int64          `json:"seq"`
		Action string         `json:"action"`
		Data   map[string]any `json:"data"`
	}
	if err := c.ReadJSON(&challenge); err != nil {
		c.Close()
		return
	}
	f.mu.Lock()
	refuse := f.wsAuthRefused || challenge.Action != "authentication_challenge" || challenge.Data["token"] != "bot-token"
	f.mu.Unlock()
	if refuse {
		_ = c.WriteJSON(map[string]any{"status": "FAIL", "seq_reply": challenge.Seq, "error": map[string]any{"id": "api.web_socket_router.not_authenticated.app_error"}})
		time.Sleep(50 * time.Millisecond)
		c.Close()
		return
	}
	_ = c.WriteJSON(map[string]any{"status": "OK", "seq_reply": challenge.Seq})
	f.mu.Lock()
	f.wsConn = c
	f.wsConnects++
	f.mu.Unlock()
	f.sendEvent(model.WebsocketEventHello, map[string]any{"server_version": "11.1.0"}, "")
	go func() { // read until closed, so control frames are handled
		for {
			if _, _, err := c.NextReader(); err != nil {
				return
			}
		}
	}()
}

// sendEvent sends an event on the current WebSocket.
func (f *fakeMM) sendEvent(event model.WebsocketEventType, data map[string]any, channel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NotNil(f.t, f.wsConn, "no websocket connected")
	msg := map[string]any{"event": event, "data": data, "broadcast": map[string]any{"channel_id": channel}, "seq": 0}
	require.NoError(f.t, f.wsConn.WriteJSON(msg))
}

// sendReaction sends a reaction_added/removed event for r.
func (f *fakeMM) sendReaction(r *model.Reaction, removed bool) {
	b, err := json.Marshal(r)
	require.NoError(f.t, err)
	ev := model.WebsocketEventReactionAdded
	if removed {
		ev = model.WebsocketEventReactionRemoved
	}
	f.sendEvent(ev, map[string]any{"reaction": string(b)}, channelID)
}

// dropWS closes the current WebSocket, as a network failure would.
func (f *fakeMM) dropWS() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.wsConn != nil {
		f.wsConn.Close()
		f.wsConn = nil
	}
}

func (f *fakeMM) wsConnectCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wsConnects
}

// callCount counts calls of "METHOD /path".
func (f *fakeMM) callCount(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == key {
			n++
		}
	}
	return n
}

// threadOf returns a thread's posts, oldest first.
func (f *fakeMM) threadOf(root string) []*model.Post {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*model.Post
	for _, p := range f.posts {
		if p.Id == root || p.RootId == root {
			out = append(out, p.Clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreateAt < out[j].CreateAt })
	return out
}
