package bot_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

var errDisk = errors.New("write /var/lib/groundcrew/groundcrew.db: no space left on device")

// flakyStore is the real store with chosen writes failing: fails[kind] is
// how many more writes of that kind fail (-1: all of them). Kinds:
// "outcome" (a run update journaling an outcome), "vote", "ref" (a run
// update indexing a message), "put_outbox", "delete_outbox", "audit".
type flakyStore struct {
	*store.DB
	mu     sync.Mutex
	fails  map[string]int
	failed map[string]int
}

func newFlaky(db *store.DB, fails map[string]int) *flakyStore {
	return &flakyStore{DB: db, fails: fails, failed: map[string]int{}}
}

func (f *flakyStore) fail(kind string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.fails[kind]
	if n == 0 {
		return false
	}
	if n > 0 {
		f.fails[kind] = n - 1
	}
	f.failed[kind]++
	return true
}

func (f *flakyStore) Failed(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed[kind]
}

func (f *flakyStore) UpdateRun(ctx context.Context, id string, fn func(*runmodel.Run, *runmodel.Batch) error) (*runmodel.Run, error) {
	return f.DB.UpdateRun(ctx, id, func(r *runmodel.Run, b *runmodel.Batch) error {
		if err := fn(r, b); err != nil {
			return err
		}
		for _, e := range b.Journal {
			if e.Type == runmodel.JOutcome && f.fail("outcome") || e.Type == runmodel.JVote && f.fail("vote") {
				return errDisk
			}
		}
		if len(b.Messages) > 0 && f.fail("ref") {
			return errDisk
		}
		return nil
	})
}

func (f *flakyStore) ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error) {
	if q.Active && f.fail("list_active") {
		return nil, errors.New("listing runs: FATAL: the database system is shutting down (SQLSTATE 57P03)")
	}
	return f.DB.ListRuns(ctx, q)
}

func (f *flakyStore) PutOutbox(ctx context.Context, it runmodel.OutboxItem) error {
	if f.fail("put_outbox") {
		return errDisk
	}
	return f.DB.PutOutbox(ctx, it)
}

func (f *flakyStore) DeleteOutbox(ctx context.Context, id string) error {
	if f.fail("delete_outbox") {
		return errDisk
	}
	return f.DB.DeleteOutbox(ctx, id)
}

func (f *flakyStore) AppendAudit(ctx context.Context, e runmodel.AuditEntry) error {
	if f.fail("audit") {
		return errDisk
	}
	return f.DB.AppendAudit(ctx, e)
}

// flakyHarness starts a harness whose engine writes through a flaky store.
func flakyHarness(t *testing.T, fails map[string]int) (*harness, *flakyStore) {
	var fs *flakyStore
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		fs = newFlaky(o.Store.(*store.DB), fails)
		o.Store = fs
	})
	return h, fs
}

func journalHas(t *testing.T, h *harness, runID string, typ runmodel.JournalType, step string) int {
	j, err := h.db.Journal(h.ctx, runID)
	require.NoError(t, err)
	n := 0
	for _, e := range j {
		if e.Type == typ && e.Step == step {
			n++
		}
	}
	return n
}

func runToApproval(t *testing.T, h *harness) {
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	m, ok := h.chat.Find("ssh w-0")
	require.True(t, ok, h.chat.Transcript())
	h.react(bob, m.Ref, chatmodel.IntentApprove)
	require.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, h.chat.Transcript())
}

func TestDurable_OutcomeWriteRetried(t *testing.T) {
	h, fs := flakyHarness(t, map[string]int{"outcome": 2})
	runToApproval(t, h)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, 2, fs.Failed("outcome"))
	assert.Equal(t, 1, journalHas(t, h, r.ID, runmodel.JOutcome, "prune"), "the outcome is journaled once, after two failed attempts")
	audit, err := h.db.AuditEntries(h.ctx, r.ID)
	require.NoError(t, err)
	n := 0
	for _, a := range audit {
		if a.Action == "outcome" {
			n++
		}
	}
	assert.Equal(t, 1, n)
	assert.Empty(t, h.eng.FailedWrites(r.ID))
}

func TestDurable_OutcomeWriteLostIsLoud(t *testing.T) {
	h, _ := flakyHarness(t, map[string]int{"outcome": -1})
	runToApproval(t, h)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
	assert.Equal(t, 0, journalHas(t, h, r.ID, runmodel.JOutcome, "prune"))
	// A person sees it: in the thread, and in /runbook status.
	p, ok := h.chat.Find("could not save the outcome of step prune")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, p.Msg.Text, "no space left on device")
	assert.Equal(t, threadOfRun(r), p.To)
	require.Len(t, h.eng.FailedWrites(r.ID), 1)
	h.cmd(alice, "status "+r.ID)
	eph := h.chat.Ephemerals(alice.ID)
	assert.Contains(t, eph[len(eph)-1], "1 store write failed")
}

func threadOfRun(r *runmodel.Run) chatmodel.Conversation {
	c := r.Conversation
	if c.Thread == "" {
		c.Thread = r.Root.ID
	}
	return c
}

func TestDurable_VoteWriteRetried(t *testing.T) {
	h, fs := flakyHarness(t, map[string]int{"vote": 3})
	runToApproval(t, h)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, 3, fs.Failed("vote"))
	assert.Equal(t, runmodel.RunSucceeded, r.State, "the vote counted after three failed writes:\n%s", h.chat.Transcript())
	assert.Equal(t, 1, journalHas(t, h, r.ID, runmodel.JVote, "prune"))
}

