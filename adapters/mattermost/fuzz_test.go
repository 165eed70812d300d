package mattermost

import (
	"crypto/hmac"
	"encoding/hex"
	"testing"
)

// FuzzVerifyContext: the button signature check never panics, and it
// accepts a context only with the exact HMAC of its post, thread, action
// and value.
func FuzzVerifyContext(f *testing.F) {
	a := &Adapter{cfg: resolved{hmacKey: []byte("0123456789abcdef0123456789abcdef")}}
	good := hex.EncodeToString(a.sign("post1", "root1", "approve", "r-5fb1|prune"))
	f.Add("post1", "root1", "approve", "r-5fb1|prune", good, true)
	f.Add("post2", "root1", "approve", "r-5fb1|prune", good, true)
	f.Add("post1", "", "reject", "", "zz", false)
	f.Add("", "", "", "", "", true)
	f.Fuzz(func(t *testing.T, postID, thread, action, value, sig string, sigIsString bool) {
		c := map[string]any{ctxAction: action, ctxValue: value, ctxThread: thread}
		if sigIsString {
			c[ctxSig] = sig
		} else {
			c[ctxSig] = []byte(sig) // not a string: must be refused, not panic
		}
		gotAction, gotValue, gotThread, err := a.verifyContext(postID, c)
		if err != nil {
			return
		}
		want := a.sign(postID, thread, action, value)
		got, decErr := hex.DecodeString(sig)
		if !sigIsString || decErr != nil || !hmac.Equal(got, want) {
			t.Fatalf("accepted a context with a wrong signature: post %q action %q value %q sig %q", postID, action, value, sig)
		}
		if gotAction != action || gotValue != value || gotThread != thread {
			t.Fatalf("verified fields changed")
		}
	})
}
