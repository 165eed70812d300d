package slack

// End-to-end: a runbook with an approval gate, started by a signed slash
// command (or a Socket Mode envelope), driven by Slack reactions and
// buttons, executed by the real engine and store against the Concourse
// simulator (through the Concourse provider), with every chat message going
// through this adapter to a fake Slack Web API.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// e2eRunbook lists the workers, asks for a manual check, then prunes the
// stalled one. The prune is destructive, so the engine gates it although the
// runbook has no approval step.
const e2eRunbook = `
name: stalled-worker
title: Prune a stalled worker
description: end-to-end test runbook
params:
  - name: worker
    description: the stalled worker
    required: true
steps:
  - id: workers
    kind: query
    title: Workers
    op: concourse.workers
  - id: check
    kind: manual
    title: Check the services on the worker
    text: "ssh {{ .params.worker }} sudo systemctl status concourse-worker"
  - id: prune
    kind: action
    title: Prune the worker
    op: concourse.prune_worker
    args:
      name: "{{ .params.worker }}"
`

// inbound delivers Slack payloads to the adapter over one transport.
type inbound interface {
	command(t *testing.T, fields map[string]string)
	event(t *testing.T, raw []byte)
	interaction(t *testing.T, raw []byte)
}

// httpInbound signs and POSTs payloads to the adapter's HTTP handler.
type httpInbound struct{ h http.Handler }

func (in httpInbound) post(t *testing.T, path, ctype string, body []byte) {
	t.Helper()
	res := serve(t, in.h, path, ctype, body, time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code, res.Body.String())
}

func (in httpInbound) command(t *testing.T, fields map[string]string) {
	v := url.Values{}
	for k, x := range fields {
		v.Set(k, x)
	}
	in.post(t, PathCommands, formType, []byte(v.Encode()))
}

func (in httpInbound) event(t *testing.T, raw []byte) {
	in.post(t, PathEvents, "application/json", raw)
}

func (in httpInbound) interaction(t *testing.T, raw []byte) {
	in.post(t, PathInteractivity, formType, []byte(url.Values{"payload": {string(raw)}}.Encode()))
}

// socketInbound is a Socket Mode server: envelopes written to out are sent
// on the open connection; acks are collected.
type socketInbound struct {
	out  chan map[string]any
	acks chan string
	seq  atomic.Int64
}

func newSocketInbound() *socketInbound {
	return &socketInbound{out: make(chan map[string]any), acks: make(chan string, 100)}
}

func (s *socketInbound) serve(c *websocket.Conn) {
	if c.WriteJSON(map[string]any{"type": "hello", "num_connections": 1}) != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			var ack struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if c.ReadJSON(&ack) != nil {
				return
			}
			s.acks <- ack.EnvelopeID
		}
	}()
	for {
		select {
		case env := <-s.out:
			if c.WriteJSON(env) != nil {
				return
			}
		case <-done:
			return
		}
	}
}

func (s *socketInbound) send(t *testing.T, typ string, payload any) {
	t.Helper()
	id := fmt.Sprintf("env-%d", s.seq.Add(1))
	select {
	case s.out <- envelope(id, typ, payload):
	case <-time.After(5 * time.Second):
		t.Fatal("socket mode connection not open")
	}
	select {
	case got := <-s.acks:
		require.Equal(t, id, got)
	case <-time.After(5 * time.Second):
		t.Fatalf("envelope %s not acked", id)
	}
}

func (s *socketInbound) command(t *testing.T, fields map[string]string) {
	s.send(t, "slash_commands", fields)
}
func (s *socketInbound) event(t *testing.T, raw []byte)       { s.send(t, "events_api", rawJSON(raw)) }
func (s *socketInbound) interaction(t *testing.T, raw []byte) { s.send(t, "interactive", rawJSON(raw)) }

func slashFields(userID, userName, text, trigger string) map[string]string {
	return map[string]string{"command": "/runbook", "text": text, "user_id": userID, "user_name": userName,
		"channel_id": "C0OPS", "channel_name": "ci-ops", "team_id": "T0OPS", "trigger_id": trigger,
		"response_url": "https://hooks.slack.com/commands/T/1/x"}
}

