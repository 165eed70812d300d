package bot_test

import (
	"context"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

var (
	alice = chatmodel.User{ID: "U1", Name: "alice"}
	bob   = chatmodel.User{ID: "U2", Name: "bob"}
	carol = chatmodel.User{ID: "U3", Name: "carol"}
	chan1 = chatmodel.Conversation{Platform: "test", Channel: "C1"}
)

// pruneRunbook: list workers, a manual check, then prune (no approval step:
// the engine must force one).
const pruneRunbook = `
name: prune
title: Prune stalled workers
description: test runbook
params:
  - name: worker
    description: only this worker
    default: ""
    choices: workers
steps:
  - id: list
    kind: query
    title: Workers
    op: fake.workers
  - id: check
    kind: manual
    title: Check the worker
    text: "ssh {{ .params.worker }}"
    when:
      if: len(steps.list.result.stalled) > 0
      because: 'none of the {{ with .steps.list.result.workers }}{{ len . }} {{ end }}workers is stalled'
  - id: prune
    kind: action
    title: Prune
    op: fake.prune
    args:
      name: "{{ .params.worker }}"
  - id: after
    kind: query
    title: Workers after
    op: fake.workers
`

const waitRunbook = `
name: waiter
title: Wait for running
description: test
params:
  - name: worker
    required: true
steps:
  - id: wait
    kind: wait
    title: Wait for the worker
    op: fake.workers
    until: 'len(result.stalled) == 0'
    timeout: 20m
    interval: 1m
    on_timeout: fallback
  - id: done
    kind: query
    op: core.echo
    args: {message: "back"}
    goto: end
  - id: fallback
    kind: manual
    title: Restart the VM
    text: restart {{ .params.worker }}
`

const writeRunbook = `
name: toucher
title: Touch
description: test
steps:
  - id: ok
    kind: approval
    title: OK to touch?
  - id: touch
    kind: action
    op: fake.touch
    args: {name: x}
`

// teamRunbook touches something of the team it is given (a write call).
const teamRunbook = `
name: teamtouch
title: Touch a team's thing
description: test
params:
  - name: team
    choices: teams
    required: true
steps:
  - id: touch
    kind: action
    op: fake.touch
    args: {name: x, team: "{{ .params.team }}"}
`

// narrowedRunbook asks for an approval of its own, stricter than the config.
const narrowedRunbook = `
name: narrowed
title: Narrowed approval
description: test
steps:
  - id: ok
    kind: approval
    title: OK?
    approval: {approvers: [carol, "group:dba"], required: 2, expires: 10m}
  - id: after
    kind: query
    op: core.echo
    args: {message: "done"}
`

type harness struct {
	t      *testing.T
	dir    string
	db     *store.DB
	chat   *bottest.Chat
	world  *bottest.World
	clock  *bottest.Clock
	eng    *bot.Engine
	ctx    context.Context
	cancel context.CancelFunc
	opts   func(*bot.Options)
	// noResume: start does not call Resume (the test runs Engine.Run).
	noResume bool
}

func newHarness(t *testing.T, world *bottest.World, opts func(*bot.Options)) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), chat: &bottest.Chat{Users: map[string]chatmodel.User{"alice": alice, "bob": bob, "carol": carol}}, world: world,
		clock: bottest.NewClock(time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)), opts: opts}
	h.start()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) start() {
	t := h.t
	db, err := store.Open(filepath.Join(h.dir, "gc.db"), store.Options{})
	require.NoError(t, err)
	reg, err := opmodel.NewRegistry(core.Provider{}, h.world)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{
		"prune.yaml":     {Data: []byte(pruneRunbook)},
		"waiter.yaml":    {Data: []byte(waitRunbook)},
		"toucher.yaml":   {Data: []byte(writeRunbook)},
		"narrowed.yaml":  {Data: []byte(narrowedRunbook)},
		"teamtouch.yaml": {Data: []byte(teamRunbook)},
	}})
	require.NoError(t, err)
	o := bot.Options{Store: db, Chat: h.chat, Ops: reg, Library: lib, Now: h.clock.Now, Platform: "test",
		Targets: map[string]bot.TargetInfo{"infra-prd": {Vars: map[string]string{"zone": "infra-prd"}}}}
	if h.opts != nil {
		h.opts(&o)
	}
	if o.Capabilities == (bot.Capabilities{}) {
		o.Capabilities = bot.CapabilitiesOf(o.Store, o.Chat)
	}
	eng, err := bot.New(o)
	require.NoError(t, err)
	h.db, h.eng = db, eng
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if h.noResume {
		return
	}
	require.NoError(t, eng.Resume(h.ctx))
	h.idle()
}

func (h *harness) stop() {
	if h.db == nil {
		return
	}
	h.cancel()
	_ = h.eng.WaitIdle(context.Background())
	_ = h.db.Close()
	h.db = nil
}

// restart simulates a process restart on the same store file.
func (h *harness) restart() {
	h.stop()
	h.start()
}

func (h *harness) idle() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(h.t, h.eng.WaitIdle(ctx))
}

func (h *harness) cmd(u chatmodel.User, text string) {
	require.NoError(h.t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: u, Conversation: chan1, Text: text}))
	h.idle()
}

func (h *harness) react(u chatmodel.User, ref chatmodel.MessageRef, intent chatmodel.Intent) {
	require.NoError(h.t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventReaction, User: u, Message: ref, Intent: intent,
		Conversation: chatmodel.Conversation{Channel: ref.Channel, Thread: ref.Thread}}))
	h.idle()
}

func (h *harness) tick() {
	h.eng.Tick(h.ctx)
	h.idle()
}

// onlyRun returns the single run in the store.
func (h *harness) onlyRun() *runmodel.Run {
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(h.t, err)
	require.Len(h.t, runs, 1, h.chat.Transcript())
	return runs[0]
}

func (h *harness) gateRef() chatmodel.MessageRef {
	r := h.onlyRun()
	require.NotNil(h.t, r.Gate, "no open gate:\n%s", h.chat.Transcript())
	return r.Gate.Message
}

func (h *harness) stepRef(id string) chatmodel.MessageRef {
	for _, st := range h.onlyRun().Steps {
		if st.ID == id {
			return st.Message
		}
	}
	h.t.Fatalf("no step %s", id)
	return chatmodel.MessageRef{}
}
