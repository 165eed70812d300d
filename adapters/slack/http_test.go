package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/internal/httpguard/httpguardtest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// serve sends body to path through h, signed with testSecret at ts unless
// hdr overrides the signature headers, and returns the response.
func serve(t *testing.T, h http.Handler, path, contentType string, body []byte, ts time.Time, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	sec := strconv.FormatInt(ts.Unix(), 10)
	req.Header.Set("X-Slack-Request-Timestamp", sec)
	req.Header.Set("X-Slack-Signature", sign(testSecret, sec, body))
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

const formType = "application/x-www-form-urlencoded"

func commandBody(text string) []byte {
	return []byte(url.Values{
		"command": {"/runbook"}, "text": {text}, "user_id": {"UALICE"}, "user_name": {"alice"},
		"channel_id": {"C0OPS"}, "channel_name": {"ci-ops"}, "team_id": {"T0OPS"},
		"trigger_id": {"1337.42.abcdef"}, "response_url": {"https://hooks.slack.com/commands/T/1/x"},
	}.Encode())
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestHTTPHandler_VerifiesSignature(t *testing.T) {
	f := newFakeSlack(t)
	logs := &syncBuffer{}
	a, err := New(Config{Mode: ModeHTTP, BotToken: testBotToken, SigningSecret: testSecret},
		Options{APIURL: f.url(), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	rec := newRecorder()
	runAdapter(t, a, rec)
	h := a.HTTPHandler()
	body := commandBody("run worker-stalled target=infra-prd")
	now := time.Now()

	tests := []struct {
		name   string
		body   []byte
		ts     time.Time
		hdr    map[string]string
		want   int
		reason string // in the log
	}{
		{name: "valid", body: body, ts: now, want: http.StatusOK},
		{name: "valid, 4 minutes old", body: body, ts: now.Add(-4 * time.Minute), want: http.StatusOK},
		{name: "tampered body", body: body, ts: now, want: http.StatusUnauthorized, reason: "signature does not match",
			hdr: map[string]string{"X-Slack-Signature": sign(testSecret, strconv.FormatInt(now.Unix(), 10), commandBody("run something-else"))}},
		{name: "wrong secret", body: body, ts: now, want: http.StatusUnauthorized, reason: "signature does not match",
			hdr: map[string]string{"X-Slack-Signature": sign("another-secret", strconv.FormatInt(now.Unix(), 10), body)}},
		{name: "stale timestamp", body: body, ts: now.Add(-6 * time.Minute), want: http.StatusUnauthorized, reason: "more than 5 minutes"},
		{name: "future timestamp", body: body, ts: now.Add(6 * time.Minute), want: http.StatusUnauthorized, reason: "more than 5 minutes"},
		{name: "missing signature", body: body, ts: now, want: http.StatusUnauthorized, reason: "missing X-Slack-Signature",
			hdr: map[string]string{"X-Slack-Signature": ""}},
		{name: "missing timestamp", body: body, ts: now, want: http.StatusUnauthorized, reason: "missing X-Slack-Signature",
			hdr: map[string]string{"X-Slack-Request-Timestamp": ""}},
		{name: "malformed signature", body: body, ts: now, want: http.StatusUnauthorized, reason: "malformed X-Slack-Signature",
			hdr: map[string]string{"X-Slack-Signature": "v0=zz"}},
		{name: "malformed timestamp", body: body, ts: now, want: http.StatusUnauthorized, reason: "malformed X-Slack-Request-Timestamp",
			hdr: map[string]string{"X-Slack-Request-Timestamp": "yesterday"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := serve(t, h, PathCommands, formType, tt.body, tt.ts, tt.hdr)
			require.Equal(t, tt.want, res.Code, res.Body.String())
			if tt.want == http.StatusOK {
				e := rec.next(t)
				assert.Equal(t, "UALICE", e.User.ID)
				return
			}
			rec.none(t, 50*time.Millisecond)
			assert.Contains(t, logs.String(), tt.reason)
		})
	}
	assert.NotContains(t, logs.String(), testSecret, "the signing secret must never be logged")
}

func TestHTTPHandler_RejectsOtherMethodsAndPaths(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	h := a.HTTPHandler()

	req := httptest.NewRequest(http.MethodGet, PathEvents, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)

	res := serve(t, h, "/slack/other", formType, nil, time.Now(), nil)
	assert.Equal(t, http.StatusNotFound, res.Code)
}

func TestHTTPHandler_OffWithoutSigningSecret(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeSocket})
	res := serve(t, a.HTTPHandler(), PathCommands, formType, commandBody("list"), time.Now(), nil)
	assert.Equal(t, http.StatusNotFound, res.Code)
}

func TestHTTP_SlashCommandBecomesEvent(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)

	res := serve(t, a.HTTPHandler(), PathCommands, formType, commandBody("  run worker-stalled target=infra-prd &lt;x&gt; "), time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)
	assert.Empty(t, res.Body.String(), "the ack shows nothing; the engine answers")

	e := rec.next(t)
	assert.Equal(t, chatmodel.EventCommand, e.Kind)
	assert.Equal(t, "slack:command:1337.42.abcdef", e.ID)
	assert.Equal(t, chatmodel.User{ID: "UALICE", Name: "alice"}, e.User)
	assert.Equal(t, chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}, e.Conversation)
	assert.Equal(t, "run worker-stalled target=infra-prd <x>", e.Text)
	assert.False(t, e.Time.IsZero())
}

