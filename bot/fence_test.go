package bot_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// testLease is the leader lease as the engine sees it (opmodel.Lease).
type testLease struct {
	mu    sync.Mutex
	until time.Time
}

func (l *testLease) HeldUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

func (l *testLease) CallTimeout() time.Duration { return time.Second }

func (l *testLease) heldFor(d time.Duration) {
	l.mu.Lock()
	l.until = time.Now().Add(d)
	l.mu.Unlock()
}

// fencedHarness is a harness whose engine holds lease; at the first
// before-apply of prune, at(h) runs (between the intent and the call).
func fencedHarness(t *testing.T, lease *testLease, logs *lockedBuffer, at func(h *harness)) *harness {
	var h *harness
	var once sync.Once
	h = newHarness(t, stalledWorld(), func(o *bot.Options) {
		o.Lease = lease
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.Hook = func(p string) {
			if p == "before-apply:prune" {
				once.Do(func() { at(h) })
			}
		}
	})
	return h
}

// TestFence_PausedPastTheLeaseSendsNothing (#35.3): the leader journals the
// intent of the prune and is paused before the call for longer than its
// lease; it wakes with the lease lapsed and its term ending: no request is
// made, the log says why, and the step keeps its intent — the next leader
// reconciles it (the worker is still stalled: a person is asked again) and
// prunes once.
func TestFence_PausedPastTheLeaseSendsNothing(t *testing.T) {
	lease := &testLease{}
	lease.heldFor(time.Hour)
	var logs lockedBuffer
	h := fencedHarness(t, lease, &logs, func(h *harness) {
		lease.heldFor(-5 * time.Second)                // woke 5 s after the lease lapsed…
		time.AfterFunc(100*time.Millisecond, h.cancel) // …and the elector ends the term
	})
	r := h.toGate()
	// The engine runs as serve runs it: its runs advance in Run's context,
	// the term's.
	h.stop()
	h.noResume = true
	h.start()
	done := make(chan error, 1)
	go func() { done <- h.eng.Run(h.ctx) }()
	time.Sleep(300 * time.Millisecond) // Run has set the context runs advance in
	// (not h.cmd: the run stays running, its call neither made nor failed)
	require.NoError(t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: carol, Conversation: chan1, Text: "approve " + r.ID}))
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the term did not end")
	}

	assert.Equal(t, 0, h.world.CallCount("fake.prune"), "nothing is sent:\n%s", h.chat.Transcript())
	assert.Contains(t, logs.String(), "not calling fake.prune: this process does not surely hold the leader lease; nothing was sent")
	assert.Contains(t, logs.String(), "the leader lease lapsed 5")
	got, err := h.db.GetRun(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, runmodel.StepExecuting, got.Step("prune").Status, "the intent stays for the leader to reconcile")
	assert.Len(t, h.journalOf(runmodel.JIntent), 1)
	assert.Empty(t, h.journalOf(runmodel.JOutcome), "no outcome: no call was made")

	// The next term (here: after a restart) reconciles and asks again.
	lease.heldFor(time.Hour)
	require.NoError(t, h.db.Close()) // not h.stop: it waits for the running run
	h.db, h.noResume = nil, false
	h.start()
	r = h.onlyRun()
	require.Equal(t, runmodel.RunAwaitingApproval, r.State, h.chat.Transcript())
	assert.Contains(t, r.Gate.Reason, "was not repeated automatically")
	assert.Len(t, h.journalOf(runmodel.JReconciled), 1)
	h.cmd(carol, "approve "+r.ID)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())
	assert.Equal(t, 1, h.world.CallCount("fake.prune"), "pruned once, by the term that holds the lease")
}

// TestFence_LateRenewalWaits: a lease held for less than a call may take
// (its renewal is late) holds the call back until it is renewed; then the
// call goes out, once.
func TestFence_LateRenewalWaits(t *testing.T) {
	lease := &testLease{}
	lease.heldFor(time.Hour)
	var logs lockedBuffer
	h := fencedHarness(t, lease, &logs, func(*harness) {
		lease.heldFor(500 * time.Millisecond) // less than CallTimeout (1 s)
		time.AfterFunc(200*time.Millisecond, func() { lease.heldFor(time.Hour) })
	})
	r := h.toGate()
	h.cmd(carol, "approve "+r.ID)
	assert.Equal(t, runmodel.RunSucceeded, h.onlyRun().State, h.chat.Transcript())
	assert.Equal(t, 1, h.world.CallCount("fake.prune"))
	assert.NotContains(t, logs.String(), "not calling")
}
