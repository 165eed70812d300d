package incident_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// starter records the run requests the incident package hands the engine.
type starter struct {
	mu     sync.Mutex
	events []runmodel.StartRequest
	// runs, when set, records a run for every request, as the engine
	// does when it starts one; refuse makes it refuse them (a *UserError).
	runs   *store.DB
	refuse bool
}

func (s *starter) StartRun(ctx context.Context, req runmodel.StartRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, req)
	if s.refuse {
		return &chatmodel.UserError{Msg: "You may not run `worker-disk-full` on `infra-prd`."}
	}
	if s.runs != nil {
		r := &runmodel.Run{ID: fmt.Sprintf("r-%d", len(s.events)), Runbook: req.Runbook, Target: req.Target, State: runmodel.RunRunning,
			Requester: req.User, Conversation: req.Thread, CreatedAt: req.Time}
		return s.runs.CreateRun(ctx, r, &runmodel.Batch{})
	}
	return nil
}

// passed records the events the incident handler hands on to the engine.
type passed struct {
	mu     sync.Mutex
	events []chatmodel.Event
}

func (p *passed) Handle(_ context.Context, e chatmodel.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, e)
	return nil
}

type fixture struct {
	out   *delivery.Outbox
	m     *incident.Manager
	h     *incident.Handler
	chat  *bottest.Chat
	clock *bottest.Clock
	db    *store.DB
	start *starter
	next  *passed
	// eng is an engine whose Commands are h, as serve wires them: the
	// commands of these tests go through the engine's one parser.
	eng  *bot.Engine
	path string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{chat: &bottest.Chat{}, clock: bottest.NewClock(time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)),
		start: &starter{}, next: &passed{}, path: filepath.Join(t.TempDir(), "gc.db")}
	f.open(t)
	return f
}

func (f *fixture) open(t *testing.T) {
	t.Helper()
	db, err := store.Open(f.path, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	f.db = db
	// The outbox on the wall clock, edits not held back: these tests read
	// what was posted at once (the storm test coalesces).
	f.out = delivery.New(delivery.Options{Chat: f.chat, EditEvery: time.Nanosecond, ProbeEvery: time.Nanosecond})
	f.m, err = incident.New(incident.Options{Store: db, Chat: f.chat, Outbox: f.out, Starter: f.start, Runs: db, Audit: db,
		Platform: "slack", Targets: []string{"infra-prd", "infra-dev"}, Now: f.clock.Now})
	require.NoError(t, err)
	f.h = &incident.Handler{M: f.m, Next: f.next}
	reg, err := opmodel.NewRegistry()
	require.NoError(t, err)
	f.eng, err = bot.New(bot.Options{Store: db, Chat: f.chat, Capabilities: bot.CapabilitiesOf(db, f.chat), Ops: reg, Library: noRunbooks{},
		Platform: "slack", Now: f.clock.Now, Commands: f.h})
	require.NoError(t, err)
}

func diskSignal(firing bool, evidence ...string) incident.Signal {
	return incident.Signal{Key: "alert:{}:{alertname=\"FileSystemSpaceFillingUp\"}", Firing: firing,
		Source: incident.Source{Kind: incident.SourceAlert, Name: "routes[0]"}, Title: "FileSystemSpaceFillingUp",
		Target: "infra-prd", Channel: "#ci-ops", Runbook: "worker-disk-full", Params: map[string]string{"worker": "0"},
		Evidence: evidence}
}

func TestSignalOpensOneIncidentAndResolves(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in, err := f.m.Signal(ctx, diskSignal(true, "`worker-0` /opt/concourse/worker 8% left"))
	require.NoError(t, err)
	require.NotNil(t, in)
	assert.Equal(t, incident.StateOpen, in.State)
	assert.False(t, in.Root.IsZero(), "the root message is recorded")
	root, ok := f.chat.Find("incident `" + in.ID + "`")
	require.True(t, ok)
	assert.Equal(t, "#ci-ops", root.To.Channel)
	assert.Contains(t, root.Msg.Text, "`/runbook run worker-disk-full target=infra-prd worker=0`")
	var actions []chatmodel.Intent
	for _, b := range root.Msg.Buttons {
		actions = append(actions, b.Action)
	}
	assert.Equal(t, []chatmodel.Intent{incident.ActionAck, incident.ActionRun}, actions)
	assert.Empty(t, f.start.events, "nothing starts by itself")

	// Re-notifications (Alertmanager's repeat_interval) update, never duplicate.
	for range 5 {
		f.clock.Advance(time.Minute)
		again, err := f.m.Signal(ctx, diskSignal(true, "`worker-0` /opt/concourse/worker 8% left"))
		require.NoError(t, err)
		assert.Equal(t, in.ID, again.ID)
	}
	// A changed group posts what changed in the thread.
	again, err := f.m.Signal(ctx, diskSignal(true, "`worker-0` /opt/concourse/worker 8% left", "`worker-1` /opt/concourse/worker 9% left"))
	require.NoError(t, err)
	assert.Equal(t, in.ID, again.ID)
	changed, ok := f.chat.Find("🔁 Changed")
	require.True(t, ok)
	assert.Equal(t, in.Root.ID, changed.To.Thread)
	assert.Equal(t, "🔁 Changed: 1 new\n• `worker-1` /opt/concourse/worker 9% left  🆕\n1 other still firing — the incident message lists them all", changed.Msg.Text)

	roots := 0
	for _, p := range f.chat.Posts() {
		if p.To.Thread == "" {
			roots++
		}
	}
	assert.Equal(t, 1, roots, "one incident thread")

	f.clock.Advance(20 * time.Minute)
	res, err := f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	assert.Equal(t, incident.StateResolved, res.State)
	msg, ok := f.chat.Find("✅ Resolved after 25 min")
	require.True(t, ok, f.chat.Transcript())
	assert.Equal(t, in.Root.ID, msg.To.Thread)
	root, _ = f.chat.Find("incident `" + in.ID + "`")
	assert.Contains(t, root.Msg.Text, "resolved at 04:25 UTC after 25 min")
	assert.Empty(t, root.Msg.Buttons)
	open, err := f.m.Open(ctx)
	require.NoError(t, err)
	assert.Empty(t, open)

	// Resolving again is a no-op; firing within the reopen window reuses the thread.
	_, err = f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	f.clock.Advance(10 * time.Minute)
	re, err := f.m.Signal(ctx, diskSignal(true, "`worker-0` /opt/concourse/worker 7% left"))
	require.NoError(t, err)
	assert.Equal(t, in.ID, re.ID)
	assert.Equal(t, incident.StateOpen, re.State)
	// Much later it is a new incident.
	_, err = f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	f.clock.Advance(2 * time.Hour)
	fresh, err := f.m.Signal(ctx, diskSignal(true, "`worker-0` /opt/concourse/worker 7% left"))
	require.NoError(t, err)
	assert.NotEqual(t, in.ID, fresh.ID)

	audit, err := f.db.AuditEntries(ctx, "")
	require.NoError(t, err)
	var acts []string
	for _, a := range audit {
		acts = append(acts, string(a.Action))
	}
	assert.Contains(t, acts, "incident_opened")
	assert.Contains(t, acts, "incident_resolved")
}

func TestIncidentSurvivesRestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	require.NoError(t, f.db.Close())
	f.open(t)
	again, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	assert.Equal(t, in.ID, again.ID)
	assert.Equal(t, 2, again.Notifications)
	open, err := f.m.Open(ctx)
	require.NoError(t, err)
	require.Len(t, open, 1)
}

func TestConcurrentNotificationsOneIncident(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := f.m.Signal(ctx, diskSignal(true, "a"))
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	all, err := f.db.ListIncidents(ctx, incident.Query{})
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, 20, all[0].Notifications)
}

// A post that fails waits in the outbox and goes out at its next flush;
// the incident records its message then, and a later signal edits it
// rather than posting a second root.
func TestChatDownThenPostedFromTheOutbox(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.chat.FailPosts = 1
	// More alerts than the root shows: the 🔔 Firing reply lists the others.
	ev := []string{"a1", "a2", "a3", "a4", "a5", "a6"}
	in, err := f.m.Signal(ctx, diskSignal(true, ev...))
	require.NoError(t, err, "the incident is stored even when chat is down")
	assert.True(t, in.Root.IsZero())
	assert.NotEmpty(t, in.RootPending)
	f.out.Flush(ctx)
	got, err := f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.False(t, got.Root.IsZero(), "the root's reference is recorded when it goes out")
	again, err := f.m.Signal(ctx, diskSignal(true, ev...))
	require.NoError(t, err)
	assert.Equal(t, got.Root, again.Root)
	f.out.Flush(ctx)
	roots := 0
	for _, p := range f.chat.Posts() {
		if p.To.Thread == "" {
			roots++
		}
	}
	assert.Equal(t, 1, roots)
	firing, ok := f.chat.Find("🔔 Firing")
	require.True(t, ok)
	assert.Equal(t, got.Root.ID, firing.To.Thread, "the reply went into the thread once the root was out")
	assert.Equal(t, "🔔 Firing: the other 1 (the incident message shows the first 5)\n• a6", firing.Msg.Text)
}