func TestHTTP_SSLCheckIsAcknowledged(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)
	res := serve(t, a.HTTPHandler(), PathCommands, formType, []byte("ssl_check=1&token=x"), time.Now(), nil)
	assert.Equal(t, http.StatusOK, res.Code)
	rec.none(t, 50*time.Millisecond)
}

// slowHandler blocks every Handle until released.
type slowHandler struct {
	release chan struct{}
	got     chan chatmodel.Event
}

func (s *slowHandler) Handle(ctx context.Context, e chatmodel.Event) error {
	s.got <- e
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

func TestHTTP_AcksFastWhileEngineIsBusy(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	slow := &slowHandler{release: make(chan struct{}), got: make(chan chatmodel.Event, 10)}
	runAdapter(t, a, slow)
	t.Cleanup(func() { close(slow.release) })
	h := a.HTTPHandler()

	for i := range 3 {
		start := time.Now()
		res := serve(t, h, PathEvents, "application/json", reactionBody("Ev"+strconv.Itoa(i), "reaction_added", "UBOB", "white_check_mark"), time.Now(),
			map[string]string{"X-Slack-Retry-Num": strconv.Itoa(i)})
		require.Equal(t, http.StatusOK, res.Code)
		assert.Less(t, time.Since(start), 500*time.Millisecond, "ack must not wait for the engine")
	}
	e := <-slow.got
	assert.Equal(t, "Ev0", e.ID)
}

func reactionBody(eventID, typ, user, reaction string) []byte {
	b, _ := json.Marshal(map[string]any{
		"token": "x", "team_id": "T0OPS", "api_app_id": "A0GC", "type": "event_callback",
		"event_id": eventID, "event_time": 1795979100,
		"event": map[string]any{
			"type": typ, "user": user, "reaction": reaction, "item_user": fakeBotUserID,
			"item":     map[string]any{"type": "message", "channel": "C0OPS", "ts": "1795979000.000007"},
			"event_ts": "1795979100.000200",
		},
	})
	return b
}

func TestHTTP_ReactionEvents(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)
	h := a.HTTPHandler()
	msg := chatmodel.MessageRef{Platform: Platform, Channel: "C0OPS", ID: "1795979000.000007"}

	tests := []struct {
		name string
		body []byte
		want chatmodel.Event
	}{
		{
			name: "added",
			body: reactionBody("Ev01", "reaction_added", "UBOB", "white_check_mark"),
			want: chatmodel.Event{Kind: chatmodel.EventReaction, ID: "Ev01", User: chatmodel.User{ID: "UBOB", Name: "bob"},
				Conversation: chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}, Message: msg, Intent: chatmodel.IntentApprove},
		},
		{
			name: "removed",
			body: reactionBody("Ev02", "reaction_removed", "UBOB", "white_check_mark"),
			want: chatmodel.Event{Kind: chatmodel.EventReaction, ID: "Ev02", User: chatmodel.User{ID: "UBOB", Name: "bob"},
				Conversation: chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}, Message: msg, Intent: chatmodel.IntentApprove, Removed: true},
		},
		{
			name: "skin tone dropped",
			body: reactionBody("Ev03", "reaction_added", "UCAROL", "+1::skin-tone-3"),
			want: chatmodel.Event{Kind: chatmodel.EventReaction, ID: "Ev03", User: chatmodel.User{ID: "UCAROL", Name: "carol"},
				Conversation: chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}, Message: msg, Intent: chatmodel.IntentApprove},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := serve(t, h, PathEvents, "application/json", tt.body, time.Now(), nil)
			require.Equal(t, http.StatusOK, res.Code)
			got := rec.next(t)
			assert.Equal(t, int64(1795979100), got.Time.Unix(), "event_ts")
			got.Time = time.Time{}
			assert.Equal(t, tt.want, got)
		})
	}

	t.Run("own reaction ignored", func(t *testing.T) {
		res := serve(t, h, PathEvents, "application/json", reactionBody("Ev04", "reaction_added", fakeBotUserID, "eyes"), time.Now(), nil)
		require.Equal(t, http.StatusOK, res.Code)
		rec.none(t, 100*time.Millisecond)
	})

	t.Run("reaction on a file ignored", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": "Ev05", "token": "x",
			"event": map[string]any{"type": "reaction_added", "user": "UBOB", "reaction": "x",
				"item": map[string]any{"type": "file", "file": "F1"}, "event_ts": "1.2"}})
		res := serve(t, h, PathEvents, "application/json", b, time.Now(), nil)
		require.Equal(t, http.StatusOK, res.Code)
		rec.none(t, 100*time.Millisecond)
	})

	t.Run("unsubscribed event acknowledged and ignored", func(t *testing.T) {
		b, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": "Ev06", "token": "x",
			"event": map[string]any{"type": "no_such_event_type", "user": "UBOB"}})
		res := serve(t, h, PathEvents, "application/json", b, time.Now(), nil)
		require.Equal(t, http.StatusOK, res.Code)
		rec.none(t, 100*time.Millisecond)
	})
}

