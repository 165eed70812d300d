package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func pressAs(t *testing.T, a *Adapter, trigger, userID, name string) {
	t.Helper()
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(blockActionsPayload(trigger, "approve", "r-7f3a/5")), &p))
	p["user"] = map[string]any{"id": userID, "username": name, "name": name, "team_id": "T0OPS"}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	body := []byte(url.Values{"payload": {string(b)}}.Encode())
	res := serve(t, a.HTTPHandler(), PathInteractivity, formType, body, time.Now(), nil)
	require.Equal(t, 200, res.Code)
}

// TestIdentity: who pressed a button is what Slack says of the payload's
// user id (#19.1, #19.2).
func TestIdentity(t *testing.T) {
	f := newFakeSlack(t)
	f.mu.Lock()
	f.users["UMALLORY"] = "mallory"
	f.userAttrs["UMALLORY"] = obj{"profile": obj{"display_name": "bob"}}
	f.users["UGONE"] = "gone"
	f.userAttrs["UGONE"] = obj{"deleted": true}
	f.users["UCIBOT"] = "ci-bot"
	f.userAttrs["UCIBOT"] = obj{"is_bot": true}
	f.mu.Unlock()
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)

	// A payload naming bob with mallory's id acts for mallory, named by
	// her handle: the id is who pressed (#35.2).
	pressAs(t, a, "1", "UMALLORY", "bob")
	assert.Equal(t, chatmodel.User{ID: "UMALLORY", Name: "mallory"}, rec.next(t).User)

	// Without a name, the name shown is the handle of the id — never the
	// display name mallory set to "bob".
	pressAs(t, a, "2", "UMALLORY", "")
	assert.Equal(t, chatmodel.User{ID: "UMALLORY", Name: "mallory"}, rec.next(t).User)

	pressAs(t, a, "3", "UGONE", "gone")
	assert.Equal(t, chatmodel.User{ID: "UGONE", Name: "gone", Kind: chatmodel.UserDeactivated}, rec.next(t).User)
	pressAs(t, a, "4", "UCIBOT", "ci-bot")
	assert.Equal(t, chatmodel.User{ID: "UCIBOT", Name: "ci-bot", Kind: chatmodel.UserBot}, rec.next(t).User)
	pressAs(t, a, "5", "UNOBODY1", "")
	assert.Equal(t, chatmodel.User{ID: "UNOBODY1", Kind: chatmodel.UserUnknown}, rec.next(t).User)
	pressAs(t, a, "6", "", "bob")
	assert.Equal(t, chatmodel.UserUnknown, rec.next(t).User.Kind, "an empty user never counts")
}

func TestResolveUser(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	ctx := context.Background()
	u, err := a.ResolveUser(ctx, "@bob")
	require.NoError(t, err)
	assert.Equal(t, chatmodel.User{ID: "UBOB", Name: "bob"}, u)
	u, err = a.ResolveUser(ctx, "UCAROL")
	require.NoError(t, err)
	assert.Equal(t, "carol", u.Name)
	_, err = a.ResolveUser(ctx, "nobody")
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
	_, err = a.ResolveUser(ctx, "UNOBODY1")
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
}

// TestCanPost: a run is refused up front where the bot cannot post: a
// private channel it is not in, or one it cannot even see (#19.5).
func TestCanPost(t *testing.T) {
	f := newFakeSlack(t)
	f.mu.Lock()
	f.channels = append(f.channels, chanOf("C0PRIV", "secret"), chanOf("C0HIDE", "hidden"))
	f.private["C0PRIV"], f.notInChans["C0PRIV"] = true, true
	f.hidden["C0HIDE"] = true
	f.notInChans["C0RUN"] = true // public: the bot joins it when posting
	f.mu.Unlock()
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	ctx := context.Background()
	assert.NoError(t, a.CanPost(ctx, chatmodel.Conversation{Channel: "C0OPS"}))
	assert.NoError(t, a.CanPost(ctx, chatmodel.Conversation{Channel: "C0RUN"}))
	for _, ch := range []string{"C0PRIV", "C0HIDE"} {
		err := a.CanPost(ctx, chatmodel.Conversation{Channel: ch})
		var ue *chatmodel.UserError
		require.ErrorAs(t, err, &ue, ch)
		assert.Contains(t, ue.Msg, "/invite @", ch)
	}
}