func rootEvent(in *incident.Incident) chatmodel.MessageRef { return in.Root }

func TestAcknowledgeByReactionButtonAndCommand(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	bob := chatmodel.User{ID: "U2", Name: "bob"}

	// Other reactions go to the engine.
	require.NoError(t, f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventReaction, User: bob, Intent: chatmodel.IntentApprove, Message: rootEvent(in)}))
	assert.Len(t, f.next.events, 1)

	require.NoError(t, f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventReaction, User: bob, Intent: chatmodel.IntentAcknowledge, Message: rootEvent(in)}))
	got, err := f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.Equal(t, incident.StateAcknowledged, got.State)
	assert.Equal(t, "U2", got.AckedBy.ID)
	root, _ := f.chat.Find("incident `" + in.ID + "`")
	assert.Contains(t, root.Msg.Text, "acknowledged by @bob")
	_, ok := f.chat.Find("👀 @bob acknowledged")
	assert.True(t, ok)

	carol := chatmodel.User{ID: "U3", Name: "carol"}
	require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: carol, Text: "incidents ack " + in.ID}))
	assert.Contains(t, strings.Join(f.chat.Ephemerals("U3"), "\n"), "already acknowledged by @bob")

	require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: carol, Text: "incidents"}))
	list := f.chat.Ephemerals("U3")
	assert.Contains(t, list[len(list)-1], "`"+in.ID+"` FileSystemSpaceFillingUp on `infra-prd` — acknowledged by @bob")

	// The handler in front of the engine reads no command: the engine's
	// parser hands it `/runbook incidents …` back (RunCommand).
	n := len(f.chat.Ephemerals("U3"))
	require.NoError(t, f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: carol, Text: "incidents"}))
	assert.Len(t, f.chat.Ephemerals("U3"), n, "not answered by the handler")
	require.NotEmpty(t, f.next.events)
	assert.Equal(t, "incidents", f.next.events[len(f.next.events)-1].Text, "handed on to the engine as it came")
}

func TestRunButtonStartsTheSuggestedRunInTheThread(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	bob := chatmodel.User{ID: "U2", Name: "bob"}
	// The engine refuses the press (bob may not run it): not acknowledged.
	f.start.runs, f.start.refuse = f.db, true
	require.NoError(t, f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventButton, ID: "slack:action:0", User: bob, Intent: incident.ActionRun, Value: in.ID, Message: in.Root}))
	got, _ := f.db.GetIncident(ctx, in.ID)
	assert.Equal(t, incident.StateOpen, got.State, "a press that started no run does not acknowledge")
	f.start.events, f.start.refuse = nil, false
	require.NoError(t, f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventButton, ID: "slack:action:1", User: bob, Intent: incident.ActionRun, Value: in.ID, Message: in.Root}))
	require.Len(t, f.start.events, 1)
	ev := f.start.events[0]
	assert.Equal(t, runmodel.StartRequest{Runbook: "worker-disk-full", Target: "infra-prd", Params: map[string]string{"worker": "0"},
		Thread: in.Thread(), User: bob, EventID: "slack:action:1/run", Time: ev.Time, AlertInstance: ev.AlertInstance}, ev,
		"a typed request: no --dry-run, no approval (the engine gates as always); a redelivered press is dropped by the engine")
	got, _ = f.db.GetIncident(ctx, in.ID)
	assert.Equal(t, incident.StateAcknowledged, got.State, "starting the runbook acknowledges")
}

func TestAutostartReadOnlyIsADryRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := diskSignal(true, "a")
	s.Autostart = true
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	_, err = f.m.Signal(ctx, s)
	require.NoError(t, err)
	f.m.Wait() // it starts in the background: the signal never waits for it
	require.Len(t, f.start.events, 1, "autostart once per incident")
	ev := f.start.events[0]
	assert.Equal(t, "worker-disk-full", ev.Runbook)
	assert.Equal(t, map[string]string{"worker": "0"}, ev.Params)
	assert.True(t, ev.DryRun, "autostart is a dry run")
	assert.Equal(t, incident.BotUser, ev.User)
	assert.Equal(t, in.Root.ID, ev.Thread.Thread)
}

// silencer is Alertmanager's silence and alert API: silences it created,
// expired, and how many alerts fire.
type silencer struct {
	mu      sync.Mutex
	got     map[string]string
	n       int
	expired []string
	firing  int
	err     error
	// expireErr, when set, is what Expire answers.
	expireErr error
}

func (s *silencer) Silence(_ context.Context, m map[string]string, d time.Duration, by, _ string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = m
	s.n++
	return fmt.Sprintf("sil-%d", s.n), nil
}

func (s *silencer) Expire(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expireErr != nil {
		return s.expireErr
	}
	s.expired = append(s.expired, id)
	return nil
}

func (s *silencer) Firing(context.Context, map[string]string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firing, s.err
}

func TestSilenceButton(t *testing.T) {
	f := newFixture(t)
	sil := &silencer{}
	var err error
	f.m, err = incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Silencer: sil, Platform: "slack", Now: f.clock.Now})
	require.NoError(t, err)
	f.h = &incident.Handler{M: f.m, Next: f.next}
	ctx := context.Background()
	s := diskSignal(true, "a")
	s.Silence = map[string]string{"alertname": "FileSystemSpaceFillingUp"}
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	root, _ := f.chat.Find("incident `" + in.ID + "`")
	assert.Equal(t, incident.ActionSilence, root.Msg.Buttons[len(root.Msg.Buttons)-1].Action)
	require.NoError(t, f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventButton, User: chatmodel.User{ID: "U2", Name: "bob"}, Intent: incident.ActionSilence, Value: in.ID}))
	assert.Equal(t, s.Silence, sil.got)
	_, ok := f.chat.Find("🔕 @bob silenced these alerts for 1 h (until 05:00 UTC)")
	assert.True(t, ok)
}

func (f *fixture) press(t *testing.T, who chatmodel.User, action chatmodel.Intent, id string) {
	t.Helper()
	require.NoError(t, f.h.Handle(context.Background(), chatmodel.Event{Kind: chatmodel.EventButton, User: who, Intent: action, Value: id}))
}

func (f *fixture) root(t *testing.T, id string) chatmodel.Message {
	t.Helper()
	p, ok := f.chat.Find("incident `" + id + "`")
	require.True(t, ok)
	return p.Msg
}

func actions(m chatmodel.Message) []chatmodel.Intent {
	var out []chatmodel.Intent
	for _, b := range m.Buttons {
		out = append(out, b.Action)
	}
	return out
}

// TestOneSilencePerIncident: the 🔕 button pressed twice made two
// identical silences, "silenced" twice in the timeline, the button stayed
// and the status never said silenced. Now: one silence, the status says
// until when and by whom, the button becomes "Expire silence", which
// deletes it in Alertmanager and says who did.
func TestOneSilencePerIncident(t *testing.T) {
	f := newFixture(t)
	sil := &silencer{firing: 2}
	var err error
	f.m, err = incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Silencer: sil, Platform: "slack", Now: f.clock.Now})
	require.NoError(t, err)
	f.h = &incident.Handler{M: f.m, Next: f.next}
	ctx := context.Background()
	s := diskSignal(true, "a")
	s.Silence = map[string]string{"alertname": "FileSystemSpaceFillingUp"}
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	carol, bob := chatmodel.User{ID: "U3", Name: "carol"}, chatmodel.User{ID: "U2", Name: "bob"}
	f.clock.Advance(12 * time.Minute)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); f.press(t, carol, incident.ActionSilence, in.ID) }()
	}
	wg.Wait()
	f.press(t, bob, incident.ActionSilence, in.ID)
	assert.Equal(t, 1, sil.n, "one silence however often the button is pressed")
	assert.Contains(t, strings.Join(f.chat.Ephemerals("U2"), "\n"), "is already silenced until 05:12 UTC by @carol (silence `sil-1`)")
	root := f.root(t, in.ID)
	assert.Contains(t, root.Text, "🔕 silenced until 05:12 UTC by @carol")
	assert.Contains(t, actions(root), incident.ActionUnsilence)
	assert.NotContains(t, actions(root), incident.ActionSilence)
	got, err := f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(f.m.TimelineText(got), "silenced for"))

	f.press(t, bob, incident.ActionUnsilence, in.ID)
	assert.Equal(t, []string{"sil-1"}, sil.expired)
	root = f.root(t, in.ID)
	assert.NotContains(t, root.Text, "silenced until")
	assert.Contains(t, actions(root), incident.ActionSilence)
	_, ok := f.chat.Find("🔔 @bob expired the silence `sil-1`")
	assert.True(t, ok)
	got, err = f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.Contains(t, f.m.TimelineText(got), "unsilenced — @bob expired the silence")
	// A new silence can be made again.
	f.press(t, bob, incident.ActionSilence, in.ID)
	assert.Equal(t, 2, sil.n)
}