func TestDurable_VoteWriteLostIsLoud(t *testing.T) {
	h, _ := flakyHarness(t, map[string]int{"vote": -1})
	runToApproval(t, h)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	assert.Equal(t, runmodel.RunAwaitingApproval, r.State)
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
	p, ok := h.chat.Find("could not save a change of run")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, p.Msg.Text, "if you just voted or answered a step, do it again")
}

func TestDurable_MessageRefRetried(t *testing.T) {
	h, fs := flakyHarness(t, map[string]int{"ref": 3})
	runToApproval(t, h)
	assert.Equal(t, 3, fs.Failed("ref"))
	// Every message reference made it: the gate takes a reaction.
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())
}

func TestDurable_MessageRefLostIsLoud(t *testing.T) {
	h, _ := flakyHarness(t, map[string]int{"ref": -1})
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	p, ok := h.chat.Find("could not save the reference of the")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, p.Msg.Text, "type the `/runbook` command instead")
	r := h.onlyRun()
	assert.NotEmpty(t, h.eng.FailedWrites(r.ID))
	// The typed command still works.
	h.cmd(bob, "done "+r.ID)
	assert.Equal(t, runmodel.RunAwaitingApproval, h.onlyRun().State, h.chat.Transcript())
}

func TestDurable_OutboxNeverPostsTwice(t *testing.T) {
	h, fs := flakyHarness(t, map[string]int{"delete_outbox": -1})
	h.chat.FailPosts = 1 // the root message goes to the outbox
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	require.Empty(t, h.onlyRun().Root.ID)
	for range 3 {
		h.clock.Advance(10 * 60e9)
		h.tick()
	}
	assert.Greater(t, fs.Failed("delete_outbox"), 0)
	roots := 0
	for _, p := range h.chat.Posts() {
		if strings.Contains(p.History[0].Text, "started by @alice · run") {
			roots++
		}
	}
	assert.Equal(t, 1, roots, "a delivered post whose outbox entry could not be deleted is not posted again:\n%s", h.chat.Transcript())
	assert.NotEmpty(t, h.onlyRun().Root.ID)
}

func TestDurable_OutboxKeptWhenStoreRefusesIt(t *testing.T) {
	h, fs := flakyHarness(t, map[string]int{"put_outbox": -1})
	h.chat.FailPosts = 1
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	require.Empty(t, h.onlyRun().Root.ID)
	assert.Greater(t, fs.Failed("put_outbox"), 0)
	h.clock.Advance(10 * 60e9)
	h.tick()
	assert.NotEmpty(t, h.onlyRun().Root.ID, "the post kept in memory was delivered:\n%s", h.chat.Transcript())
}

// TestDurable_RunWaitsForTheStoreToResume: a store briefly away as the
// process starts (PostgreSQL restarting under a new leader) delays
// resuming the runs; Engine.Run does not end with the error (which ended
// the replica's process), and the gate is watched again once it is back.
func TestDurable_RunWaitsForTheStoreToResume(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	runToApproval(t, h)
	gate := h.gateRef()
	h.stop()

	var fs *flakyStore
	wc := &bottest.WatchingChat{Chat: h.chat}
	h.noResume = true
	h.opts = func(o *bot.Options) {
		fs = newFlaky(o.Store.(*store.DB), map[string]int{"list_active": 2})
		o.Store, o.Chat = fs, wc
		o.Capabilities = bot.CapabilitiesOf(fs, wc)
	}
	h.start()
	done := make(chan error, 1)
	go func() { done <- h.eng.Run(h.ctx) }()
	require.Eventually(t, func() bool { return slices.Contains(wc.Watched(), gate) }, 10*time.Second, 10*time.Millisecond,
		"the gate is watched again once the store answers")
	assert.Equal(t, 2, fs.Failed("list_active"))
	select {
	case err := <-done:
		t.Fatalf("Run ended while resuming: %v", err)
	default:
	}
	h.cancel()
	assert.NoError(t, <-done)
}

// lockedBuffer is a log destination the engine's goroutines may share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The store down for a while (PostgreSQL cut off until the lease runs out)
// fails every tick: the log says so when it starts, every 10 minutes while
// it lasts and when it works again — not once a second.
func TestDurable_TickFailureIsLoggedOncePerOutage(t *testing.T) {
	var logs lockedBuffer
	var fs *flakyStore
	h := newHarness(t, stalledWorld(), func(o *bot.Options) {
		fs = newFlaky(o.Store.(*store.DB), map[string]int{})
		o.Store = fs
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	fs.mu.Lock()
	fs.fails["list_active"] = 30
	fs.mu.Unlock()
	count := func(s string) int { return strings.Count(logs.String(), s) }
	for range 30 {
		h.clock.Advance(time.Second)
		h.eng.Tick(h.ctx)
	}
	require.Equal(t, 30, fs.Failed("list_active"))
	assert.Equal(t, 1, count(`msg="listing active runs"`), logs.String())
	h.clock.Advance(time.Second)
	h.eng.Tick(h.ctx)
	assert.Equal(t, 1, count(`msg="listing active runs: works again" failures=30 for=30s`), logs.String())

	fs.mu.Lock()
	fs.fails["list_active"] = 3
	fs.mu.Unlock()
	h.eng.Tick(h.ctx)
	h.clock.Advance(11 * time.Minute)
	h.eng.Tick(h.ctx)
	h.eng.Tick(h.ctx)
	assert.Equal(t, 2, count(`msg="listing active runs"`), "a new outage is logged")
	assert.Equal(t, 1, count(`msg="listing active runs: still failing"`), logs.String())
}