func reactionJSON(eventID, typ, user, emoji string, on fakeMsg) []byte {
	b, _ := json.Marshal(map[string]any{"token": "x", "team_id": "T0OPS", "type": "event_callback", "event_id": eventID,
		"event_time": time.Now().Unix(),
		"event": map[string]any{"type": typ, "user": user, "reaction": emoji, "item_user": fakeBotUserID,
			"item": map[string]any{"type": "message", "channel": on.Channel, "ts": on.TS}, "event_ts": fmt.Sprintf("%d.000100", time.Now().Unix())}})
	return b
}

func buttonJSON(trigger, userID, userName, actionID string, on fakeMsg) []byte {
	_, value := buttonValue(on, actionID)
	b, _ := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": trigger, "token": "x",
		"user":      map[string]any{"id": userID, "username": userName, "name": userName},
		"container": map[string]any{"type": "message", "message_ts": on.TS, "channel_id": on.Channel, "thread_ts": on.ThreadTS},
		"channel":   map[string]any{"id": on.Channel},
		"message":   map[string]any{"type": "message", "ts": on.TS, "thread_ts": on.ThreadTS},
		"actions":   []map[string]any{{"action_id": actionID, "block_id": "Xa1b", "type": "button", "value": value, "action_ts": fmt.Sprintf("%d.000200", time.Now().Unix())}},
	})
	return b
}

// buttonValue returns the value Slack would send back for a button.
func buttonValue(m fakeMsg, actionID string) (bool, string) {
	raw, _ := json.Marshal(m.Blocks)
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		} `json:"elements"`
	}
	_ = json.Unmarshal(raw, &blocks)
	for _, b := range blocks {
		for _, e := range b.Elements {
			if e.ActionID == actionID {
				return true, e.Value
			}
		}
	}
	return false, ""
}