// TestSilencedIncidentResolvesAndReopens: Alertmanager sends no resolve
// for muted alerts, so a silenced incident stayed open 11+ minutes after
// its alerts resolved. While silenced, groundcrew asks Alertmanager and
// resolves the incident when its alerts are gone; when the silence ends
// and they still fire, the incident is open again.
func TestSilencedIncidentResolvesAndReopens(t *testing.T) {
	f := newFixture(t)
	sil := &silencer{firing: 2}
	var err error
	f.m, err = incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Silencer: sil, Platform: "slack", Now: f.clock.Now})
	require.NoError(t, err)
	f.h = &incident.Handler{M: f.m, Next: f.next}
	ctx := context.Background()
	s := diskSignal(true, "a")
	s.Silence = map[string]string{"alertname": "FileSystemSpaceFillingUp"}
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	bob := chatmodel.User{ID: "U2", Name: "bob"}
	_, _, err = f.m.Acknowledge(ctx, in.ID, bob, "reaction")
	require.NoError(t, err)
	f.press(t, bob, incident.ActionSilence, in.ID)

	// Still firing, silence running: nothing changes.
	f.clock.Advance(10 * time.Minute)
	require.NoError(t, f.m.CheckSilences(ctx))
	got, _ := f.db.GetIncident(ctx, in.ID)
	assert.Equal(t, incident.StateAcknowledged, got.State)
	// Alertmanager unreachable: nothing changes, the error is returned.
	sil.err = fmt.Errorf("connection refused")
	assert.Error(t, f.m.CheckSilences(ctx))
	got, _ = f.db.GetIncident(ctx, in.ID)
	assert.Equal(t, incident.StateAcknowledged, got.State)
	sil.err = nil

	// The silence ends (1 h), the alerts still fire: open again.
	f.clock.Advance(51 * time.Minute)
	require.NoError(t, f.m.CheckSilences(ctx))
	got, _ = f.db.GetIncident(ctx, in.ID)
	assert.Equal(t, incident.StateOpen, got.State, "open again: it needs a person")
	assert.Empty(t, got.SilenceID)
	assert.Contains(t, f.m.TimelineText(got), "reopened — the silence ended and 2 alerts still fire")
	_, ok := f.chat.Find("🔔 The silence ended and 2 alerts still fire: the incident is open again.")
	assert.True(t, ok)
	assert.Contains(t, actions(f.root(t, in.ID)), incident.ActionSilence)
	require.NoError(t, f.m.CheckSilences(ctx))
	assert.Equal(t, 1, strings.Count(f.m.TimelineText(got), "silence ended"), "said once")

	// Silenced again; the alerts resolve while it lasts: resolved.
	f.press(t, bob, incident.ActionSilence, in.ID)
	sil.firing = 0
	f.clock.Advance(2 * time.Minute)
	require.NoError(t, f.m.CheckSilences(ctx))
	f.m.Wait() // the silence is expired in the background
	got, _ = f.db.GetIncident(ctx, in.ID)
	assert.Equal(t, incident.StateResolved, got.State)
	assert.Empty(t, got.SilenceID)
	assert.Equal(t, []string{"sil-2"}, sil.expired, "the silence ends with the incident")
	res, ok := f.chat.Find("✅ Resolved after")
	require.True(t, ok)
	assert.Contains(t, res.Msg.Text, "Alertmanager has no firing alert for it any more")
	_, ok = f.chat.Find("🔔 Silence `sil-2` expired with the incident: Alertmanager notifies again if these alerts fire.")
	assert.True(t, ok, "said in the thread")
}

// noRunbooks is an engine library without runbooks.
type noRunbooks struct{}

func (noRunbooks) Get(string) (*runbookmodel.Runbook, bool) { return nil, false }
func (noRunbooks) List() []*runbookmodel.Runbook            { return nil }
func (noRunbooks) BrokenList() []runbooks.Broken            { return nil }
func (noRunbooks) Broken(string) (runbooks.Broken, bool)    { return runbooks.Broken{}, false }

// TestSummaryInTheIncidentThreadIsOneTimeline: `/runbook summary` in an
// incident's thread, answered by the real engine, is ONE message headed by
// the incident, its own entries merged by time with the people's messages.
func TestSummaryInTheIncidentThreadIsOneTimelineAndHelpMentionsIncidents(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	reg, err := opmodel.NewRegistry()
	require.NoError(t, err)
	h := &incident.Handler{M: f.m}
	carol := chatmodel.ThreadMessage{Time: f.clock.Now().Add(3 * time.Minute), Author: chatmodel.User{ID: "U3", Name: "carol"}, Text: "df says 8% left"}
	chat := &threadChat{Chat: f.chat, msgs: []chatmodel.ThreadMessage{carol}}
	eng, err := bot.New(bot.Options{Store: f.db, Chat: chat, Capabilities: bot.CapabilitiesOf(f.db, chat), Ops: reg, Library: noRunbooks{}, Platform: "slack", Now: f.clock.Now, Threads: h, Commands: h})
	require.NoError(t, err)
	h.Next = eng
	in, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	bob := chatmodel.User{ID: "U2", Name: "bob"}
	require.NoError(t, h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventReaction, Intent: chatmodel.IntentAcknowledge, User: bob, Message: in.Root}))
	f.clock.Advance(7 * time.Minute)
	_, err = f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)

	before := len(f.chat.Posts())
	require.NoError(t, h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Text: "summary", Conversation: in.Thread()}))
	posts := f.chat.Posts()[before:]
	require.Len(t, posts, 1, "one summary, not the engine's and then the incident's")
	sum := posts[0]
	assert.Equal(t, in.Root.ID, sum.To.Thread)
	assert.True(t, strings.HasPrefix(sum.Msg.Text, "📋 *Incident summary* — ✅ incident `"+in.ID+"` FileSystemSpaceFillingUp on `infra-prd`: resolved after 7 min · acknowledged by @bob\n"), sum.Msg.Text)
	assert.Contains(t, sum.Msg.Text, "Source: Alertmanager (routes[0])")
	assert.Contains(t, sum.Msg.Text, "no runs in this thread yet")
	assert.Empty(t, f.chat.Ephemerals("U2"), "no 'nothing to summarise'")
	assert.Equal(t, "Timeline (UTC):\n"+
		"04:00 🚨 opened — FileSystemSpaceFillingUp\n"+
		"04:00 👀 acknowledged — @bob acknowledged (reaction)\n"+
		"04:03 @carol: df says 8% left\n"+
		"04:07 ✅ resolved — resolved after 7 min", sum.Msg.Detail)

	// A summary elsewhere is the engine's alone.
	before = len(f.chat.Posts())
	require.NoError(t, h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Text: "summary", Conversation: chatmodel.Conversation{Platform: "slack", Channel: "#x", Thread: "other"}}))
	posts = f.chat.Posts()[before:]
	require.Len(t, posts, 1)
	assert.NotContains(t, posts[0].Msg.Text, in.ID, "another thread's summary is the engine's alone")

	require.NoError(t, h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Text: "incidents show " + in.ID}))
	eph := f.chat.Ephemerals("U2")
	assert.Contains(t, eph[len(eph)-1], "04:07 resolved — resolved after 7 min", "Slack cannot type commands in threads: show names the incident")

	require.NoError(t, h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Text: "help"}))
	eph = f.chat.Ephemerals("U2")
	assert.Contains(t, eph[len(eph)-1], "• `/runbook incidents [unacked] [target=<target>] [all] [page <n>]` — the open incidents")
	assert.Contains(t, eph[len(eph)-1], "• `/runbook incidents ack <incident>` — acknowledge an incident")

	// The engine's parser reads the incidents' command: its usage, its
	// aliases, a typo of it.
	for text, want := range map[string]string{
		"incidents show":                "Usage: `/runbook incidents show <incident>`",
		"INCIDENT SHOW " + in.ID:        "`" + in.ID + "`",
		"incidnets":                     "Did you mean `incidents`?",
		`incidents ack "` + in.ID + `"`: "already resolved",
	} {
		require.NoError(t, h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Text: text}))
		eph = f.chat.Ephemerals("U2")
		assert.Contains(t, eph[len(eph)-1], want, text)
	}
}

