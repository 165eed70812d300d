package mattermost

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Keys of a button's integration context.
const (
	ctxAction = "action"
	ctxValue  = "value"
	ctxThread = "thread"
	ctxSig    = "sig"
	// ctxScope "user": the button is on an ephemeral message, whose post
	// id is Mattermost's to choose; it is signed for the user and channel
	// it was shown to (userScope) instead of a post.
	ctxScope = "scope"
)

// userScope is what a button on an ephemeral message is signed for in
// place of a post id (which never has a colon).
func userScope(user, channel string) string { return "user:" + user + ":" + channel }

// channelScope is what a button of a new post is signed for: its channel.
// The post's id is the server's to choose, and the buttons are created
// with the post, in one write; an edit of the post signs them for its id.
func channelScope(channel string) string { return "channel:" + channel }

// scopeChannel is ctxScope's value for a button signed for its channel.
const scopeChannel = "channel"

// errBadSignature is returned for a button context that fails verification.
var errBadSignature = errors.New("button signature does not match")

// sign computes the HMAC-SHA256 of a button: the post it sits on, its
// thread, its action and its value (which carries the run id and step).
// Fields are length-prefixed so no two field lists share an encoding.
func (a *Adapter) sign(postID, thread, action, value string) []byte {
	m := hmac.New(sha256.New, a.cfg.hmacKey)
	var n [4]byte
	for _, f := range []string{"groundcrew/mattermost/action/v1", postID, thread, action, value} {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return m.Sum(nil)
}

// signContext returns the integration context of a button.
func (a *Adapter) signContext(postID, thread, action, value string) map[string]any {
	return map[string]any{
		ctxAction: action,
		ctxValue:  value,
		ctxThread: thread,
		ctxSig:    hex.EncodeToString(a.sign(postID, thread, action, value)),
	}
}

// verifyContext checks the signature of a callback's context against the
// post id Mattermost reports (or, for a button on an ephemeral message,
// the user and channel), and returns action, value and thread.
func (a *Adapter) verifyContext(req model.PostActionIntegrationRequest) (action, value, thread string, err error) {
	c := req.Context
	str := func(k string) string { s, _ := c[k].(string); return s }
	action, value, thread = str(ctxAction), str(ctxValue), str(ctxThread)
	postID := req.PostId
	switch {
	case str(ctxScope) == "user" && req.UserId != "" && req.ChannelId != "":
		postID = userScope(req.UserId, req.ChannelId)
	case str(ctxScope) == scopeChannel && req.ChannelId != "":
		postID = channelScope(req.ChannelId)
	}
	got, decErr := hex.DecodeString(str(ctxSig))
	if postID == "" || action == "" || decErr != nil || len(got) != sha256.Size {
		return "", "", "", errBadSignature
	}
	if !hmac.Equal(got, a.sign(postID, thread, action, value)) {
		return "", "", "", errBadSignature
	}
	return action, value, thread, nil
}

// serveAction handles a button click. Mattermost does not sign these
// requests, so the context's HMAC is verified first; the user is the one
// Mattermost names in user_id, and the engine checks them against the
// approval policy like any other approver.
func (a *Adapter) serveAction(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req model.PostActionIntegrationRequest
	httpguard.Deadline(w, 0) // a client trickling its body is cut off (#19.7)
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	action, value, thread, err := a.verifyContext(req)
	if err != nil {
		a.log.Warn("refused a button callback", "post", req.PostId, "user", req.UserId, "remote", r.RemoteAddr, "err", err)
		writeActionResponse(w, "⚠️ This button could not be verified (groundcrew's key may have changed). React "+chatutil.Symbol(chatmodel.IntentApprove)+" / "+chatutil.Symbol(chatmodel.IntentReject)+" on the message instead.")
		return
	}
	if req.UserId == "" || req.UserId == a.BotUserID() {
		writeActionResponse(w, "")
		return
	}
	if h, _ := a.currentHandler(); h == nil {
		writeActionResponse(w, "⏳ groundcrew is starting; try again in a minute.")
		return
	}
	ephemeral := req.Context[ctxScope] == "user"
	if thread == "" && !ephemeral {
		// A button on a root post: its thread is the post's. An ephemeral
		// message is no post to reply to: its thread is the one signed
		// (none in the channel).
		thread = req.PostId
	}
	ref := chatmodel.MessageRef{Platform: Platform, Channel: req.ChannelId, ID: req.PostId, Thread: thread}
	if ref.Thread == ref.ID {
		ref.Thread = "" // a root post, as Post returned it
	}
	e := chatmodel.Event{
		Kind:         chatmodel.EventButton,
		ID:           requestID("button", req.TriggerId),
		User:         chatmodel.User{ID: req.UserId, Name: req.UserName},
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: req.ChannelId, Thread: thread},
		Message:      ref,
		Intent:       chatmodel.Intent(action),
		Value:        value,
		Time:         a.now(),
	}
	a.triggers().put(e.ID, req.TriggerId, a.now()) // ▶ Run opens a form with it
	got, done, err := a.interact(req.UserId, req.ChannelId, false, func() error {
		return a.deliver(e)
	})
	texts := got.texts
	switch {
	case len(texts) > 0:
		writeActionResponse(w, joinTexts(texts))
	case done && err != nil:
		writeActionResponse(w, "⚠️ groundcrew could not take this: "+err.Error())
	default:
		writeActionResponse(w, "")
	}
}

// writeActionResponse answers a button callback: HTTP 200 (anything else is
// shown as an error), leaving the post alone (the engine updates it) and
// with an optional ephemeral text for the clicker.
func writeActionResponse(w http.ResponseWriter, ephemeral string) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&model.PostActionIntegrationResponse{EphemeralText: ephemeral})
}
