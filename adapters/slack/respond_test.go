package slack

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// privateChannels adds C0PRIV (private, the bot not invited) and C0HIDE
// (private, invisible to the bot) to f, and lets a accept f's response_url.
func privateChannels(f *fakeSlack, a *Adapter) {
	f.mu.Lock()
	f.channels = append(f.channels, chanOf("C0PRIV", "secret"), chanOf("C0HIDE", "hidden"))
	f.private["C0PRIV"], f.notInChans["C0PRIV"] = true, true
	f.hidden["C0HIDE"] = true
	f.mu.Unlock()
	base := f.responseURL()
	a.responseURLOK = func(u string) bool { return u == base }
}

// TestRun_RefusedInAPrivateChannelReachesTheUser: /runbook run in a private
// channel the bot is not in is refused, and the refusal reaches the user
// through the command's response_url (chat.postEphemeral there answers
// not_in_channel / channel_not_found) (#22.3).
func TestRun_RefusedInAPrivateChannelReachesTheUser(t *testing.T) {
	for _, mode := range []string{ModeHTTP, ModeSocket} {
		for _, ch := range []string{"C0PRIV", "C0HIDE"} {
			t.Run(mode+"/"+ch, func(t *testing.T) {
				env := newE2E(t, mode, privateChannels)
				fields := slashFields("UALICE", "alice", "run stalled-worker target=infra-prd worker=w-0", "trig-"+ch)
				fields["channel_id"], fields["response_url"] = ch, env.f.responseURL()
				env.in.command(t, fields)
				require.Eventually(t, func() bool {
					for _, m := range env.f.webhookResponses() {
						if m.ResponseType == "ephemeral" && strings.Contains(m.Text, "/invite @groundcrew") {
							return true
						}
					}
					return false
				}, 10*time.Second, 10*time.Millisecond, "the refusal is answered through response_url; got %+v\n%s", env.f.webhookResponses(), transcript(env.f))
				runs, err := env.db.ListRuns(env.ctx, runmodel.RunQuery{})
				require.NoError(t, err)
				assert.Empty(t, runs, "no run started")
			})
		}
	}
}

func TestEphemeral_ResponseURLFallback(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	privateChannels(f, a)
	rec := newRecorder()
	runAdapter(t, a, rec)
	ctx := context.Background()
	body := func(ch, trigger string) []byte {
		return []byte(url.Values{"command": {"/runbook"}, "text": {"help"}, "user_id": {"UALICE"}, "user_name": {"alice"},
			"channel_id": {ch}, "team_id": {"T0OPS"}, "trigger_id": {trigger}, "response_url": {f.responseURL()}}.Encode())
	}
	require.Equal(t, 200, serve(t, a.HTTPHandler(), PathCommands, formType, body("C0PRIV", "t1"), time.Now(), nil).Code)
	e := rec.next(t)

	// A channel the bot is in: chat.postEphemeral as before.
	require.NoError(t, a.Ephemeral(ctx, chatmodel.Conversation{Channel: "C0OPS"}, e.User, chatmodel.Message{Text: "in ops"}))
	assert.Empty(t, f.webhookResponses())

	// The private channel: through response_url, at most 5 times.
	for i := range responseURLUses {
		require.NoError(t, a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "answer"}), i)
	}
	assert.Len(t, f.webhookResponses(), responseURLUses)
	err := a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "sixth"})
	require.Error(t, err, "Slack accepts 5 uses: the sixth fails visibly")

	// Another user who ran no command there cannot be answered.
	require.Error(t, a.Ephemeral(ctx, e.Conversation, chatmodel.User{ID: "UBOB"}, chatmodel.Message{Text: "x"}))

	// After 30 minutes the response_url is gone.
	require.Equal(t, 200, serve(t, a.HTTPHandler(), PathCommands, formType, body("C0HIDE", "t2"), time.Now(), nil).Code)
	e = rec.next(t)
	now := time.Now().Add(31 * time.Minute)
	a.now = func() time.Time { return now }
	require.Error(t, a.Ephemeral(ctx, e.Conversation, e.User, chatmodel.Message{Text: "late"}))
}

func TestValidResponseURL(t *testing.T) {
	for u, want := range map[string]bool{
		"https://hooks.slack.com/commands/T0/1/x":  true,
		"https://hooks.slack-gov.com/commands/T/x": true,
		"http://hooks.slack.com/commands/T0/1/x":   false,
		"https://hooks.slack.com.evil.test/x":      false,
		"https://evil.test/?hooks.slack.com":       false,
		"https://user@hooks.slack.com/x":           false,
		"http://169.254.169.254/latest/meta-data/": false,
		"": false,
	} {
		assert.Equal(t, want, validResponseURL(u), u)
	}
}

// TestRun_MissingScopeRefusedWithTheFix: conversations.info answering
// missing_scope refuses the run, and the requester is told which scope to
// add, instead of a run waiting at a gate nobody sees (#22.3).
func TestRun_MissingScopeRefusedWithTheFix(t *testing.T) {
	env := newE2E(t, ModeHTTP, func(f *fakeSlack, _ *Adapter) {
		f.mu.Lock()
		f.infoErr = obj{"ok": false, "error": "missing_scope", "needed": "groups:read", "provided": "chat:write"}
		f.mu.Unlock()
	})
	env.in.command(t, slashFields("UALICE", "alice", "run stalled-worker target=infra-prd worker=w-0", "trig-scope"))
	require.Eventually(t, func() bool {
		for _, m := range env.f.messages() {
			if m.Ephemeral && m.User == "UALICE" && strings.Contains(m.Text, "groups:read") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "alice is told the scope to add:\n%s", transcript(env.f))
	runs, err := env.db.ListRuns(env.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs, "no run started")
}