// threadChat reads back the people's messages of a thread.
type threadChat struct {
	*bottest.Chat
	msgs []chatmodel.ThreadMessage
}

func (c *threadChat) ReadThread(context.Context, chatmodel.Conversation) ([]chatmodel.ThreadMessage, error) {
	return c.msgs, nil
}

// TestThreadNotesMergeWithRunsAndMessages: the incident's items and
// heading go through the engine's summary builder with a run and a
// person's message, in time order.
func TestThreadNotesMergeWithRunsAndMessages(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	in, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	notes, ok := f.h.ThreadNotes(ctx, in.Thread())
	require.True(t, ok)
	_, ok = f.h.ThreadNotes(ctx, chatmodel.Conversation{Platform: "slack", Channel: "#ci-ops", Thread: "nope"})
	assert.False(t, ok)
	for _, it := range notes.Items {
		assert.Equal(t, "incident", it.From)
	}
	reg, err := opmodel.NewRegistry()
	require.NoError(t, err)
	eng, err := bot.New(bot.Options{Store: f.db, Chat: f.chat, Capabilities: bot.CapabilitiesOf(f.db, f.chat), Ops: reg, Library: noRunbooks{}, Now: f.clock.Now})
	require.NoError(t, err)
	t0 := f.clock.Now()
	r := &runmodel.Run{ID: "r-1", Runbook: "worker-disk-full", Target: "infra-prd", State: runmodel.RunSucceeded, Requester: chatmodel.User{ID: "U2", Name: "bob"}, CreatedAt: t0.Add(2 * time.Minute)}
	j := map[string][]runmodel.JournalEntry{"r-1": {{Type: runmodel.JRunStarted, Time: t0.Add(2 * time.Minute)}}}
	msgs := []chatmodel.ThreadMessage{{Time: t0.Add(time.Minute), Author: chatmodel.User{ID: "U3", Name: "carol"}, Text: "looking"}}
	m := eng.IncidentSummary([]*runmodel.Run{r}, j, msgs, &notes)
	assert.Contains(t, m.Text, "🚨 incident `"+in.ID+"` FileSystemSpaceFillingUp on `infra-prd`: open for 0 s, not acknowledged")
	assert.Contains(t, m.Text, "1 run in this thread: `r-1` worker-disk-full")
	assert.Equal(t, "Timeline (UTC):\n04:00 🚨 opened — FileSystemSpaceFillingUp\n04:01 @carol: looking\n04:02 ▶ `r-1` worker-disk-full started by @bob", m.Detail)
}

type countingSilencer = silencer

func TestRedeliveredPressIsDroppedAndOpenIncidentsAreRewatched(t *testing.T) {
	f := newFixture(t)
	sil := &countingSilencer{}
	wc := &bottest.WatchingChat{Chat: f.chat}
	m, err := incident.New(incident.Options{Store: f.db, Chat: wc, Silencer: sil, Dedupe: f.db, Platform: "slack", Now: f.clock.Now})
	require.NoError(t, err)
	h := &incident.Handler{M: m, Next: f.next}
	ctx := context.Background()
	s := diskSignal(true, "a")
	s.Silence = map[string]string{"alertname": "X"}
	in, err := m.Signal(ctx, s)
	require.NoError(t, err)
	press := chatmodel.Event{Kind: chatmodel.EventButton, ID: "slack:action:U2:1.5", User: chatmodel.User{ID: "U2", Name: "bob"}, Intent: incident.ActionSilence, Value: in.ID}
	require.NoError(t, h.Handle(ctx, press))
	require.NoError(t, h.Handle(ctx, press))
	assert.Equal(t, 1, sil.n, "one silence for one press, however often it is delivered")

	require.NoError(t, m.Rewatch(ctx))
	assert.Equal(t, []chatmodel.MessageRef{in.Root}, wc.Watched())
}

// TestListShowsWhatNeedsAPersonFirst: with 25 open and the 9 oldest
// acknowledged, the list starts with the oldest nobody acknowledged, says
// the counts by state, pages with a hint that works, filters, and takes
// incident ids in any case.
func TestListShowsWhatNeedsAPersonFirst(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ids []string
	for i := range 25 {
		s := diskSignal(true, "a")
		s.Key = fmt.Sprintf("k%d", i)
		if i%5 == 4 {
			s.Target = "ocb-example-client"
		}
		in, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		ids = append(ids, in.ID)
		f.clock.Advance(time.Minute)
	}
	carol := chatmodel.User{ID: "U3", Name: "carol"}
	for _, id := range ids[:9] {
		// Typed as people copy them from a phone: upper case.
		require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: carol, Text: "incidents ack " + strings.ToUpper(id)}))
	}
	assert.Empty(t, f.chat.Ephemerals("U3"), "every ack found its incident")
	list := func(args string) string {
		n := len(f.chat.Ephemerals("U9"))
		require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: "U9"}, Text: strings.TrimSpace("incidents " + args)}))
		got := f.chat.Ephemerals("U9")
		require.Len(t, got, n+1)
		return got[n]
	}
	first := list("")
	assert.Contains(t, first, "*Open incidents* (25): 16 not acknowledged · 9 acknowledged")
	assert.Equal(t, 16, strings.Count(first, "🚨 `i-"))
	assert.Equal(t, 4, strings.Count(first, "👀 `i-"))
	assert.Less(t, strings.Index(first, ids[9]), strings.Index(first, ids[10]), "oldest first")
	assert.Less(t, strings.Index(first, ids[24]), strings.Index(first, ids[0]), "the unacknowledged come before the acknowledged")
	assert.NotContains(t, first, ids[5], "the newest acknowledged are on page 2")
	assert.Contains(t, first, "Page 1 of 2 (1–20 of 25). Next: `/runbook incidents page 2`")

	second := list("page 2")
	assert.Equal(t, 5, strings.Count(second, "👀 `i-"))
	assert.Contains(t, second, ids[8])
	assert.NotContains(t, second, "Next:")
	past := list("page 9")
	assert.Contains(t, past, "There is no page 9 (2 pages); showing the last one.")
	assert.Contains(t, past, "Page 2 of 2")

	unacked := list("unacked")
	assert.Contains(t, unacked, "Showing `unacked`: 16 incidents")
	assert.NotContains(t, unacked, "👀 `i-")
	assert.NotContains(t, unacked, "Page ")

	ocb := list("unacked target=ocb-example-client")
	assert.Contains(t, ocb, "Showing `unacked target=ocb-example-client`: 4 incidents")

	bad := list("everything")
	assert.Contains(t, bad, `"everything" is not a filter`)

	_, err := f.m.Signal(ctx, func() incident.Signal { s := diskSignal(false); s.Key = "k0"; return s }())
	require.NoError(t, err)
	all := list("all page 2")
	assert.Contains(t, all, "✅ `"+ids[0]+"`", "all lists the resolved ones last")
	assert.Contains(t, all, "Page 2 of 2")

	require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: carol, Text: "incidents show " + strings.ToUpper(ids[3])}))
	assert.Contains(t, f.chat.Ephemerals("U3")[0], "`"+ids[3]+"`")
}

// Alert labels and annotations are outside input: what reaches a channel
// must not carry bidi overrides or zero-width characters raw.
func TestAlertTextIsSanitizedBeforePosting(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := diskSignal(true, "`worker-0` disk\u202efull\u200b 8% left")
	s.Title = "FileSystem\u202eSpaceFillingUp"
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	require.NotNil(t, in)
	_, err = f.m.Signal(ctx, diskSignal(true, "`worker-0` \u202e5% left"))
	require.NoError(t, err)
	posted := f.chat.Posts()
	require.NotEmpty(t, posted)
	for _, p := range posted {
		for _, m := range append([]chatmodel.Message{p.Msg}, p.History...) {
			assert.NotContains(t, m.Text, "\u202e")
			assert.NotContains(t, m.Text, "\u200b")
			assert.NotContains(t, m.Detail, "\u202e")
		}
	}
}