func TestHTTP_EventRetriesPassedWithSameID(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)
	h := a.HTTPHandler()
	body := reactionBody("Ev0RETRY", "reaction_added", "UBOB", "white_check_mark")

	first := serve(t, h, PathEvents, "application/json", body, time.Now(), nil)
	retry := serve(t, h, PathEvents, "application/json", body, time.Now(),
		map[string]string{"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"})
	require.Equal(t, http.StatusOK, first.Code)
	require.Equal(t, http.StatusOK, retry.Code)
	// Both reach the engine, which drops the second by its ID.
	assert.Equal(t, "Ev0RETRY", rec.next(t).ID)
	assert.Equal(t, "Ev0RETRY", rec.next(t).ID)
}

func TestHTTP_URLVerification(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	body := []byte(`{"token":"x","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	res := serve(t, a.HTTPHandler(), PathEvents, "application/json", body, time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)
	assert.JSONEq(t, `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}`, res.Body.String())
	assert.Equal(t, "application/json", res.Header().Get("Content-Type"))
}

func blockActionsPayload(triggerID, actionID, value string) string {
	b, _ := json.Marshal(map[string]any{
		"type":       "block_actions",
		"user":       map[string]any{"id": "UCAROL", "username": "carol", "name": "carol", "team_id": "T0OPS"},
		"api_app_id": "A0GC", "token": "x", "trigger_id": triggerID,
		"team":         map[string]any{"id": "T0OPS", "domain": "ops"},
		"container":    map[string]any{"type": "message", "message_ts": "1795979000.000009", "channel_id": "C0OPS", "thread_ts": "1795979000.000001", "is_ephemeral": false},
		"channel":      map[string]any{"id": "C0OPS", "name": "ci-ops"},
		"message":      map[string]any{"type": "message", "ts": "1795979000.000009", "thread_ts": "1795979000.000001", "text": "Approval needed"},
		"response_url": "https://hooks.slack.com/actions/T/1/x",
		"actions": []map[string]any{{
			"action_id": actionID, "block_id": "b1", "type": "button", "value": value,
			"text": map[string]any{"type": "plain_text", "text": "Approve"}, "action_ts": "1795979200.123456",
		}},
		"state": map[string]any{"values": map[string]any{}},
	})
	return string(b)
}

func TestHTTP_BlockActionsBecomeButtonEvents(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)

	body := []byte(url.Values{"payload": {blockActionsPayload("111.222.333", "approve", "r-7f3a/5")}}.Encode())
	res := serve(t, a.HTTPHandler(), PathInteractivity, formType, body, time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)

	e := rec.next(t)
	assert.Equal(t, chatmodel.EventButton, e.Kind)
	assert.Equal(t, "slack:action:111.222.333", e.ID)
	assert.Equal(t, chatmodel.User{ID: "UCAROL", Name: "carol"}, e.User)
	assert.Equal(t, chatmodel.Conversation{Platform: Platform, Channel: "C0OPS", Thread: "1795979000.000001"}, e.Conversation)
	assert.Equal(t, chatmodel.MessageRef{Platform: Platform, Channel: "C0OPS", ID: "1795979000.000009", Thread: "1795979000.000001"}, e.Message)
	assert.Equal(t, chatmodel.IntentApprove, e.Intent)
	assert.Equal(t, "r-7f3a/5", e.Value)
	assert.Equal(t, int64(1795979200), e.Time.Unix())

	t.Run("payload in the query string is not trusted", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, PathInteractivity+"?payload="+url.QueryEscape(blockActionsPayload("9", "approve", "x")), strings.NewReader(""))
		req.Header.Set("Content-Type", formType)
		sec := strconv.FormatInt(time.Now().Unix(), 10)
		req.Header.Set("X-Slack-Request-Timestamp", sec)
		req.Header.Set("X-Slack-Signature", sign(testSecret, sec, nil))
		w := httptest.NewRecorder()
		a.HTTPHandler().ServeHTTP(w, req)
		assert.Equal(t, http.StatusBadRequest, w.Code)
		rec.none(t, 100*time.Millisecond)
	})
}

// TestHTTP_TricklingRequestIsDropped: an unsigned request announcing a
// large body and sending a byte at a time is cut off at the body deadline
// (#19.7), through a server with groundcrew's timeouts.
func TestHTTP_TricklingRequestIsDropped(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	a.bodyTimeout = 300 * time.Millisecond
	srv := httptest.NewUnstartedServer(a.HTTPHandler())
	srv.Config = httpguard.Server(a.HTTPHandler())
	srv.Start()
	defer srv.Close()
	took, answer := httpguardtest.Trickle(t, srv.Listener.Addr().String(), PathCommands, 100*time.Millisecond, 10*time.Second)
	assert.NotEqual(t, "still open", answer)
	assert.Less(t, took, 5*time.Second, answer)
}

// TestHTTP_BlockActionsWithManyActionsIsOnePress: Slack sends one action per
// click; a payload carrying 300 becomes one event, the rest refused and
// counted (#22.3).
func TestHTTP_BlockActionsWithManyActionsIsOnePress(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	rec := newRecorder()
	runAdapter(t, a, rec)
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(blockActionsPayload("111.222.333", "approve", "r-7f3a/5")), &p))
	first := p["actions"].([]any)[0]
	acts := []any{first}
	for i := range 299 {
		acts = append(acts, map[string]any{"action_id": "reject", "block_id": "b1", "type": "button", "value": "r-7f3a/5", "action_ts": fmt.Sprintf("1795979200.%06d", i)})
	}
	p["actions"] = acts
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	res := serve(t, a.HTTPHandler(), PathInteractivity, formType, []byte(url.Values{"payload": {string(raw)}}.Encode()), time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)
	e := rec.next(t)
	assert.Equal(t, chatmodel.IntentApprove, e.Intent, "the first action is handled")
	assert.Equal(t, "slack:action:111.222.333", e.ID)
	rec.none(t, 100*time.Millisecond)
	assert.EqualValues(t, 299, a.RefusedActions())
}
