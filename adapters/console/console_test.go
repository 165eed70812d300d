package console_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

const rb = `
name: prune
title: Prune stalled workers
description: test
steps:
  - id: list
    kind: query
    title: Workers
    op: fake.workers
  - id: check
    kind: manual
    title: Check the worker
    text: "ssh {{ .vars.zone }}"
  - id: prune
    kind: action
    title: Prune
    op: fake.prune
`

// TestConsole_ScriptedSession drives a whole run through the console as
// three users, the way the demo and `serve` with piped input do.
func TestConsole_ScriptedSession(t *testing.T) {
	world := bottest.NewWorld(map[string]string{"w-0": "stalled", "w-1": "running"})
	db, err := store.Open(filepath.Join(t.TempDir(), "gc.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	reg, err := opmodel.NewRegistry(core.Provider{}, world)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "t", FS: fstest.MapFS{"p.yaml": {Data: []byte(rb)}}})
	require.NoError(t, err)

	script := strings.Join([]string{
		"# a comment is narration",
		"/runbook run prune",
		"/as bob",
		"/react manual ✅",
		"/as alice",
		"/react gate ✅",
		"/as carol",
		":white_check_mark: gate",
		"/frobnicate",
		"/runbook lsit",
	}, "\n")
	var out bytes.Buffer
	var eng *bot.Engine
	c := console.New(console.Config{Groups: map[string][]string{"oncall": {"bob", "carol"}}}, strings.NewReader(script), &out,
		console.Options{Echo: true, AfterLine: func() { _ = eng.WaitIdle(context.Background()) }})
	eng, err = bot.New(bot.Options{Store: db, Chat: c, Capabilities: bot.CapabilitiesOf(db, c), Ops: reg, Library: lib,
		Targets:   map[string]bot.TargetInfo{"infra-prd": {Vars: map[string]string{"zone": "infra-prd"}}},
		Approvals: policy.Config{Default: runmodel.Policy{Approvers: []string{"group:oncall"}}}})
	require.NoError(t, err)
	require.NoError(t, c.Run(context.Background(), eng))
	require.NoError(t, eng.WaitIdle(context.Background()))

	got := out.String()
	for _, want := range []string{
		"# a comment is narration",
		"alice> /runbook run prune",
		"🛠 prune on `infra-prd` — started by @alice",
		"1/3 ✅ Workers — 2 workers, 1 not running",
		"ssh infra-prd",
		"[Done] [Skip] [Failed]",
		"@bob reacted :white_check_mark:",
		"Approval needed",
		"(only @alice sees this) 🚫 Your approval on",
		"you started this run",
		"Approved by @carol",
		"✅ prune on `infra-prd` finished",
		"unknown console command /frobnicate",
		"Did you mean `list`?",
	} {
		assert.Contains(t, got, want)
	}
	assert.Equal(t, 1, world.CallCount("fake.prune"))
	assert.Equal(t, "", world.State("w-0"))
}

// TestConsole_IncidentThreadSummary: people talk in a run's thread, a second
// run is started from inside it, and /runbook summary merges everything.
func TestConsole_IncidentThreadSummary(t *testing.T) {
	world := bottest.NewWorld(map[string]string{"w-0": "stalled"})
	db, err := store.Open(filepath.Join(t.TempDir(), "gc.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	reg, err := opmodel.NewRegistry(core.Provider{}, world)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "t", FS: fstest.MapFS{"p.yaml": {Data: []byte(rb)}}})
	require.NoError(t, err)
	script := strings.Join([]string{
		"/runbook run prune",
		"/thread 1",
		"/as bob",
		"looking at the worker VM now",
		"/react manual ✅",
		"/as carol",
		"/react gate ✅",
		"/runbook run prune --dry-run",
		"we are done, closing the incident",
		"/runbook summary",
	}, "\n")
	var out bytes.Buffer
	var eng *bot.Engine
	c := console.New(console.Config{}, strings.NewReader(script), &out,
		console.Options{AfterLine: func() { _ = eng.WaitIdle(context.Background()) }})
	eng, err = bot.New(bot.Options{Store: db, Chat: c, Capabilities: bot.CapabilitiesOf(db, c), Ops: reg, Library: lib, Targets: map[string]bot.TargetInfo{"infra-prd": {Vars: map[string]string{"zone": "z"}}}})
	require.NoError(t, err)
	require.NoError(t, c.Run(context.Background(), eng))
	got := out.String()
	i := strings.Index(got, "Incident summary")
	require.Positive(t, i, got)
	summary := got[i:]
	assert.Contains(t, summary, "2 runs in this thread")
	assert.Contains(t, summary, "@bob: looking at the worker VM now")
	assert.Contains(t, summary, "@carol: we are done, closing the incident")
	assert.Contains(t, summary, "started by @alice")
	assert.Contains(t, summary, "started by @carol")
	assert.Contains(t, summary, "approved by @carol")
	tl := summary[strings.Index(summary, "Timeline"):]
	assert.Less(t, strings.Index(tl, "looking at the worker"), strings.Index(tl, "approved by @carol"), "one timeline, in order")
	assert.Less(t, strings.Index(tl, "approved by @carol"), strings.Index(tl, "closing the incident"))
}

// TestConsole_EarlierSessionMessageShownOnceThenEdited: after a restart the
// engine updates messages of the previous session (a run's root, a wait
// step's poll line). The first update shows the message again; later
// updates edit that copy instead of printing one more copy each time.
func TestConsole_EarlierSessionMessageShownOnceThenEdited(t *testing.T) {
	var out bytes.Buffer
	a := console.New(console.Config{}, strings.NewReader(""), &out, console.Options{})
	old := chatmodel.MessageRef{Platform: "console", Channel: "#ops", ID: "oldsession.10"}
	ctx := context.Background()
	require.NoError(t, a.Update(ctx, old, chatmodel.Message{Text: "🛠 run r-1\nStatus: waiting\nThread below."}))
	require.NoError(t, a.Update(ctx, old, chatmodel.Message{Text: "🛠 run r-1\nStatus: running\nThread below."}))
	require.NoError(t, a.Update(ctx, old, chatmodel.Message{Text: "🛠 run r-1\nStatus: running\nThread below."}))
	assert.Equal(t, 1, strings.Count(out.String(), "Thread below."), "shown once, then edited: %s", out.String())
	assert.Contains(t, out.String(), "#1 (edited)")
	assert.Contains(t, out.String(), "Status: running")
}

// /chat down makes posts and edits fail, as a chat outage does; /chat up
// ends it (end-to-end tests of the outbox use it).
func TestConsole_ChatDownAndUp(t *testing.T) {
	var out bytes.Buffer
	a := console.New(console.Config{}, strings.NewReader("/chat down\n"), &out, console.Options{})
	ctx := context.Background()
	require.NoError(t, a.Run(ctx, nopHandler{}))
	_, err := a.Post(ctx, chatmodel.Conversation{Channel: "#ops"}, chatmodel.Message{Text: "hello"})
	assert.ErrorContains(t, err, "console chat is down")
	assert.Error(t, a.Update(ctx, chatmodel.MessageRef{Channel: "#ops", ID: "x.1"}, chatmodel.Message{Text: "hello"}))
	assert.Contains(t, out.String(), "chat is down")
}

type nopHandler struct{}

func (nopHandler) Handle(context.Context, chatmodel.Event) error { return nil }

// A message's file (a digest's chart) is written to FilesDir and its path
// printed under the message.
func TestConsole_WritesFiles(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	a := console.New(console.Config{}, strings.NewReader(""), &out, console.Options{FilesDir: dir})
	_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "#ops"}, chatmodel.Message{Text: "digest",
		Files: []chatmodel.File{{Name: "../digest-infra-prd.png", Alt: "Chart of infra-prd", Data: []byte("png")}}})
	require.NoError(t, err)
	path := filepath.Join(dir, "digest-infra-prd.png")
	data, err := os.ReadFile(path)
	require.NoError(t, err, "written in FilesDir, never outside it")
	assert.Equal(t, "png", string(data))
	assert.Contains(t, out.String(), "📎 "+path+" — Chart of infra-prd")

	// A second chart of the same name (two digests in one minute) is a
	// new file: the first message's path still shows its own chart.
	_, err = a.Post(context.Background(), chatmodel.Conversation{Channel: "#ops"}, chatmodel.Message{Text: "digest again",
		Files: []chatmodel.File{{Name: "digest-infra-prd.png", Data: []byte("png 2")}}})
	require.NoError(t, err)
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "png", string(data), "not overwritten")
	second := filepath.Join(dir, "digest-infra-prd-2.png")
	data, err = os.ReadFile(second)
	require.NoError(t, err)
	assert.Equal(t, "png 2", string(data))
	assert.Contains(t, out.String(), "📎 "+second)
}

// recorder keeps the events the console hands on.
type recorder struct{ events []chatmodel.Event }

func (r *recorder) Handle(_ context.Context, ev chatmodel.Event) error {
	r.events = append(r.events, ev)
	return nil
}

// TestConsole_EphemeralButtonsArePressable: the ▶ Run button of
// `/runbook show` comes in an ephemeral message; the console numbers it so
// /press finds it, for the person it was shown to only, and a thread
// summary does not read it back.
func TestConsole_EphemeralButtonsArePressable(t *testing.T) {
	var out bytes.Buffer
	a := console.New(console.Config{}, strings.NewReader("/as bob\n/press 1 run\n/as alice\n/press 1 run\n"), &out, console.Options{})
	ctx := context.Background()
	alice := chatmodel.User{ID: "alice", Name: "alice"}
	require.NoError(t, a.Ephemeral(ctx, chatmodel.Conversation{Channel: "#ops"}, alice, chatmodel.Message{Text: "pause-pipeline — Pause a pipeline",
		Buttons: []chatmodel.Button{{Action: chatmodel.IntentRun, Label: "▶ Run", Value: "pause-pipeline"}}}))
	rec := &recorder{}
	require.NoError(t, a.Run(ctx, rec))
	assert.Contains(t, out.String(), "(only @alice sees this) #1 pause-pipeline — Pause a pipeline")
	assert.Contains(t, out.String(), "[▶ Run]  (/press 1 run)")
	assert.Contains(t, out.String(), "message #1 is shown to @alice only")
	require.Len(t, rec.events, 1, "bob's press is refused, alice's handed on")
	ev := rec.events[0]
	assert.Equal(t, chatmodel.EventButton, ev.Kind)
	assert.Equal(t, chatmodel.IntentRun, ev.Intent)
	assert.Equal(t, "pause-pipeline", ev.Value)
	assert.Equal(t, "alice", ev.User.Name)

	msgs, err := a.ReadThread(ctx, chatmodel.Conversation{Channel: "#ops", Thread: ev.Message.ID})
	require.NoError(t, err)
	assert.Empty(t, msgs, "an ephemeral message is no part of a thread")
}