// TestEmptyParamIsAPlaceholderNotDropped: a parameter the source could not
// fill (an alert's instance without a worker number) stays in the
// suggestion as a placeholder, the Run button is not offered and a press
// of an older button starts nothing: a run without worker= would act on
// the stalled worker, not the one that alerted.
func TestEmptyParamIsAPlaceholderNotDropped(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := diskSignal(true, "`instance=10.0.4.17:9100` disk full")
	sig.Params = map[string]string{"worker": ""}
	in, err := f.m.Signal(ctx, sig)
	require.NoError(t, err)
	root, ok := f.chat.Find("incident `" + in.ID + "`")
	require.True(t, ok)
	assert.Contains(t, root.Msg.Text, "`/runbook run worker-disk-full target=infra-prd worker=<worker>`")
	for _, b := range root.Msg.Buttons {
		assert.NotEqual(t, incident.ActionRun, b.Action, "no Run button for an incomplete command")
	}
	bob := chatmodel.User{ID: "U2", Name: "bob"}
	err = f.h.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventButton, ID: "slack:action:2", User: bob, Intent: incident.ActionRun, Value: in.ID, Message: in.Root})
	require.Error(t, err)
	assert.Empty(t, f.start.events, "an incomplete command is never started")
	assert.Contains(t, strings.Join(f.chat.Ephemerals("U2"), "\n"), "incomplete")
}

// TestIncidentChangesAreLogged: opening, acknowledging and resolving an
// incident each write a log line naming the incident, its title and target
// (the operator's log said nothing about incidents; only the audit log had
// them).
func TestIncidentChangesAreLogged(t *testing.T) {
	f := newFixture(t)
	var logs bytes.Buffer
	m, err := incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Starter: f.start, Runs: f.db, Audit: f.db,
		Platform: "slack", Now: f.clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	ctx := context.Background()
	in, err := m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	_, _, err = m.Acknowledge(ctx, in.ID, chatmodel.User{ID: "U2", Name: "bob"}, "reaction")
	require.NoError(t, err)
	_, err = m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	out := logs.String()
	for _, want := range []string{`msg="incident opened" incident=` + in.ID + ` title=FileSystemSpaceFillingUp target=infra-prd channel=#ci-ops`,
		`msg="incident acknowledged" incident=` + in.ID, `by=U2`, `msg="incident resolved" incident=` + in.ID} {
		assert.Contains(t, out, want)
	}
}

// TestAcknowledgedAfterCountsFromWhenItStarted: an alert that started
// firing 11 min before groundcrew heard of it shows "open since 03:49"; the
// acknowledgement says the same clock ("11 min after it started"), not
// "16 s after it opened".
func TestAcknowledgedAfterCountsFromWhenItStarted(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := diskSignal(true, "a")
	sig.Since = f.clock.Now().Add(-11 * time.Minute)
	in, err := f.m.Signal(ctx, sig)
	require.NoError(t, err)
	f.clock.Advance(16 * time.Second)
	_, _, err = f.m.Acknowledge(ctx, in.ID, chatmodel.User{ID: "U2", Name: "bob"}, "reaction")
	require.NoError(t, err)
	root, _ := f.chat.Find("incident `" + in.ID + "`")
	assert.Contains(t, root.Msg.Text, "open since 03:49 UTC", "an absolute time: the root stays true however long it is read")
	_, ok := f.chat.Find("👀 @bob acknowledged — 11 min after it started.")
	assert.True(t, ok, "the acknowledgement counts from when the alert started")
	got, err := f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.Contains(t, f.m.TimelineText(got), "04:00 opened — FileSystemSpaceFillingUp (firing since 03:49)",
		"the timeline says when the alert started, so 'open since 03:49' next to an opening at 04:00 reads true")
}

type openedCounter struct{ by map[string]int }

func (o *openedCounter) IncidentOpened(source string) { o.by[source]++ }

// TestOpenedIncidentsAreCounted: one count per incident, not per notification.
func TestOpenedIncidentsAreCounted(t *testing.T) {
	f := newFixture(t)
	obs := &openedCounter{by: map[string]int{}}
	m, err := incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Observer: obs, Platform: "slack", Now: f.clock.Now})
	require.NoError(t, err)
	ctx := context.Background()
	for range 3 {
		_, err := m.Signal(ctx, diskSignal(true, "a"))
		require.NoError(t, err)
	}
	assert.Equal(t, map[string]int{"alert": 1}, obs.by)
	n, err := m.Counts(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"open": 1}, n)
}

// TestReopenedCountsFromTheReopening: after a reopen, "open since …" and
// "N min after it started" counted from the first opening (the alert's old
// startsAt); they count from the reopening, which the status says.
func TestReopenedCountsFromTheReopening(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := diskSignal(true, "a")
	sig.Since = f.clock.Now().Add(-5 * time.Minute)
	in, err := f.m.Signal(ctx, sig)
	require.NoError(t, err)
	f.clock.Advance(20 * time.Minute)
	_, err = f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	f.clock.Advance(11 * time.Minute) // 04:31
	_, err = f.m.Signal(ctx, sig)     // the same old startsAt
	require.NoError(t, err)
	f.clock.Advance(2 * time.Minute)
	_, _, err = f.m.Acknowledge(ctx, in.ID, chatmodel.User{ID: "U2", Name: "bob"}, "reaction")
	require.NoError(t, err)
	root := f.root(t, in.ID)
	assert.Contains(t, root.Text, "open again since 04:31 UTC")
	_, ok := f.chat.Find("👀 @bob acknowledged — 2 min after it started.")
	assert.True(t, ok, "counted from the reopening")
}

// TestRunButtonOnlyForParametersTheRunAccepts: a 10 KB or bidi instance
// was offered as a Run button the engine always refuses. The value is not
// suggested; the evidence says why.
func TestRunButtonOnlyForParametersTheRunAccepts(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for i, v := range []string{strings.Repeat("x", 10<<10), "worker\u202e0"} {
		sig := diskSignal(true, "a")
		sig.Key = fmt.Sprintf("k%d", i)
		sig.Params = map[string]string{"worker": v}
		in, err := f.m.Signal(ctx, sig)
		require.NoError(t, err)
		root := f.root(t, in.ID)
		assert.Contains(t, root.Text, "worker=<worker>")
		assert.NotContains(t, actions(root), incident.ActionRun)
		assert.Contains(t, root.Text, "⚠️ parameter `worker` from this alert would be refused")
		assert.Less(t, len(root.Text)+len(root.Detail), 3000, "the 10 KB value is not posted")
	}
}

// A "🔁 Changed" reply listed the same resolved alert twice as "(gone)".
func TestChangedSaysEachGoneAlertOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.m.Signal(ctx, diskSignal(true, "`worker-0` 8% left", "`worker-1` 9% left", "`worker-1` 9% left"))
	require.NoError(t, err)
	_, err = f.m.Signal(ctx, diskSignal(true, "`worker-0` 8% left"))
	require.NoError(t, err)
	changed, ok := f.chat.Find("🔁 Changed")
	require.True(t, ok)
	assert.Equal(t, 1, strings.Count(changed.Msg.Text, "worker-1"), changed.Msg.Text)
	assert.Equal(t, "🔁 Changed: 1 gone\n• ~`worker-1` 9% left~ (gone)\n1 other still firing — the incident message lists them all", changed.Msg.Text)
}

// vols is n alert lines, /vol<from> … /vol<from+n-1>, as the receiver
// writes them.
func vols(from, n int, summary string) []string {
	var ev []string
	for i := from; i < from+n; i++ {
		ev = append(ev, fmt.Sprintf("`mountpoint=/vol%d` — %s", i, summary))
	}
	return ev
}

