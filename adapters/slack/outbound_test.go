package slack

import (
	"context"
	"errors"
	"strings"
	"testing"

	slackapi "github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestPost_RootMessageByChannelName(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()

	ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "#RunBooks"}, chatmodel.Message{
		Text: "🛠 *worker-stalled* on `infra-prd` — started by @alice · run r-7f3a",
	})
	require.NoError(t, err)
	assert.Equal(t, Platform, ref.Platform)
	assert.Equal(t, "C0RUN", ref.Channel, "the ref carries the resolved id, as reactions will")
	assert.Empty(t, ref.Thread)

	m, ok := f.message(ref.ID)
	require.True(t, ok)
	assert.Empty(t, m.ThreadTS)
	texts, actions := blockTexts(m)
	assert.Equal(t, []string{"🛠 *worker-stalled* on `infra-prd` — started by @alice · run r-7f3a"}, texts)
	assert.Empty(t, actions)
	assert.Equal(t, texts[0], m.Text, "notification fallback text")
	assert.Len(t, f.callsTo("conversations.list"), 2, "both pages read")

	// The name is cached.
	_, err = a.Post(ctx, chatmodel.Conversation{Channel: "#runbooks"}, chatmodel.Message{Text: "again"})
	require.NoError(t, err)
	assert.Len(t, f.callsTo("conversations.list"), 2)
}

func TestPost_ThreadReplyWithBroadcastAndButtons(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{Text: "root"})
	require.NoError(t, err)

	ref, err := a.Post(ctx, chatmodel.Conversation{Platform: Platform, Channel: "C0OPS", Thread: root.ID}, chatmodel.Message{
		Text:      "🔒 *Approval needed* — prune worker `w-0`",
		Broadcast: true,
		Buttons:   []chatmodel.Button{{Action: "approve", Label: "Approve", Style: "primary"}, {Action: "reject", Label: "Reject", Style: "danger"}},
	})
	require.NoError(t, err)
	assert.Equal(t, chatmodel.MessageRef{Platform: Platform, Channel: "C0OPS", ID: ref.ID, Thread: root.ID}, ref)

	m, _ := f.message(ref.ID)
	assert.Equal(t, root.ID, m.ThreadTS)
	assert.True(t, m.Broadcast, "reply_broadcast")
	_, actions := blockTexts(m)
	assert.Equal(t, []string{"approve", "reject"}, actions)

	t.Run("no broadcast unless asked", func(t *testing.T) {
		ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS", Thread: root.ID}, chatmodel.Message{Text: "step 1 ok"})
		require.NoError(t, err)
		m, _ := f.message(ref.ID)
		assert.False(t, m.Broadcast)
	})
}

func TestPost_LongDetailFollowsInThread(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()
	detail := strings.Repeat("caascad-ci-workers-infra-infra-prd-0   stalled  236  38d\n", 80)

	t.Run("root message: detail starts its thread", func(t *testing.T) {
		ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{Text: "Workers (3 running, 1 stalled)", Detail: detail})
		require.NoError(t, err)
		var replies []fakeMsg
		for _, m := range f.messages() {
			if m.ThreadTS == ref.ID {
				replies = append(replies, m)
			}
		}
		require.NotEmpty(t, replies)
		var n int
		for _, r := range replies {
			texts, _ := blockTexts(r)
			for _, tx := range texts {
				assert.True(t, strings.HasPrefix(tx, "```"))
				n += strings.Count(tx, "stalled  236")
			}
		}
		assert.Equal(t, 80, n)
	})

	t.Run("thread reply: detail goes to the same thread", func(t *testing.T) {
		ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS", Thread: "1795979000.000001"}, chatmodel.Message{Text: "1/6 ✅ Workers", Detail: detail})
		require.NoError(t, err)
		msgs := f.messages()
		last := msgs[len(msgs)-1]
		assert.Equal(t, "1795979000.000001", last.ThreadTS)
		assert.NotEqual(t, ref.ID, last.TS)
	})

	t.Run("short detail inline", func(t *testing.T) {
		ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{Text: "TSA reachable", Detail: "connect 12 ms"})
		require.NoError(t, err)
		m, _ := f.message(ref.ID)
		texts, _ := blockTexts(m)
		assert.Equal(t, []string{"TSA reachable", "connect 12 ms"}, texts)
	})
}

func TestUpdate_InPlace(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()
	detail := strings.Repeat("plan item\n", 100)
	gate := chatmodel.Message{Text: "🔒 Approval needed", Detail: detail, Buttons: []chatmodel.Button{{Action: "approve", Label: "Approve"}}}
	ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS", Thread: "1795979000.000001"}, gate)
	require.NoError(t, err)
	before := len(f.messages())

	gate.Text = "🔒 Approval needed\n• @carol ✅ — approved 04:12"
	require.NoError(t, a.Update(ctx, ref, gate))
	m, _ := f.message(ref.ID)
	assert.Equal(t, 1, m.Updates)
	texts, actions := blockTexts(m)
	assert.Equal(t, []string{"🔒 Approval needed\n• @carol ✅ — approved 04:12"}, texts)
	assert.Equal(t, []string{"approve"}, actions)
	assert.Len(t, f.messages(), before, "an unchanged detail is not posted again")

	decided := chatmodel.Message{Text: "✅ Approved by @carol", Detail: detail + "applied\n"}
	require.NoError(t, a.Update(ctx, ref, decided))
	m, _ = f.message(ref.ID)
	_, actions = blockTexts(m)
	assert.Empty(t, actions, "buttons removed once decided")
	assert.Greater(t, len(f.messages()), before, "a changed detail is posted as a new reply")

	t.Run("unknown message", func(t *testing.T) {
		err := a.Update(ctx, chatmodel.MessageRef{Channel: "C0OPS", ID: "1.2"}, chatmodel.Message{Text: "x"})
		require.Error(t, err)
		assert.Equal(t, "message_not_found", slackErrorCode(err))
	})
}

