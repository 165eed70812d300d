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

func postAction(t *testing.T, a *Adapter, req model.PostActionIntegrationRequest) *model.PostActionIntegrationResponse {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, ActionPath, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	rr := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(rr, r)
	require.Equal(t, http.StatusOK, rr.Code, "Mattermost shows anything but 200 as an error")
	var resp model.PostActionIntegrationResponse
	require.NoError(t, json.Unmarshal(rr.Body.Bytes(), &resp))
	return &resp
}

// gateContext returns the signed context of the approve button of a gate
// posted in a thread.
func gateContext(a *Adapter, post string) map[string]any {
	return a.signContext(post, "rootpost000000000000000000", "approve", "r-7f3a/5")
}

func TestAction_Verification(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	const post = "gatepost000000000000000000"

	tamper := func(k string, v any) map[string]any {
		c := gateContext(a, post)
		c[k] = v
		return c
	}
	other := newTestAdapter(t, f, func(c *Config) { c.ActionHMACKey = "another-key-0123456789" })

	tests := []struct {
		name    string
		postID  string
		context map[string]any
		ok      bool
	}{
		{name: "valid", postID: post, context: gateContext(a, post), ok: true},
		{name: "tampered value", postID: post, context: tamper(ctxValue, "r-other/5")},
		{name: "tampered action", postID: post, context: tamper(ctxAction, "reject")},
		{name: "tampered thread", postID: post, context: tamper(ctxThread, "otherroot")},
		{name: "signature for another post", postID: "otherpost00000000000000000", context: gateContext(a, post)},
		{name: "signed with another key", postID: post, context: gateContext(other, post)},
		{name: "missing signature", postID: post, context: tamper(ctxSig, nil)},
		{name: "signature not hex", postID: post, context: tamper(ctxSig, "zz")},
		{name: "no context", postID: post},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postAction(t, a, model.PostActionIntegrationRequest{
				UserId: carolID, UserName: "carol", ChannelId: channelID, PostId: tt.postID,
				TriggerId: "trig-" + tt.name, Type: "button", Context: tt.context,
			})
			if !tt.ok {
				assert.Contains(t, resp.EphemeralText, "could not be verified")
				rec.none(t, 50*time.Millisecond)
				return
			}
			assert.Empty(t, resp.EphemeralText)
			assert.Nil(t, resp.Update, "the engine updates the post itself")
			e := rec.next(t)
			assert.Equal(t, chatmodel.EventButton, e.Kind)
			assert.Equal(t, chatmodel.IntentApprove, e.Intent)
			assert.Equal(t, "r-7f3a/5", e.Value)
			assert.Equal(t, chatmodel.User{ID: carolID, Name: "carol"}, e.User, "the user comes from the callback's user_id")
			assert.Equal(t, chatmodel.MessageRef{Platform: Platform, Channel: channelID, ID: post, Thread: "rootpost000000000000000000"}, e.Message)
			assert.Equal(t, "rootpost000000000000000000", e.Conversation.Thread)
			assert.True(t, hasPrefix(e.ID, "button:"), e.ID)
		})
	}
}

func TestAction_RefusalIsEphemeral(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	rec.setReply(func(ctx context.Context, e chatmodel.Event) error {
		return a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "Not counted: you started this run."})
	})
	runAdapter(t, a, rec)
	const post = "gatepost000000000000000000"
	resp := postAction(t, a, model.PostActionIntegrationRequest{
		UserId: aliceID, UserName: "alice", ChannelId: channelID, PostId: post, Context: gateContext(a, post),
	})
	assert.Equal(t, "Not counted: you started this run.", resp.EphemeralText)
	assert.Zero(t, f.callCount("POST /api/v4/posts"), "no public post for the refusal")
	rec.next(t)
}

func TestAction_BotClickIgnored(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	const post = "gatepost000000000000000000"
	postAction(t, a, model.PostActionIntegrationRequest{UserId: botID, ChannelId: channelID, PostId: post, Context: gateContext(a, post)})
	rec.none(t, 50*time.Millisecond)
}

func TestAction_MethodNotAllowed(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rr := httptest.NewRecorder()
	a.HTTPHandler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, ActionPath, nil))
	assert.Equal(t, http.StatusMethodNotAllowed, rr.Code)
}

// TestAction_Identity: the user of a button press is what the server says
// of its user_id (#19.1, #19.2): a forged user_name is refused, bots,
// deactivated and unknown accounts are flagged (the engine never lets them
// act), and the name shown is the id's username.
func TestAction_Identity(t *testing.T) {
	f := newFakeMM(t)
	f.mu.Lock()
	f.users["mallory0000000000000000000"] = &model.User{Id: "mallory0000000000000000000", Username: "mallory", DeleteAt: 1}
	f.users["someBot000000000000000000a"] = &model.User{Id: "someBot000000000000000000a", Username: "ci-bot", IsBot: true}
	f.mu.Unlock()
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	const post = "gatepost000000000000000000"
	press := func(user, name string) *model.PostActionIntegrationResponse {
		return postAction(t, a, model.PostActionIntegrationRequest{
			UserId: user, UserName: name, ChannelId: channelID, PostId: post,
			TriggerId: "trig-" + user + name, Type: "button", Context: gateContext(a, post),
		})
	}

	resp := press(aliceID, "carol")
	assert.Contains(t, resp.EphemeralText, "does not match its user id")
	rec.none(t, 50*time.Millisecond)

	press(aliceID, "")
	assert.Equal(t, chatmodel.User{ID: aliceID, Name: "alice"}, rec.next(t).User, "no name in the request: named from the id")

	press("mallory0000000000000000000", "mallory")
	assert.Equal(t, chatmodel.User{ID: "mallory0000000000000000000", Name: "mallory", Kind: chatmodel.UserDeactivated}, rec.next(t).User)
	press("someBot000000000000000000a", "ci-bot")
	assert.Equal(t, chatmodel.User{ID: "someBot000000000000000000a", Name: "ci-bot", Kind: chatmodel.UserBot}, rec.next(t).User)
	press("nobody00000000000000000000", "")
	assert.Equal(t, chatmodel.User{ID: "nobody00000000000000000000", Kind: chatmodel.UserUnknown}, rec.next(t).User)
}

func TestResolveUser(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	u, err := a.ResolveUser(context.Background(), "@carol")
	require.NoError(t, err)
	assert.Equal(t, chatmodel.User{ID: carolID, Name: "carol"}, u)
	u, err = a.ResolveUser(context.Background(), aliceID)
	require.NoError(t, err)
	assert.Equal(t, "alice", u.Name)
	_, err = a.ResolveUser(context.Background(), "nobody")
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
}

func TestCanPost(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	rec := newRecorder()
	runAdapter(t, a, rec)
	assert.NoError(t, a.CanPost(context.Background(), chatmodel.Conversation{Channel: channelID}))
	err := a.CanPost(context.Background(), chatmodel.Conversation{Channel: "otherchannel00000000000000"})
	var ue *chatmodel.UserError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, ue.Msg, "/invite @groundcrew")
}