// TestChangedListsOnlyWhatChanged: the 🔁 Changed reply listed the whole
// group (up to 50 alerts, each marked or not) when one alert of it
// changed; it lists what changed, in the source's order, and counts the
// others, as the root message it points to counts them.
func TestChangedListsOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	changedReply := func(t *testing.T, f *fixture) string {
		t.Helper()
		var got []string
		for _, p := range f.chat.Posts() {
			if strings.HasPrefix(p.Msg.Text, "🔁 Changed") {
				got = append(got, p.Msg.Text)
			}
		}
		require.Len(t, got, 1, f.chat.Transcript())
		return got[0]
	}
	t.Run("50 alerts, one changes: one line and the count of the other 49", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 50, "6% left")...)
		s.Alerts = 50
		in, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		s.Evidence = vols(0, 50, "6% left")
		s.Evidence[7] = "`mountpoint=/vol7` — 3% left"
		_, err = f.m.Signal(ctx, s)
		require.NoError(t, err)
		got := changedReply(t, f)
		assert.Equal(t, "🔁 Changed: 1 changed\n• `mountpoint=/vol7` — 3% left (was: 6% left)\n"+
			"49 others still firing — the incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline", got)
		assert.NotContains(t, got, "/vol8`", "what did not change is counted, not listed")
		root := f.root(t, in.ID)
		assert.Contains(t, root.Text, "· 50 alerts firing ·", "the root counts 1 changed + 49 others")
		assert.Contains(t, root.Text, "\n• `mountpoint=/vol4` — 6% left\n• … and 45 more (45 listed in the thread)")
		again, err := f.db.GetIncident(ctx, in.ID)
		require.NoError(t, err)
		timeline := f.m.TimelineText(again)
		assert.Contains(t, timeline, "\n04:00 changed — 1 changed · 50 alerts firing — changed: `mountpoint=/vol7` (6% left → 3% left)", "the timeline says what changed")
		_, entries, _ := strings.Cut(timeline, "\nTimeline (UTC):")
		assert.NotContains(t, entries, "/vol8`", "not the whole set again in the entry")
		assert.Contains(t, timeline, "\n• `mountpoint=/vol8` — 6% left\n", "show lists the whole current set above it")
		last := again.Timeline[len(again.Timeline)-1]
		assert.Equal(t, s.Evidence, last.Evidence, "the entry keeps the whole set it summarizes")
	})
	t.Run("one resolves, three fire: new in the source's order, then gone", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 50, "6% left")...)
		s.Alerts = 50
		in, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		// The source orders the most severe first, then as people count:
		// /vol51 before /vol100.
		s.Evidence = append([]string{"`mountpoint=/vol200 severity=critical` — 1% left"}, vols(0, 49, "6% left")...)
		s.Evidence = append(s.Evidence, "`mountpoint=/vol51` — 6% left", "`mountpoint=/vol100` — 6% left")
		s.Alerts = 52
		_, err = f.m.Signal(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, "🔁 Changed: 3 new · 1 gone\n"+
			"• `mountpoint=/vol200 severity=critical` — 1% left  🆕\n• `mountpoint=/vol51` — 6% left  🆕\n• `mountpoint=/vol100` — 6% left  🆕\n"+
			"• ~`mountpoint=/vol49` — 6% left~ (gone)\n"+
			"49 others still firing — the incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline", changedReply(t, f))
		assert.Contains(t, f.root(t, in.ID).Text, "· 52 alerts firing ·", "3 new + 49 others")
		got, err := f.db.GetIncident(ctx, in.ID)
		require.NoError(t, err)
		assert.Contains(t, f.m.TimelineText(got), "\n04:00 changed — 3 new · 1 gone · 52 alerts firing — new: `mountpoint=/vol200 severity=critical`, "+
			"`mountpoint=/vol51`, `mountpoint=/vol100`; gone: `mountpoint=/vol49`")
	})
	t.Run("a large change is cut with its count", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 50, "6% left")...)
		s.Alerts = 50
		in, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		s.Evidence = vols(100, 50, "6% left")
		_, err = f.m.Signal(ctx, s)
		require.NoError(t, err)
		got := changedReply(t, f)
		lines := strings.Split(got, "\n")
		require.Len(t, lines, 1+10+2, got)
		assert.Equal(t, "🔁 Changed: 50 new · 50 gone", lines[0])
		assert.Equal(t, "• `mountpoint=/vol100` — 6% left  🆕", lines[1])
		assert.Equal(t, "• `mountpoint=/vol109` — 6% left  🆕", lines[10])
		assert.Equal(t, "• … and 90 more (40 new or changed, 50 gone)", lines[11])
		assert.Equal(t, "The incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline", lines[12])
		got2, err := f.db.GetIncident(ctx, in.ID)
		require.NoError(t, err)
		entry := got2.Timeline[len(got2.Timeline)-1]
		assert.Equal(t, "50 new · 50 gone · 50 alerts firing — new: `mountpoint=/vol100`, `mountpoint=/vol101`, `mountpoint=/vol102`, "+
			"`mountpoint=/vol103`, `mountpoint=/vol104` … and 95 more", entry.Text, "at most 5 names in the timeline, the others counted")
		assert.Equal(t, s.Evidence, entry.Evidence)
	})
	t.Run("a list the source cut: what left it may still fire", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, append(vols(0, 50, "6% left"), "… and 1,200 more (50 not sent by Alertmanager: max_alerts)")...)
		s.Alerts = 1250
		in, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		// A critical alert comes first and pushes /vol49 past the 50 listed.
		s.Evidence = append([]string{"`mountpoint=/vol50 severity=critical` — 1% left"}, vols(0, 49, "6% left")...)
		s.Evidence = append(s.Evidence, "… and 1,201 more (50 not sent by Alertmanager: max_alerts)")
		s.Alerts = 1251
		_, err = f.m.Signal(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, "🔁 Changed: 1 new · 1 no longer listed\n"+
			"• `mountpoint=/vol50 severity=critical` — 1% left  🆕\n"+
			"• `mountpoint=/vol49` — 6% left (resolved, or past the 50 listed)\n"+
			"• … and 1,201 more (50 not sent by Alertmanager: max_alerts) — was 1,200\n"+
			"1,250 others still firing — the incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline", changedReply(t, f))
		assert.Contains(t, f.root(t, in.ID).Text, "· 1,251 alerts firing ·")
	})
	t.Run("a watch: its observation changed, a warning came", func(t *testing.T) {
		f := newFixture(t)
		s := incident.Signal{Key: "watch:infra-prd:worker_stalled:w-1", Firing: true,
			Source: incident.Source{Kind: incident.SourceWatch, Name: "worker_stalled", Ref: "w-1"}, Title: "Worker stalled",
			Target: "infra-prd", Channel: "#ci-ops", Evidence: []string{"`w-1` stalled for ≥ 10 min, 3 containers", "or `worker-rebuild` (a new VM)"}}
		_, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		s.Evidence = []string{"`w-1` stalled for ≥ 20 min, 3 containers", "or `worker-rebuild` (a new VM)", "⚠️ target `infra-prd` is not configured"}
		_, err = f.m.Signal(ctx, s)
		require.NoError(t, err)
		assert.Equal(t, "🔁 Changed: 1 changed\n• `w-1` stalled for ≥ 20 min, 3 containers (was: stalled for ≥ 10 min, 3 containers)\n"+
			"⚠️ target `infra-prd` is not configured  🆕\n1 other unchanged — the incident message lists them all", changedReply(t, f))
		ins, err := f.db.ListIncidents(ctx, incident.Query{})
		require.NoError(t, err)
		require.Len(t, ins, 1)
		assert.Contains(t, f.m.TimelineText(ins[0]), "\n04:00 changed — 1 changed · 1 new warning — changed: `w-1` (stalled for ≥ 10 min, 3 containers → "+
			"stalled for ≥ 20 min, 3 containers); ⚠️: target `infra-prd` is not configured")
	})
	t.Run("only the order changed: nothing to say", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, "`mountpoint=/a` — 6% left", "`mountpoint=/b` — 6% left")
		_, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		s.Evidence = []string{"`mountpoint=/b` — 6% left", "`mountpoint=/a` — 6% left"}
		_, err = f.m.Signal(ctx, s)
		require.NoError(t, err)
		_, ok := f.chat.Find("🔁 Changed")
		assert.False(t, ok, f.chat.Transcript())
	})
}

// A watch incident opens after two polls in a row: its header says 2 polls.
func TestWatchSignalCountsItsPolls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := incident.Signal{Key: "watch:infra-prd:worker_stalled:w-1", Firing: true, Observations: 2,
		Source: incident.Source{Kind: incident.SourceWatch, Name: "worker_stalled", Ref: "w-1"}, Title: "Worker stalled",
		Target: "infra-prd", Channel: "#ci-ops"}
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, 2, in.Notifications)
	s.Observations = 0
	in, err = f.m.Signal(ctx, s)
	require.NoError(t, err)
	assert.Equal(t, 3, in.Notifications, "a signal without a count counts once")
}

// TestRootCountsEveryAlertNotShown: the root message shows five alerts and
// counts all the others — the ones in the detail and the ones the source
// only counted (Alertmanager's truncatedAlerts, alerts past the evidence
// kept) — rather than counting the source's "… and N more" as one line.
func TestRootCountsEveryAlertNotShown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ev []string
	for i := range 50 {
		ev = append(ev, fmt.Sprintf("`mountpoint=/vol%d` — 6%% left", i))
	}
	ev = append(ev, "… and 1,200 more (50 not sent by Alertmanager: max_alerts)")
	s := diskSignal(true, ev...)
	s.Alerts = 1250
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	root := f.root(t, in.ID)
	assert.Contains(t, root.Text, "\nSource: Alertmanager (routes[0]) · 1,250 alerts firing · 1 notification\n", "the count people scan for")
	assert.Contains(t, root.Text, "\n• `mountpoint=/vol4` — 6% left\n• … and 1,245 more (45 listed in the thread; 50 not sent by Alertmanager: max_alerts)")
	assert.NotContains(t, root.Text, "/vol5`")
	assert.Empty(t, root.Detail, "the thread lists the others: no detail repeats them")
	firing, ok := f.chat.Find("🔔 Firing")
	require.True(t, ok)
	assert.Equal(t, in.Root.ID, firing.To.Thread)
	assert.True(t, strings.HasPrefix(firing.Msg.Text, "🔔 Firing: the other 1,245 (the incident message shows the first 5)\n• `mountpoint=/vol5` — 6% left\n"), firing.Msg.Text)
	assert.True(t, strings.HasSuffix(firing.Msg.Text, "\n• `mountpoint=/vol49` — 6% left\n• … and 1,200 more (50 not sent by Alertmanager: max_alerts)"), firing.Msg.Text)
	assert.NotContains(t, firing.Msg.Text, "/vol4`", "what the root shows is not repeated")
	_, err = f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	assert.NotContains(t, f.root(t, in.ID).Text, "alerts firing", "resolved: none fire")

	f2 := newFixture(t)
	in, err = f2.m.Signal(ctx, diskSignal(true, "`mountpoint=/a` — 6% left", "… and 50 more (50 not sent by Alertmanager: max_alerts)"))
	require.NoError(t, err)
	root = f2.root(t, in.ID)
	assert.Contains(t, root.Text, "\n• `mountpoint=/a` — 6% left\n• … and 50 more (50 not sent by Alertmanager: max_alerts)")
	assert.Empty(t, root.Detail, "nothing more to list")
	_, ok = f2.chat.Find("🔔 Firing")
	assert.False(t, ok, "nothing more to list in the thread either")
}