// TestCanPost_PermanentErrorRefusesWithTheFix: conversations.info failing
// for good (an app without groups:read) refuses the run and says what to
// fix; only a transient failure (5xx) lets it start (#22.3).
func TestCanPost_PermanentErrorRefusesWithTheFix(t *testing.T) {
	ctx := context.Background()
	t.Run("missing_scope names the scope", func(t *testing.T) {
		f := newFakeSlack(t)
		f.mu.Lock()
		f.infoErr = obj{"ok": false, "error": "missing_scope", "needed": "groups:read", "provided": "chat:write,channels:read"}
		f.mu.Unlock()
		a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
		err := a.CanPost(ctx, chatmodel.Conversation{Channel: "C0OPS"})
		var ue *chatmodel.UserError
		require.ErrorAs(t, err, &ue)
		assert.Contains(t, ue.Msg, "`groups:read`")
		assert.Contains(t, ue.Msg, "reinstall the app")
	})
	t.Run("missing_scope without needed still says which scopes", func(t *testing.T) {
		f := newFakeSlack(t)
		f.mu.Lock()
		f.infoErr = obj{"ok": false, "error": "missing_scope"}
		f.mu.Unlock()
		a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
		err := a.CanPost(ctx, chatmodel.Conversation{Channel: "C0OPS"})
		var ue *chatmodel.UserError
		require.ErrorAs(t, err, &ue)
		assert.Contains(t, ue.Msg, "groups:read")
	})
	t.Run("invalid_auth points at bot_token", func(t *testing.T) {
		f := newFakeSlack(t)
		f.mu.Lock()
		f.infoErr = obj{"ok": false, "error": "invalid_auth"}
		f.mu.Unlock()
		a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
		var ue *chatmodel.UserError
		require.ErrorAs(t, a.CanPost(ctx, chatmodel.Conversation{Channel: "C0OPS"}), &ue)
		assert.Contains(t, ue.Msg, "bot_token")
	})
	t.Run("a 5xx fails open", func(t *testing.T) {
		f := newFakeSlack(t)
		f.mu.Lock()
		f.infoStatus = http.StatusServiceUnavailable
		f.mu.Unlock()
		a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
		a.retry.sleep = func(context.Context, time.Duration) error { return nil }
		err := a.CanPost(ctx, chatmodel.Conversation{Channel: "C0OPS"})
		require.Error(t, err)
		var ue *chatmodel.UserError
		assert.False(t, errors.As(err, &ue), "a transient failure is not a refusal: %v", err)
		assert.NotErrorIs(t, err, chatmodel.ErrCannotPost)
		assert.Len(t, f.callsTo("conversations.info"), 1+transientRetries, "retried first")
	})
}

// TestIdentity_RenamedUserIsFetchedAgain: a user renamed in Slack since
// their name was cached is asked about once more, and acts under the new
// name; a payload name that still disagrees acts for the id, under the
// id's handle (#22.3, #35.2).
func TestIdentity_RenamedUserIsFetchedAgain(t *testing.T) {
	f := newFakeSlack(t)
	f.mu.Lock()
	f.users["UMALLORY"] = "mallory"
	f.mu.Unlock()
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	now := time.Now()
	var mu sync.Mutex
	a.dir.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	rec := newRecorder()
	runAdapter(t, a, rec)

	pressAs(t, a, "1", "UCAROL", "carol")
	assert.Equal(t, "carol", rec.next(t).User.Name)

	// carol becomes caroline; the cache still says carol.
	f.mu.Lock()
	f.users["UCAROL"] = "caroline"
	f.mu.Unlock()
	later(2 * time.Minute)
	infos := len(f.callsTo("users.info"))
	pressAs(t, a, "2", "UCAROL", "caroline")
	e := rec.next(t)
	assert.Equal(t, chatmodel.User{ID: "UCAROL", Name: "caroline"}, e.User, "acts under the new name at once, not after an hour")
	assert.Len(t, f.callsTo("users.info"), infos+1, "one fresh look-up")

	// A name that disagrees after the fresh look-up: the id acts, under
	// its handle; nobody is told off.
	pressAs(t, a, "3", "UMALLORY", "bob")
	assert.Equal(t, chatmodel.User{ID: "UMALLORY", Name: "mallory"}, rec.next(t).User)
	for _, m := range f.messages() {
		assert.False(t, m.Ephemeral && m.User == "UMALLORY", "no refusal: %+v", m)
	}

	// Within a minute, a wrong name does not make Slack be asked again.
	infos = len(f.callsTo("users.info"))
	pressAs(t, a, "4", "UMALLORY", "bob")
	assert.Equal(t, "mallory", rec.next(t).User.Name)
	assert.Len(t, f.callsTo("users.info"), infos)
}