// waitFor returns the first channel message (not ephemeral) matching pred.
func waitFor(t *testing.T, f *fakeSlack, what string, pred func(m fakeMsg) bool) fakeMsg {
	t.Helper()
	var found fakeMsg
	require.Eventually(t, func() bool {
		for _, m := range f.messages() {
			if !m.Ephemeral && pred(m) {
				found = m
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "waiting for %s; transcript:\n%s", what, transcript(f))
	return found
}

func hasButton(action string) func(fakeMsg) bool {
	return func(m fakeMsg) bool { ok, _ := buttonValue(m, action); return ok }
}

func hasText(s string) func(fakeMsg) bool {
	return func(m fakeMsg) bool {
		texts, _ := blockTexts(m)
		return strings.Contains(strings.Join(texts, "\n"), s)
	}
}

func transcript(f *fakeSlack) string {
	var b strings.Builder
	for _, m := range f.messages() {
		texts, actions := blockTexts(m)
		kind := "post"
		switch {
		case m.Ephemeral:
			kind = "ephemeral→" + m.User
		case m.ThreadTS != "":
			kind = "reply"
		}
		fmt.Fprintf(&b, "[%s %s upd=%d bc=%v] %s %v\n", kind, m.TS, m.Updates, m.Broadcast, strings.Join(texts, " ⏎ "), actions)
	}
	return b.String()
}

func TestE2E_RunbookWithApprovalGate(t *testing.T) {
	for _, mode := range []string{ModeHTTP, ModeSocket} {
		for _, via := range []string{"button", "reaction"} {
			t.Run(mode+"/approve by "+via, func(t *testing.T) { runE2E(t, mode, via) })
		}
	}
}

// e2eEnv is the engine, store, Concourse simulator and this adapter wired
// to a fake Slack, running until the test ends.
type e2eEnv struct {
	f   *fakeSlack
	a   *Adapter
	in  inbound
	eng *bot.Engine
	db  *store.DB
	sim *concoursesim.Server
	ctx context.Context
}

// newE2E starts an e2eEnv; setup (optional) adjusts the fake Slack and the
// adapter before anything runs.
func newE2E(t *testing.T, mode string, setup func(f *fakeSlack, a *Adapter)) *e2eEnv {
	t.Helper()
	// Concourse: w-0 stalled, w-1 running.
	world := concoursesim.NewWorld().RunningWorkers("w", 2).StalledWorker("w-0")
	sim, err := concoursesim.New(*world)
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	cc, err := concourse.New(concourse.TargetConfig{Name: "infra-prd", URL: sim.URL(), Username: "admin", Password: "admin"},
		concourse.WithHTTPClient(sim.Client()))
	require.NoError(t, err)

	// Slack.
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: mode})
	if setup != nil {
		setup(f, a)
	}
	var in inbound = httpInbound{h: a.HTTPHandler()}
	if mode == ModeSocket {
		si := newSocketInbound()
		f.setWebsocket(si.serve)
		in = si
	}

	// Engine.
	db, err := store.Open(filepath.Join(t.TempDir(), "groundcrew.db"), store.Options{})
	require.NoError(t, err)
	prov, err := concourse.NewProvider(map[string]*concourse.Client{"infra-prd": cc}, concourse.ProviderOptions{})
	require.NoError(t, err)
	reg, err := opmodel.NewRegistry(prov)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{"stalled.yaml": {Data: []byte(e2eRunbook)}}})
	require.NoError(t, err)
	eng, err := bot.New(bot.Options{
		Store: db, Chat: a, Capabilities: bot.CapabilitiesOf(db, a), Ops: reg, Library: lib, Platform: Platform, Logger: testLogger(t),
		Targets:      map[string]bot.TargetInfo{"infra-prd": {}},
		Approvals:    policy.Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}}},
		TickInterval: 50 * time.Millisecond,
	})
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	engDone, chatDone := make(chan error, 1), make(chan error, 1)
	go func() { engDone <- eng.Run(ctx) }()
	go func() { chatDone <- a.Run(ctx, loggingHandler{t, eng}) }()
	t.Cleanup(func() {
		cancel()
		for _, c := range []chan error{chatDone, engDone} {
			select {
			case err := <-c:
				assert.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Error("engine or adapter did not stop")
			}
		}
		_ = eng.WaitIdle(context.Background())
		require.NoError(t, db.Close())
	})
	require.Eventually(t, func() bool { return a.selfID() != "" }, 5*time.Second, 5*time.Millisecond)

	return &e2eEnv{f: f, a: a, in: in, eng: eng, db: db, sim: sim, ctx: ctx}
}