// TestRootAndFiringReplyDoNotRepeatEachOther: the root message is the
// summary people scan (title, state, the first alerts, how many more, the
// suggestion and its buttons); the 🔔 Firing reply in its thread lists the
// alerts the root does not show. They listed the same alerts (up to 50)
// twice: once in the root (and its detail) and again in the reply.
func TestRootAndFiringReplyDoNotRepeatEachOther(t *testing.T) {
	ctx := context.Background()
	t.Run("one alert: the root says it all", func(t *testing.T) {
		f := newFixture(t)
		in, err := f.m.Signal(ctx, diskSignal(true, "`mountpoint=/opt/concourse/worker` — 6% left"))
		require.NoError(t, err)
		posts := f.chat.Posts()
		require.Len(t, posts, 1, "the root only: a reply would repeat its one alert\n%s", f.chat.Transcript())
		assert.Contains(t, posts[0].Msg.Text, "incident `"+in.ID+"`")
		assert.Contains(t, posts[0].Msg.Text, "\n• `mountpoint=/opt/concourse/worker` — 6% left\nSuggested:")
		assert.Empty(t, posts[0].Msg.Detail)
	})
	t.Run("twelve alerts: five in the root, seven in the thread, each once", func(t *testing.T) {
		f := newFixture(t)
		var ev []string
		for i := range 12 {
			ev = append(ev, fmt.Sprintf("`mountpoint=/vol%d` — 6%% left", i))
		}
		ev = append(ev, "⚠️ parameter `worker` could not be filled from this alert (route disk, params.worker gave nothing): fill it in the suggested command")
		in, err := f.m.Signal(ctx, diskSignal(true, ev...))
		require.NoError(t, err)
		posts := f.chat.Posts()
		require.Len(t, posts, 2, f.chat.Transcript())
		root, firing := posts[0].Msg, posts[1]
		assert.Equal(t, in.Root.ID, firing.To.Thread)
		assert.Empty(t, root.Detail)
		assert.Contains(t, root.Text, "\n• `mountpoint=/vol4` — 6% left\n• … and 7 more (7 listed in the thread)\n"+
			"⚠️ parameter `worker` could not be filled from this alert (route disk, params.worker gave nothing): fill it in the suggested command\nSuggested:",
			"the source's warning stays in the root, next to the suggestion it is about")
		assert.True(t, strings.HasPrefix(firing.Msg.Text, "🔔 Firing: the other 7 (the incident message shows the first 5)\n"), firing.Msg.Text)
		for i, l := range ev {
			inRoot, inReply := strings.Count(root.Text, l), strings.Count(firing.Msg.Text, l)
			assert.Equal(t, 1, inRoot+inReply, "%q once in all (root %d, reply %d)", l, inRoot, inReply)
			if i < 5 || strings.HasPrefix(l, "⚠️") {
				assert.Equal(t, 1, inRoot, l)
			}
		}
		// A repeat edits the root; it posts nothing new.
		_, err = f.m.Signal(ctx, diskSignal(true, ev...))
		require.NoError(t, err)
		assert.Len(t, f.chat.Posts(), 2)
	})
}

// TestListOrdersByTheAgeItShowsAndSaysWhatIsNotInChat: "oldest first" is
// the age the list shows (from the alert's startsAt), not when groundcrew
// heard of it; an incident whose thread still waits in the outbox says so.
func TestListOrdersByTheAgeItShowsAndSaysWhatIsNotInChat(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	newer := diskSignal(true, "a")
	newer.Key, newer.Since = "newer", f.clock.Now().Add(-time.Hour)
	n, err := f.m.Signal(ctx, newer)
	require.NoError(t, err)
	f.clock.Advance(time.Minute)
	older := diskSignal(true, "b")
	older.Key, older.Since = "older", f.clock.Now().Add(-3*time.Hour)
	f.chat.FailPosts = 1
	o, err := f.m.Signal(ctx, older)
	require.NoError(t, err)
	require.True(t, o.Root.IsZero(), "chat refused the root")

	require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: "U9"}, Text: "incidents"}))
	list := f.chat.Ephemerals("U9")[0]
	assert.Less(t, strings.Index(list, o.ID), strings.Index(list, n.ID), "open for 3 h before open for 1 h: %s", list)
	assert.Contains(t, list, "`"+o.ID+"` FileSystemSpaceFillingUp on `infra-prd` — not acknowledged, open for 3 h · ⏳ not in chat yet")
	assert.NotContains(t, list[strings.Index(list, n.ID):], "not in chat yet")
}

// TestListByAnUnknownTargetSaysSo: `/runbook incidents target=nope` said
// "0 incidents", as if the target were quiet; a target that is not
// configured is named as such, with the ones that are.
func TestListByAnUnknownTargetSaysSo(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.m.Signal(ctx, diskSignal(true, "a"))
	require.NoError(t, err)
	require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: "U9"}, Text: "incidents target=nope"}))
	require.NoError(t, f.eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: "U9"}, Text: "incidents target=infra-dev"}))
	got := f.chat.Ephemerals("U9")
	require.Len(t, got, 2)
	assert.Contains(t, got[0], "There is no target `nope`; targets: `infra-prd`, `infra-dev`.")
	assert.NotContains(t, got[1], "There is no target", "a configured target with no incident is listed, empty")
}

// TestFiringAgainSaysOnlyWhatTheRootDoesNot: a resolved incident that
// fires again posted "🔔 Firing again" and the whole set (up to 50
// lines), the five its root shows included. It says since when it fires
// and how long it was resolved; the same alerts as last time are counted,
// and only those the root does not show are listed (as the first 🔔 Firing
// reply does); another set says what is new and what does not fire again
// since last time.
func TestFiringAgainSaysOnlyWhatTheRootDoesNot(t *testing.T) {
	ctx := context.Background()
	// reopen opens with first, resolves 20 min later, and fires again
	// with again 11 min after that (04:31), its alerts started a minute
	// before; it returns the 🔔 Firing again reply.
	reopen := func(t *testing.T, f *fixture, first, again incident.Signal) chatmodel.Message {
		t.Helper()
		_, err := f.m.Signal(ctx, first)
		require.NoError(t, err)
		f.clock.Advance(20 * time.Minute)
		_, err = f.m.Signal(ctx, diskSignal(false))
		require.NoError(t, err)
		f.clock.Advance(11 * time.Minute)
		again.Since = f.clock.Now().Add(-time.Minute)
		_, err = f.m.Signal(ctx, again)
		require.NoError(t, err)
		var got []bottest.Posted
		for _, p := range f.chat.Posts() {
			if strings.HasPrefix(p.Msg.Text, "🔔 Firing again") {
				got = append(got, p)
			}
		}
		require.Len(t, got, 1, f.chat.Transcript())
		assert.True(t, got[0].Msg.Broadcast, "shown in the channel too")
		return got[0].Msg
	}
	t.Run("the same eight alerts: counted, the three the root does not show listed", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 8, "6% left")...)
		s.Alerts = 8
		got := reopen(t, f, s, s)
		assert.Equal(t, "🔔 Firing again since 04:30, 10 min after it resolved — the same 8 alerts as last time; "+
			"the other 3 (the incident message shows the first 5)\n• `mountpoint=/vol5` — 6% left\n• `mountpoint=/vol6` — 6% left\n• `mountpoint=/vol7` — 6% left", got.Text)
		ins, err := f.db.ListIncidents(ctx, incident.Query{})
		require.NoError(t, err)
		require.Len(t, ins, 1, "the same incident, reopened")
		in := ins[0]
		root := f.root(t, in.ID)
		for _, l := range s.Evidence {
			assert.Equal(t, 1, strings.Count(root.Text, l)+strings.Count(got.Text, l), "%q once in the root and the reply", l)
		}
		assert.Contains(t, f.m.TimelineText(in), "\n04:31 reopened — firing again since 04:30, 10 min after it resolved — the same 8 alerts as last time")
		assert.Equal(t, s.Evidence, in.Timeline[len(in.Timeline)-1].Evidence, "the entry keeps the set")
	})
	t.Run("the same alert: one line, nothing repeated", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, "`mountpoint=/opt/concourse/worker` — 6% left")
		got := reopen(t, f, s, s)
		assert.Equal(t, "🔔 Firing again since 04:30, 10 min after it resolved — the same alert as last time", got.Text)
	})
	t.Run("another set: what is new and what does not fire again, the others counted", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 50, "6% left")...)
		s.Alerts = 50
		again := diskSignal(true, append(vols(0, 49, "6% left"), "`mountpoint=/vol100` — 2% left")...)
		again.Alerts = 50
		got := reopen(t, f, s, again)
		ins, err := f.db.ListIncidents(ctx, incident.Query{})
		require.NoError(t, err)
		require.Len(t, ins, 1, "the same incident, reopened")
		in := ins[0]
		assert.Equal(t, "🔔 Firing again since 04:30, 10 min after it resolved — 1 new · 1 not firing again since last time\n"+
			"• `mountpoint=/vol100` — 2% left  🆕\n• ~`mountpoint=/vol49` — 6% left~ (not firing again)\n"+
			"49 others firing as last time — the incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline", got.Text)
		assert.NotContains(t, got.Text, "/vol0`", "what the root shows is not repeated")
		assert.Contains(t, f.m.TimelineText(in), "\n04:31 reopened — firing again since 04:30, 10 min after it resolved — since last time: "+
			"1 new · 1 not firing again · 50 alerts firing — new: `mountpoint=/vol100`; not firing again: `mountpoint=/vol49`")
	})
}

