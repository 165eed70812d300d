package slack

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func envelope(id, typ string, payload any) map[string]any {
	return map[string]any{"envelope_id": id, "type": typ, "payload": payload, "accepts_response_payload": typ != "events_api"}
}

func slashPayload(trigger string) map[string]any {
	return map[string]any{
		"token": "x", "team_id": "T0OPS", "team_domain": "ops", "channel_id": "C0OPS", "channel_name": "ci-ops",
		"user_id": "UALICE", "user_name": "alice", "command": "/runbook", "text": "run worker-stalled target=infra-prd",
		"api_app_id": "A0GC", "response_url": "https://hooks.slack.com/commands/T/1/x", "trigger_id": trigger,
	}
}

func rawJSON(b []byte) json.RawMessage { return json.RawMessage(b) }

// socketScript is a Socket Mode server: on each connection it says hello,
// writes the envelopes of that connection one at a time and waits for each
// ack; after the last one it asks the client to reconnect (disconnect) if
// more connections are scripted, else it keeps the connection open.
type socketScript struct {
	conns [][]map[string]any
	n     atomic.Int32
	acks  chan string
	// payloads, when set, gets each ack's payload.
	payloads chan json.RawMessage
}

func (s *socketScript) serve(t *testing.T) func(*websocket.Conn) {
	return func(c *websocket.Conn) {
		i := int(s.n.Add(1)) - 1
		if err := c.WriteJSON(map[string]any{"type": "hello", "num_connections": 1}); err != nil {
			return
		}
		var envs []map[string]any
		if i < len(s.conns) {
			envs = s.conns[i]
		}
		for _, env := range envs {
			if err := c.WriteJSON(env); err != nil {
				return
			}
			var ack struct {
				EnvelopeID string          `json:"envelope_id"`
				Payload    json.RawMessage `json:"payload"`
			}
			if err := c.ReadJSON(&ack); err != nil {
				return
			}
			s.acks <- ack.EnvelopeID
			if s.payloads != nil {
				s.payloads <- ack.Payload
			}
		}
		if i+1 < len(s.conns) {
			_ = c.WriteJSON(map[string]any{"type": "disconnect", "reason": "refresh_requested"})
		}
		for { // hold the connection until the client goes away
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}
}

func TestSocketMode_AcksAndDeliversEvents(t *testing.T) {
	f := newFakeSlack(t)
	script := &socketScript{acks: make(chan string, 10), conns: [][]map[string]any{
		{
			envelope("env-cmd", "slash_commands", slashPayload("trig-1")),
			envelope("env-evt", "events_api", rawJSON(reactionBody("Ev0SOCK", "reaction_added", "UBOB", "white_check_mark"))),
			envelope("env-btn", "interactive", rawJSON([]byte(blockActionsPayload("trig-2", "approve", "r1/5")))),
		},
		{ // after Slack's disconnect, on the new connection: a retry of the same event
			func() map[string]any {
				e := envelope("env-evt-retry", "events_api", rawJSON(reactionBody("Ev0SOCK", "reaction_added", "UBOB", "white_check_mark")))
				e["retry_attempt"], e["retry_reason"] = 1, "timeout"
				return e
			}(),
		},
	}}
	f.setWebsocket(script.serve(t))
	a := newTestAdapter(t, f, Config{Mode: ModeSocket})
	rec := newRecorder()
	runAdapter(t, a, rec)

	cmd := rec.next(t)
	assert.Equal(t, chatmodel.EventCommand, cmd.Kind)
	assert.Equal(t, "slack:command:trig-1", cmd.ID)
	assert.Equal(t, chatmodel.User{ID: "UALICE", Name: "alice"}, cmd.User)
	assert.Equal(t, chatmodel.Conversation{Platform: Platform, Channel: "C0OPS"}, cmd.Conversation)
	assert.Equal(t, "run worker-stalled target=infra-prd", cmd.Text)

	react := rec.next(t)
	assert.Equal(t, chatmodel.EventReaction, react.Kind)
	assert.Equal(t, "Ev0SOCK", react.ID)
	assert.Equal(t, chatmodel.IntentApprove, react.Intent)
	assert.Equal(t, chatmodel.User{ID: "UBOB", Name: "bob"}, react.User)
	assert.Equal(t, chatmodel.MessageRef{Platform: Platform, Channel: "C0OPS", ID: "1795979000.000007"}, react.Message)

	btn := rec.next(t)
	assert.Equal(t, chatmodel.EventButton, btn.Kind)
	assert.Equal(t, chatmodel.IntentApprove, btn.Intent)
	assert.Equal(t, "r1/5", btn.Value)
	assert.Equal(t, "UCAROL", btn.User.ID)

	retry := rec.next(t)
	assert.Equal(t, "Ev0SOCK", retry.ID, "a redelivery keeps its event_id for the engine to drop")

	var acks []string
	for range 4 {
		select {
		case id := <-script.acks:
			acks = append(acks, id)
		case <-time.After(5 * time.Second):
			t.Fatalf("missing acks, got %v", acks)
		}
	}
	assert.Equal(t, []string{"env-cmd", "env-evt", "env-btn", "env-evt-retry"}, acks)
	assert.Equal(t, int32(2), script.n.Load(), "reconnected after disconnect")
}

func TestSocketMode_AckedBeforeEngineFinishes(t *testing.T) {
	f := newFakeSlack(t)
	script := &socketScript{acks: make(chan string, 10), conns: [][]map[string]any{{
		envelope("env-1", "slash_commands", slashPayload("t1")),
		envelope("env-2", "slash_commands", slashPayload("t2")),
	}}}
	f.setWebsocket(script.serve(t))
	a := newTestAdapter(t, f, Config{Mode: ModeSocket})
	slow := &slowHandler{release: make(chan struct{}), got: make(chan chatmodel.Event, 10)}
	runAdapter(t, a, slow)
	t.Cleanup(func() { close(slow.release) })

	for _, want := range []string{"env-1", "env-2"} {
		select {
		case id := <-script.acks:
			assert.Equal(t, want, id)
		case <-time.After(3 * time.Second):
			t.Fatalf("envelope %s not acked while the engine was busy", want)
		}
	}
}

func TestSocketMode_RejectedAppTokenStopsRun(t *testing.T) {
	f := newFakeSlack(t)
	f.openErr = "invalid_auth"
	a := newTestAdapter(t, f, Config{Mode: ModeSocket})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.Run(ctx, newRecorder())
	require.Error(t, err)
	assert.Equal(t, "invalid_auth", slackErrorCode(err))
	assert.Contains(t, err.Error(), "app_token")
}

func TestRun_RejectedBotToken(t *testing.T) {
	f := newFakeSlack(t)
	f.authErr = "invalid_auth"
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.Run(ctx, newRecorder())
	require.Error(t, err)
	assert.Equal(t, "invalid_auth", slackErrorCode(err))
	assert.Contains(t, err.Error(), "bot_token")
}

func TestRun_UnreachableSlackIsNotFatal(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	f.srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	require.NoError(t, a.Run(ctx, newRecorder()), "start-up waits for Slack until ctx ends")
}