func runE2E(t *testing.T, mode, approveVia string) {
	env := newE2E(t, mode, nil)
	f, a, in, eng, db, sim, ctx := env.f, env.a, env.in, env.eng, env.db, env.sim, env.ctx

	// 1. alice starts the run with /runbook.
	in.command(t, slashFields("UALICE", "alice", "run stalled-worker target=infra-prd worker=w-0", "trig-start"))
	root := waitFor(t, f, "the root message", func(m fakeMsg) bool { return m.ThreadTS == "" && hasText("stalled-worker")(m) })
	assert.Equal(t, "C0OPS", root.Channel)

	// 2. The manual step waits in the thread; bob reacts ✅.
	manual := waitFor(t, f, "the manual step", hasButton("done"))
	assert.Equal(t, root.TS, manual.ThreadTS, "steps are replies in the run's thread")
	assert.True(t, hasText("ssh w-0")(manual), "manual step shows the rendered command")
	in.event(t, reactionJSON("Ev-manual", "reaction_added", "UBOB", "white_check_mark", manual))

	// 3. The forced gate opens, broadcast to the channel, with buttons.
	gate := waitFor(t, f, "the approval gate", hasButton("approve"))
	assert.Equal(t, root.TS, gate.ThreadTS)
	assert.True(t, gate.Broadcast, "approval needed is shown in the channel too")
	assert.True(t, hasText("w-0")(gate))
	_, ok := sim.Worker("w-0")
	require.True(t, ok, "nothing pruned before approval")

	// 4. alice (the requester) cannot approve her own run: refused, told why.
	in.interaction(t, buttonJSON("trig-self", "UALICE", "alice", "approve", gate))
	require.Eventually(t, func() bool {
		for _, m := range f.messages() {
			if m.Ephemeral && m.User == "UALICE" && m.ThreadTS == root.TS {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "self-approval refused to alice only, in the thread:\n%s", transcript(f))
	_, ok = sim.Worker("w-0")
	require.True(t, ok, "a refused vote does not prune")

	// 4b. A signed press naming another channel with the gate's ts is not a
	// press on the gate (a ts is unique only within its channel): refused.
	elsewhere := gate
	elsewhere.Channel = "C0RUN"
	in.interaction(t, buttonJSON("trig-elsewhere", "UCAROL", "carol", "approve", elsewhere))
	require.Eventually(t, func() bool {
		for _, m := range f.messages() {
			if m.Ephemeral && m.User == "UCAROL" && m.Channel == "C0RUN" && strings.Contains(m.Text, "not counted") {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "a press naming another channel is refused:\n%s", transcript(f))
	_, ok = sim.Worker("w-0")
	require.True(t, ok, "a press naming another channel does not prune")

	// 5. carol (in @ci-oncall) approves, with the button or ✅: the prune runs.
	if approveVia == "button" {
		in.interaction(t, buttonJSON("trig-carol", "UCAROL", "carol", "approve", gate))
	} else {
		in.event(t, reactionJSON("Ev-carol", "reaction_added", "UCAROL", "white_check_mark", gate))
	}
	require.Eventually(t, func() bool { _, ok := sim.Worker("w-0"); return !ok }, 10*time.Second, 10*time.Millisecond,
		"w-0 pruned after approval:\n%s", transcript(f))
	_, ok = sim.Worker("w-1")
	assert.True(t, ok, "only the planned worker is pruned")

	// The gate was updated in place with the decision, its buttons gone.
	require.Eventually(t, func() bool {
		m := mustMsg(f, gate.TS)
		ok, _ := buttonValue(m, "approve")
		return m.Updates > 0 && !ok && hasText("carol")(m)
	}, 10*time.Second, 10*time.Millisecond, "gate updated:\n%s", transcript(f))

	// The run finishes.
	require.Eventually(t, func() bool {
		runs, err := db.ListRuns(ctx, runmodel.RunQuery{})
		return err == nil && len(runs) == 1 && runs[0].State == runmodel.RunSucceeded
	}, 10*time.Second, 10*time.Millisecond, "run succeeded:\n%s", transcript(f))

	// The end is announced in the channel too.
	waitFor(t, f, "the final message", func(m fakeMsg) bool {
		return m.ThreadTS == root.TS && m.Broadcast && hasText("carol")(m) && m.TS > gate.TS
	})

	// 6. A redelivered event changes nothing (the engine dedupes by ID).
	require.NoError(t, eng.WaitIdle(ctx))
	before := len(f.messages())
	in.event(t, reactionJSON("Ev-manual", "reaction_added", "UBOB", "white_check_mark", manual))
	require.NoError(t, eng.WaitIdle(ctx))
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, f.messages(), before, "no new message for a duplicate event:\n%s", transcript(f))

	// 7. The thread reads back for the incident summary.
	thread, err := a.ReadThread(ctx, chatmodel.Conversation{Platform: Platform, Channel: root.Channel, Thread: root.TS})
	require.NoError(t, err)
	require.Greater(t, len(thread), 3)
	assert.True(t, thread[0].Bot)
	t.Logf("transcript (%s):\n%s", mode, transcript(f))
}

func mustMsg(f *fakeSlack, ts string) fakeMsg {
	m, _ := f.message(ts)
	return m
}

type loggingHandler struct {
	t *testing.T
	h chatmodel.Handler
}

func (l loggingHandler) Handle(ctx context.Context, e chatmodel.Event) error {
	err := l.h.Handle(ctx, e)
	l.t.Logf("event %+v -> %v", e, err)
	return err
}
