package mattermost

import (
	"crypto/hmac"
	"encoding/hex"
	"testing"

	"github.com/mattermost/mattermost/server/public/model"
)

// FuzzVerifyContext: the button signature check never panics, and it
// accepts a context only with the exact HMAC of its post (or, scoped to
// a user, of the user and channel of the click), thread, action and
// value.
func FuzzVerifyContext(f *testing.F) {
	a := &Adapter{cfg: resolved{hmacKey: []byte("0123456789abcdef0123456789abcdef")}}
	good := hex.EncodeToString(a.sign("post1", "root1", "approve", "r-5fb1|prune"))
	userGood := hex.EncodeToString(a.sign(userScope("ualice", "chan1"), "", "run", "worker-stalled"))
	f.Add("post1", "root1", "approve", "r-5fb1|prune", good, true, "ualice", "chan1", false)
	f.Add("post2", "root1", "approve", "r-5fb1|prune", good, true, "ualice", "chan1", false)
	f.Add("post1", "", "reject", "", "zz", false, "", "", false)
	f.Add("", "", "", "", "", true, "", "", true)
	f.Add("eph1", "", "run", "worker-stalled", userGood, true, "ualice", "chan1", true)
	f.Add("eph1", "", "run", "worker-stalled", userGood, true, "ucarol", "chan1", true)
	f.Add("user:ualice:chan1", "", "run", "worker-stalled", userGood, true, "ualice", "chan1", false)
	f.Fuzz(func(t *testing.T, postID, thread, action, value, sig string, sigIsString bool, user, channel string, scoped bool) {
		c := map[string]any{ctxAction: action, ctxValue: value, ctxThread: thread}
		if sigIsString {
			c[ctxSig] = sig
		} else {
			c[ctxSig] = []byte(sig) // not a string: must be refused, not panic
		}
		if scoped {
			c[ctxScope] = "user"
		}
		gotAction, gotValue, gotThread, err := a.verifyContext(model.PostActionIntegrationRequest{PostId: postID, UserId: user, ChannelId: channel, Context: c})
		if err != nil {
			return
		}
		key := postID
		if scoped && user != "" && channel != "" {
			key = userScope(user, channel)
		}
		want := a.sign(key, thread, action, value)
		got, decErr := hex.DecodeString(sig)
		if !sigIsString || decErr != nil || !hmac.Equal(got, want) {
			t.Fatalf("accepted a context with a wrong signature: post %q action %q value %q sig %q", postID, action, value, sig)
		}
		if gotAction != action || gotValue != value || gotThread != thread {
			t.Fatalf("verified fields changed")
		}
	})
}