// TestAlertsAreComparedByIdentity: the source leaves out the labels every
// alert of a group shares; when one joins with another value of such a
// label, every line shows it and reads differently. By their keys the
// alerts are the same: the 🔁 Changed reply lists the one that is new,
// not 50 new and 50 gone. An incident stored without keys is compared by
// text.
func TestAlertsAreComparedByIdentity(t *testing.T) {
	ctx := context.Background()
	keyed := func(lines []string, from int) []string {
		var keys []string
		for i := range lines {
			keys = append(keys, fmt.Sprintf("fp%d", from+i))
		}
		return keys
	}
	// withDevice is the lines of vols with the device label shown.
	withDevice := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			out = append(out, strings.Replace(l, "` — ", " device=/dev/sda1` — ", 1))
		}
		return out
	}
	t.Run("a label no longer common: only the new alert", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 50, "6% left")...)
		s.EvidenceKeys, s.Alerts = keyed(s.Evidence, 0), 50
		in, err := f.m.Signal(ctx, s)
		require.NoError(t, err)
		next := diskSignal(true, append(withDevice(vols(0, 50, "6% left")), "`mountpoint=/vol50 device=/dev/sdb1` — 6% left")...)
		next.EvidenceKeys, next.Alerts = keyed(next.Evidence, 0), 51
		next.Evidence[3] = "`mountpoint=/vol3 device=/dev/sda1` — 2% left" // and one really changed
		_, err = f.m.Signal(ctx, next)
		require.NoError(t, err)
		changed, ok := f.chat.Find("🔁 Changed")
		require.True(t, ok, f.chat.Transcript())
		assert.Equal(t, "🔁 Changed: 1 new · 1 changed\n"+
			"• `mountpoint=/vol3 device=/dev/sda1` — 2% left (was: 6% left)\n"+
			"• `mountpoint=/vol50 device=/dev/sdb1` — 6% left  🆕\n"+
			"49 others still firing — the incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline", changed.Msg.Text)
		got, err := f.db.GetIncident(ctx, in.ID)
		require.NoError(t, err)
		assert.Equal(t, next.EvidenceKeys, got.EvidenceKeys, "stored with the incident")
		assert.Contains(t, f.m.TimelineText(got), "changed — 1 new · 1 changed · 51 alerts firing — new: `mountpoint=/vol50 device=/dev/sdb1`; changed: `mountpoint=/vol3 device=/dev/sda1` (6% left → 2% left)")
		assert.Contains(t, f.root(t, in.ID).Text, "\n• `mountpoint=/vol0 device=/dev/sda1` — 6% left\n", "the root shows the lines as the source says them now")

		// Only the labels shown change back: nothing to say.
		before := len(f.chat.Posts())
		last := diskSignal(true, vols(0, 51, "6% left")...)
		last.Evidence[3] = "`mountpoint=/vol3` — 2% left"
		last.EvidenceKeys, last.Alerts = keyed(last.Evidence, 0), 51
		_, err = f.m.Signal(ctx, last)
		require.NoError(t, err)
		assert.Len(t, f.chat.Posts(), before, "no reply: the same alerts\n%s", f.chat.Transcript())
		got, err = f.db.GetIncident(ctx, in.ID)
		require.NoError(t, err)
		assert.Equal(t, last.Evidence, got.Evidence, "the lines as the source says them now")
		assert.Equal(t, "changed", got.Timeline[len(got.Timeline)-1].Kind)
		assert.Len(t, got.Timeline, 2, "opened, changed: no entry for lines shown otherwise")
	})
	t.Run("an incident stored without keys: by text", func(t *testing.T) {
		f := newFixture(t)
		s := diskSignal(true, vols(0, 3, "6% left")...)
		_, err := f.m.Signal(ctx, s) // no keys, as stored before they existed
		require.NoError(t, err)
		next := diskSignal(true, withDevice(vols(0, 3, "6% left"))...)
		next.EvidenceKeys = keyed(next.Evidence, 0)
		_, err = f.m.Signal(ctx, next)
		require.NoError(t, err)
		changed, ok := f.chat.Find("🔁 Changed")
		require.True(t, ok, f.chat.Transcript())
		assert.True(t, strings.HasPrefix(changed.Msg.Text, "🔁 Changed: 3 new · 3 gone\n"), changed.Msg.Text)
	})
	t.Run("a stored incident without keys reads as before", func(t *testing.T) {
		var in incident.Incident
		require.NoError(t, json.Unmarshal([]byte(`{"id":"i-1","evidence":["a"],"timeline":[{"kind":"changed","text":"a; b"}]}`), &in))
		assert.Nil(t, in.EvidenceKeys)
		assert.Equal(t, "a; b", in.Timeline[0].Text)
		b, err := json.Marshal(&incident.Incident{ID: "i-1", Evidence: []string{"a"}, Timeline: []incident.Entry{{Kind: "opened", Text: "x"}}})
		require.NoError(t, err)
		assert.NotContains(t, string(b), "evidence_keys", "omitted when none")
		assert.NotContains(t, string(b), `"timeline":[{"time":"0001-01-01T00:00:00Z","kind":"opened","text":"x","evidence"`)
	})
}

// TestShowListsWhatFiresNow: the root shows the first alerts and the
// thread's replies what changed; `/runbook incidents show` is the one place
// with the whole current set (and none once resolved).
func TestShowListsWhatFiresNow(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var ev []string
	for i := range 12 {
		ev = append(ev, fmt.Sprintf("`mountpoint=/vol%d` — %d%% left", i, 10+i))
	}
	ev = append(ev, "… and 3 more (not sent by Alertmanager: max_alerts)", "⚠️ 2 alerts have no instance label")
	in, err := f.m.Signal(ctx, diskSignal(true, ev...))
	require.NoError(t, err)
	show := f.m.TimelineText(in)
	now, _, ok := strings.Cut(show, "\nTimeline (UTC):")
	require.True(t, ok, show)
	assert.Contains(t, now, "\nNow (as of 04:00 UTC):\n• `mountpoint=/vol0` — 10% left\n• `mountpoint=/vol1` — 11% left\n")
	assert.Equal(t, 12, strings.Count(now, "• `mountpoint=/vol"), now)
	assert.Contains(t, now, "\n• … and 3 more (not sent by Alertmanager: max_alerts)\n⚠️ 2 alerts have no instance label")

	f.clock.Advance(10 * time.Minute)
	gone, err := f.m.Signal(ctx, diskSignal(false))
	require.NoError(t, err)
	assert.NotContains(t, f.m.TimelineText(gone), "Now (as of", "nothing fires once resolved")
}