func TestEphemeral(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()

	err := a.Ephemeral(ctx, chatmodel.Conversation{Channel: "C0OPS", Thread: "1795979000.000001"}, chatmodel.User{ID: "UALICE"},
		chatmodel.Message{Text: "You cannot approve: you started this run."})
	require.NoError(t, err)
	msgs := f.messages()
	require.Len(t, msgs, 1)
	assert.True(t, msgs[0].Ephemeral)
	assert.Equal(t, "UALICE", msgs[0].User)
	assert.Equal(t, "1795979000.000001", msgs[0].ThreadTS)
	texts, _ := blockTexts(msgs[0])
	assert.Equal(t, []string{"You cannot approve: you started this run."}, texts)

	require.ErrorIs(t, a.Ephemeral(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.User{}, chatmodel.Message{Text: "x"}), ErrInvalidMessage)

	t.Run("not in channel: joins and answers", func(t *testing.T) {
		f.mu.Lock()
		f.notInChans["C0RUN"] = true
		f.mu.Unlock()
		require.NoError(t, a.Ephemeral(ctx, chatmodel.Conversation{Channel: "C0RUN"}, chatmodel.User{ID: "UBOB"}, chatmodel.Message{Text: "Unknown runbook."}))
		assert.Len(t, f.callsTo("conversations.join"), 1)
		msgs := f.messages()
		assert.Equal(t, "UBOB", msgs[len(msgs)-1].User)
	})
}

func TestPost_Errors(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()

	t.Run("unknown channel name", func(t *testing.T) {
		_, err := a.Post(ctx, chatmodel.Conversation{Channel: "#nope"}, chatmodel.Message{Text: "digest"})
		require.ErrorIs(t, err, chatmodel.ErrNotFound)
		assert.Contains(t, err.Error(), "#nope")
	})

	t.Run("invalid message makes no call", func(t *testing.T) {
		n := len(f.callsTo("chat.postMessage"))
		_, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{})
		require.ErrorIs(t, err, ErrInvalidMessage)
		assert.Len(t, f.callsTo("chat.postMessage"), n)
	})

	t.Run("unknown channel id is returned, not retried", func(t *testing.T) {
		n := len(f.callsTo("chat.postMessage"))
		_, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0GONE"}, chatmodel.Message{Text: "x"})
		require.Error(t, err)
		assert.Equal(t, "channel_not_found", slackErrorCode(err))
		assert.Len(t, f.callsTo("chat.postMessage"), n+1)
	})

	t.Run("not in channel: joins and posts", func(t *testing.T) {
		f.mu.Lock()
		f.notInChans["C0OPS"] = true
		f.mu.Unlock()
		ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "C0OPS"}, chatmodel.Message{Text: "hello"})
		require.NoError(t, err)
		assert.NotEmpty(t, ref.ID)
		assert.Len(t, f.callsTo("conversations.join"), 1)
	})
}

// A message's file (the digest chart) is uploaded with the external upload
// flow and shared in the message's channel; a failed upload leaves the
// message posted.
func TestPost_UploadsFiles(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{})
	ctx := context.Background()
	png := []byte("\x89PNG\r\n\x1a\nchart")
	ref, err := a.Post(ctx, chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "🟢 *Health digest* `infra-prd`",
		Files: []chatmodel.File{{Name: "digest-infra-prd.png", Alt: "Chart of infra-prd over the last 3 digests", Data: png}}})
	require.NoError(t, err)
	_, ok := f.message(ref.ID)
	require.True(t, ok, "the text is posted")
	up := f.sharedFiles()
	require.Len(t, up, 1)
	assert.Equal(t, fakeUpload{ID: "F1", Name: "digest-infra-prd.png", AltText: "Chart of infra-prd over the last 3 digests",
		Title: "Chart of infra-prd over the last 3 digests", Channel: "C0OPS", Data: png}, up[0])

	f.mu.Lock()
	f.uploadErr = "missing_scope"
	f.mu.Unlock()
	ref, err = a.Post(ctx, chatmodel.Conversation{Channel: "#ci-ops"}, chatmodel.Message{Text: "second", Files: []chatmodel.File{{Name: "x.png", Data: png}}})
	require.NoError(t, err, "a failed upload does not fail the post (it would be posted twice)")
	_, ok = f.message(ref.ID)
	assert.True(t, ok)
	assert.Len(t, f.sharedFiles(), 1)
}

// TestCannotPost_RefusedForGood: Slack's answers that sending the same
// message again cannot cure wrap chatmodel.ErrCannotPost (the outbox gives
// the post up, loudly, instead of retrying it and its thread behind it);
// a rate limit, a server error or the token do not.
func TestCannotPost_RefusedForGood(t *testing.T) {
	for code, want := range map[string]bool{
		"not_in_channel": true, "channel_not_found": true, "is_archived": true, "invalid_blocks": true, "msg_too_long": true,
		"no_text": true, "restricted_action_thread_locked": true, "cannot_reply_to_message": true,
		"ratelimited": false, "internal_error": false, "fatal_error": false, "invalid_auth": false, "service_unavailable": false,
	} {
		assert.Equal(t, want, cannotPost(slackapi.SlackErrorResponse{Err: code}), code)
	}
	assert.False(t, cannotPost(errors.New("dial tcp: connection refused")))
}
