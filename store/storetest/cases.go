package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

func newRun(id string, created time.Time) *runmodel.Run {
	return &runmodel.Run{ID: id, Runbook: "worker-stalled", Title: "Worker stalled", Target: "ci",
		Params: map[string]string{"worker": "w1"}, Requester: chatmodel.User{ID: "U1", Name: "ana"},
		Conversation: chatmodel.Conversation{Platform: "slack", Channel: "C1", Thread: "T-" + id},
		State:        runmodel.RunRunning, CreatedAt: created, UpdatedAt: created,
		Steps: []runmodel.StepState{{ID: "s1", Kind: "op", Title: "List workers", Status: runmodel.StepPending}}}
}

func testCreateGet(t *testing.T, open Open) {
	s := open(t, Options{})
	r := newRun("R-ABC1", t0)
	require.NoError(t, s.CreateRun(ctx(), r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted, Time: t0}}}))
	assert.Equal(t, "r-abc1", r.ID, "ids are stored lowercase")
	assert.ErrorIs(t, s.CreateRun(ctx(), newRun("r-abc1", t0), nil), runmodel.ErrExists)

	got, err := s.GetRun(ctx(), "R-Abc1")
	require.NoError(t, err, "ids are found in any case")
	assert.Equal(t, "r-abc1", got.ID)
	assert.Equal(t, r.Params, got.Params)
	assert.Equal(t, r.Requester, got.Requester)
	assert.Equal(t, r.Conversation, got.Conversation)
	assert.True(t, got.CreatedAt.Equal(t0))
	require.Len(t, got.Steps, 1)
	assert.Equal(t, "List workers", got.Steps[0].Title)

	_, err = s.GetRun(ctx(), "r-none")
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
}

func testUpdateAtomic(t *testing.T, open Open) {
	s := open(t, Options{})
	require.NoError(t, s.CreateRun(ctx(), newRun("r-1", t0), &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}}}))

	// A failing update writes nothing: neither the run nor its batch.
	ref := chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "123.456"}
	_, err := s.UpdateRun(ctx(), "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
		r.State = runmodel.RunFailed
		b.Note(runmodel.JournalEntry{Type: runmodel.JIntent, Step: "s1"})
		b.Audit = append(b.Audit, runmodel.AuditEntry{Actor: "ana", Action: runmodel.ActionCancel})
		b.Messages = append(b.Messages, runmodel.MessageIndex{Ref: ref, RunID: "r-1", Role: chatmodel.RoleGate})
		return assert.AnError
	})
	require.ErrorIs(t, err, assert.AnError)
	got, err := s.GetRun(ctx(), "r-1")
	require.NoError(t, err)
	assert.Equal(t, runmodel.RunRunning, got.State)
	j, err := s.Journal(ctx(), "r-1")
	require.NoError(t, err)
	assert.Len(t, j, 1)
	a, err := s.AuditEntries(ctx(), "")
	require.NoError(t, err)
	assert.Empty(t, a)
	_, err = s.RunByMessage(ctx(), ref)
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)

	// A successful one writes the run and its whole batch.
	out, err := s.UpdateRun(ctx(), "R-1", func(r *runmodel.Run, b *runmodel.Batch) error {
		r.State = runmodel.RunAwaitingApproval
		r.Gate = &runmodel.Gate{ID: "g1", StepID: "s1"}
		b.Note(runmodel.JournalEntry{Type: runmodel.JIntent, Step: "s1", PlanHash: "abc"})
		b.Audit = append(b.Audit, runmodel.AuditEntry{Actor: "ana", Action: runmodel.ActionCancel, Time: t0})
		b.Messages = append(b.Messages, runmodel.MessageIndex{Ref: ref, RunID: "r-1", Step: "s1", Role: chatmodel.RoleGate})
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, runmodel.RunAwaitingApproval, out.State)
	got, err = s.GetRun(ctx(), "r-1")
	require.NoError(t, err)
	assert.Equal(t, runmodel.RunAwaitingApproval, got.State)
	require.NotNil(t, got.Gate)
	assert.Equal(t, "g1", got.Gate.ID)
	j, err = s.Journal(ctx(), "r-1")
	require.NoError(t, err)
	require.Len(t, j, 2)
	assert.Equal(t, runmodel.JIntent, j[1].Type)
	assert.Equal(t, "abc", j[1].PlanHash)
	a, err = s.AuditEntries(ctx(), "r-1")
	require.NoError(t, err)
	require.Len(t, a, 1, "the batch's audit entries belong to the run")
	assert.Equal(t, "r-1", a[0].RunID)
	idx, err := s.RunByMessage(ctx(), ref)
	require.NoError(t, err)
	assert.Equal(t, runmodel.MessageIndex{Ref: ref, RunID: "r-1", Step: "s1", Role: chatmodel.RoleGate}, idx)
}

func testUpdateNotFound(t *testing.T, open Open) {
	s := open(t, Options{})
	called := false
	_, err := s.UpdateRun(ctx(), "r-none", func(*runmodel.Run, *runmodel.Batch) error { called = true; return nil })
	assert.ErrorIs(t, err, chatmodel.ErrNotFound)
	assert.False(t, called)
}

func testSpecRoundTrip(t *testing.T, open Open) {
	s := open(t, Options{})
	spec := &runbookmodel.Runbook{Name: "worker-stalled", Title: "Worker stalled", Tags: []string{"worker"},
		Steps: []runbookmodel.Step{{ID: "s1", Title: "List workers"}}, Source: "builtin/worker-stalled.yaml"}
	for i := range 3 {
		r := newRun(fmt.Sprintf("r-%d", i), t0.Add(time.Duration(i)*time.Second))
		r.Spec = spec
		require.NoError(t, s.CreateRun(ctx(), r, nil))
	}
	got, err := s.GetRun(ctx(), "r-1")
	require.NoError(t, err)
	require.NotNil(t, got.Spec)
	assert.Equal(t, "worker-stalled", got.Spec.Name)
	assert.Equal(t, []string{"worker"}, got.Spec.Tags)
	require.Len(t, got.Spec.Steps, 1)
	assert.Equal(t, "List workers", got.Spec.Steps[0].Title)
	// The spec survives updates.
	_, err = s.UpdateRun(ctx(), "r-1", func(r *runmodel.Run, _ *runmodel.Batch) error { r.Cursor = 1; return nil })
	require.NoError(t, err)
	got, err = s.GetRun(ctx(), "r-1")
	require.NoError(t, err)
	require.NotNil(t, got.Spec)
	assert.Equal(t, "Worker stalled", got.Spec.Title)
}

func ids(runs []*runmodel.Run) []string {
	out := []string{}
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return out
}

func testListOrder(t *testing.T, open Open) {
	s := open(t, Options{})
	all, err := s.ListRuns(ctx(), runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, all)
	for i := range 5 {
		require.NoError(t, s.CreateRun(ctx(), newRun(fmt.Sprintf("r-%d", i), t0.Add(time.Duration(i)*time.Minute)), nil))
	}
	all, err = s.ListRuns(ctx(), runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-3", "r-2", "r-1", "r-0"}, ids(all), "most recent first")
	some, err := s.ListRuns(ctx(), runmodel.RunQuery{Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-3"}, ids(some))
	since, err := s.ListRuns(ctx(), runmodel.RunQuery{Since: t0.Add(2 * time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-3", "r-2"}, ids(since), "Since is inclusive")
}

func testListActive(t *testing.T, open Open) {
	s := open(t, Options{})
	states := []runmodel.RunState{runmodel.RunRunning, runmodel.RunSucceeded, runmodel.RunAwaitingApproval, runmodel.RunFailed, runmodel.RunWaiting, runmodel.RunCancelled}
	for i, st := range states {
		r := newRun(fmt.Sprintf("r-%d", i), t0.Add(time.Duration(i)*time.Minute))
		r.State = st
		require.NoError(t, s.CreateRun(ctx(), r, nil))
	}
	act, err := s.ListRuns(ctx(), runmodel.RunQuery{Active: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-2", "r-0"}, ids(act))

	// A run that finishes leaves the active list; none comes back by itself.
	_, err = s.UpdateRun(ctx(), "r-2", func(r *runmodel.Run, _ *runmodel.Batch) error { r.State = runmodel.RunSucceeded; return nil })
	require.NoError(t, err)
	act, err = s.ListRuns(ctx(), runmodel.RunQuery{Active: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4", "r-0"}, ids(act))
	act, err = s.ListRuns(ctx(), runmodel.RunQuery{Active: true, Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4"}, ids(act))
	act, err = s.ListRuns(ctx(), runmodel.RunQuery{Active: true, Since: t0.Add(time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-4"}, ids(act))
}

func testListThread(t *testing.T, open Open) {
	s := open(t, Options{})
	a := newRun("r-a", t0)
	a.Conversation.Thread = "100.1"
	b := newRun("r-b", t0.Add(time.Minute))
	b.Conversation.Thread = "" // started at the top level: its root message is the thread
	b.Root = chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "100.1"}
	c := newRun("r-c", t0.Add(2*time.Minute))
	c.Conversation.Thread = "200.2"
	for _, r := range []*runmodel.Run{a, b, c} {
		require.NoError(t, s.CreateRun(ctx(), r, nil))
	}
	got, err := s.ListRuns(ctx(), runmodel.RunQuery{Thread: "100.1"})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-b", "r-a"}, ids(got))

	// A run whose root is posted later joins the thread of its root.
	_, err = s.UpdateRun(ctx(), "r-c", func(r *runmodel.Run, _ *runmodel.Batch) error {
		r.Root = chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "300.3"}
		return nil
	})
	require.NoError(t, err)
	got, err = s.ListRuns(ctx(), runmodel.RunQuery{Thread: "300.3"})
	require.NoError(t, err)
	assert.Equal(t, []string{"r-c"}, ids(got))
	got, err = s.ListRuns(ctx(), runmodel.RunQuery{Thread: "none"})
	require.NoError(t, err)
	assert.Empty(t, got)
}

func testRunByMessage(t *testing.T, open Open) {
	s := open(t, Options{})
	require.NoError(t, s.CreateRun(ctx(), newRun("r-1", t0), nil))
	slack := chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "1.1"}
	other := chatmodel.MessageRef{Platform: "slack", Channel: "C2", ID: "1.1"} // same ts, another channel
	mm := chatmodel.MessageRef{Platform: "mattermost", Channel: "C1", ID: "1.1"}
	_, err := s.UpdateRun(ctx(), "r-1", func(_ *runmodel.Run, b *runmodel.Batch) error {
		b.Messages = append(b.Messages,
			runmodel.MessageIndex{Ref: slack, RunID: "r-1", Step: "s1", Role: chatmodel.RoleGate},
			runmodel.MessageIndex{RunID: "r-1", Role: chatmodel.RoleStep}) // no ref: not indexed
		return nil
	})
	require.NoError(t, err)
	idx, err := s.RunByMessage(ctx(), slack)
	require.NoError(t, err)
	assert.Equal(t, "r-1", idx.RunID)
	assert.Equal(t, chatmodel.RoleGate, idx.Role)
	for _, ref := range []chatmodel.MessageRef{other, mm, {}} {
		_, err = s.RunByMessage(ctx(), ref)
		assert.ErrorIs(t, err, chatmodel.ErrNotFound, "%+v", ref)
	}
	// A later index entry for the same message replaces the earlier one.
	_, err = s.UpdateRun(ctx(), "r-1", func(_ *runmodel.Run, b *runmodel.Batch) error {
		b.Messages = append(b.Messages, runmodel.MessageIndex{Ref: slack, RunID: "r-1", Step: "s2", Role: chatmodel.RoleStep})
		return nil
	})
	require.NoError(t, err)
	idx, err = s.RunByMessage(ctx(), slack)
	require.NoError(t, err)
	assert.Equal(t, "s2", idx.Step)
}

// testConcurrentUpdates: updates of one run serialise; none works on a
// stale copy (every increment survives), and the journal numbers stay
// dense.
func testConcurrentUpdates(t *testing.T, open Open) {
	s := open(t, Options{})
	require.NoError(t, s.CreateRun(ctx(), newRun("r-1", t0), nil))
	require.NoError(t, s.CreateRun(ctx(), newRun("r-2", t0.Add(time.Second)), nil))
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for _, id := range []string{"r-1", "r-2"} {
					_, err := s.UpdateRun(ctx(), id, func(r *runmodel.Run, b *runmodel.Batch) error {
						r.Cursor++
						b.Note(runmodel.JournalEntry{Type: runmodel.JStepStarted, Step: fmt.Sprint(w)})
						return nil
					})
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for _, id := range []string{"r-1", "r-2"} {
		r, err := s.GetRun(ctx(), id)
		require.NoError(t, err)
		assert.Equal(t, workers*each, r.Cursor, "every update saw the one before it")
		j, err := s.Journal(ctx(), id)
		require.NoError(t, err)
		require.Len(t, j, workers*each)
		for i, e := range j {
			assert.Equal(t, uint64(i+1), e.Seq)
			assert.Equal(t, id, e.RunID)
		}
	}
}

func testLargeValues(t *testing.T, open Open) {
	s := open(t, Options{})
	big := strings.Repeat("worker-7f3a ", 100_000) // 1.2 MB
	r := newRun("r-big", t0)
	r.Steps[0].Detail = big
	r.Steps[0].Result = runmodel.RawJSON(`{"ids":[` + strings.Repeat("1234567,", 50_000) + `1]}`)
	require.NoError(t, s.CreateRun(ctx(), r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JStepDone, Message: big,
		Intent: &runmodel.IntentData{Op: "concourse.prune_worker", Items: []string{"worker:w-1"}, ApprovedBy: "@carol"}}}}))
	got, err := s.GetRun(ctx(), "r-big")
	require.NoError(t, err)
	assert.Equal(t, big, got.Steps[0].Detail)
	assert.JSONEq(t, string(r.Steps[0].Result), string(got.Steps[0].Result))
	j, err := s.Journal(ctx(), "r-big")
	require.NoError(t, err)
	require.Len(t, j, 1)
	assert.Equal(t, big, j[0].Message)
	assert.Equal(t, &runmodel.IntentData{Op: "concourse.prune_worker", Items: []string{"worker:w-1"}, ApprovedBy: "@carol"}, j[0].Intent)
	it := runmodel.OutboxItem{ID: "o1", Message: chatmodel.Message{Text: "t", Detail: big}, NextTry: t0}
	require.NoError(t, s.PutOutbox(ctx(), it))
	items, err := s.ListOutbox(ctx())
	require.NoError(t, err)
	require.Len(t, items, 1)
	assert.Equal(t, big, items[0].Message.Detail)
}

func testJournalSeq(t *testing.T, open Open) {
	s := open(t, Options{})
	j, err := s.Journal(ctx(), "r-none")
	require.NoError(t, err)
	assert.Empty(t, j)
	for _, id := range []string{"r-1", "r-2"} {
		require.NoError(t, s.CreateRun(ctx(), newRun(id, t0), &runmodel.Batch{Journal: []runmodel.JournalEntry{
			{Type: runmodel.JRunStarted, Time: t0, Actor: "ana"}}}))
	}
	_, err = s.UpdateRun(ctx(), "r-1", func(_ *runmodel.Run, b *runmodel.Batch) error {
		b.Note(runmodel.JournalEntry{Type: runmodel.JIntent, Step: "s1", Time: t0.Add(time.Second)})
		b.Note(runmodel.JournalEntry{Type: runmodel.JOutcome, Step: "s1", Outcome: runmodel.CallOutcome("ok"), Time: t0.Add(2 * time.Second)})
		return nil
	})
	require.NoError(t, err)
	j, err = s.Journal(ctx(), "R-1")
	require.NoError(t, err)
	require.Len(t, j, 3)
	for i, want := range []runmodel.JournalType{runmodel.JRunStarted, runmodel.JIntent, runmodel.JOutcome} {
		assert.Equal(t, want, j[i].Type)
		assert.Equal(t, uint64(i+1), j[i].Seq)
		assert.Equal(t, "r-1", j[i].RunID)
	}
	assert.Equal(t, "ana", j[0].Actor)
	assert.True(t, j[2].Time.Equal(t0.Add(2*time.Second)))
	assert.Equal(t, runmodel.CallOutcome("ok"), j[2].Outcome)
	j, err = s.Journal(ctx(), "r-2")
	require.NoError(t, err)
	require.Len(t, j, 1, "journals are per run")
	assert.Equal(t, uint64(1), j[0].Seq)
}

func testAuditChain(t *testing.T, open Open) {
	s := open(t, Options{})
	n, err := s.VerifyAudit(ctx())
	require.NoError(t, err)
	assert.Zero(t, n)
	require.NoError(t, s.CreateRun(ctx(), newRun("r-1", t0), &runmodel.Batch{Audit: []runmodel.AuditEntry{
		{Time: t0, Actor: "ana", Action: runmodel.ActionRunStarted, Target: "ci"}}}))
	require.NoError(t, s.AppendAudit(ctx(), runmodel.AuditEntry{Time: t0.Add(time.Second).In(time.FixedZone("CET", 3600)), Actor: "bob", Action: runmodel.ActionRunRefused, Detail: "not allowed"}))
	_, err = s.UpdateRun(ctx(), "r-1", func(_ *runmodel.Run, b *runmodel.Batch) error {
		b.Audit = append(b.Audit, runmodel.AuditEntry{Time: t0.Add(2 * time.Second), Actor: "ana", Action: runmodel.ActionCancel, Step: "s1"})
		return nil
	})
	require.NoError(t, err)
	all, err := s.AuditEntries(ctx(), "")
	require.NoError(t, err)
	require.Len(t, all, 3)
	prev := ""
	for i, e := range all {
		assert.Equal(t, uint64(i+1), e.Seq)
		assert.Equal(t, prev, e.Prev)
		assert.Equal(t, store.AuditHash(e), e.Hash, "the hash is the bbolt store's, so a copied log verifies")
		assert.Equal(t, time.UTC, e.Time.Location())
		prev = e.Hash
	}
	assert.Equal(t, "r-1", all[0].RunID)
	assert.Equal(t, "", all[1].RunID)
	assert.Equal(t, "r-1", all[2].RunID)
	assert.Equal(t, "not allowed", all[1].Detail)
	mine, err := s.AuditEntries(ctx(), "r-1")
	require.NoError(t, err)
	require.Len(t, mine, 2)
	assert.Equal(t, []uint64{1, 3}, []uint64{mine[0].Seq, mine[1].Seq})
	n, err = s.VerifyAudit(ctx())
	require.NoError(t, err)
	assert.Equal(t, 3, n)
}

func testAuditHead(t *testing.T, open Open) {
	s := open(t, Options{})
	h, err := s.AuditHead(ctx())
	require.NoError(t, err)
	assert.Equal(t, runmodel.AuditHead{}, h)
	require.NoError(t, s.VerifyAuditHead(ctx(), runmodel.AuditHead{}))
	for i := range 3 {
		require.NoError(t, s.AppendAudit(ctx(), runmodel.AuditEntry{Time: t0, Actor: fmt.Sprint(i), Action: runmodel.ActionRunStarted}))
	}
	all, err := s.AuditEntries(ctx(), "")
	require.NoError(t, err)
	h, err = s.AuditHead(ctx())
	require.NoError(t, err)
	assert.Equal(t, runmodel.AuditHead{Count: 3, Hash: all[2].Hash}, h)
	require.NoError(t, s.VerifyAuditHead(ctx(), h))
	require.NoError(t, s.VerifyAuditHead(ctx(), runmodel.AuditHead{Count: 2, Hash: all[1].Hash[:12]}), "a prefix of 12 characters")
	assert.ErrorIs(t, s.VerifyAuditHead(ctx(), runmodel.AuditHead{Count: 5, Hash: all[2].Hash}), store.ErrAuditCut)
	assert.ErrorIs(t, s.VerifyAuditHead(ctx(), runmodel.AuditHead{Count: 2, Hash: all[2].Hash}), store.ErrAuditCut)
}

func testAuditConcurrent(t *testing.T, open Open) {
	s := open(t, Options{})
	var wg sync.WaitGroup
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.AppendAudit(ctx(), runmodel.AuditEntry{Time: t0, Actor: fmt.Sprint(i), Action: runmodel.ActionRunStarted})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := s.VerifyAudit(ctx())
	require.NoError(t, err, "concurrent appends keep one chain")
	assert.Equal(t, n, got)
}

func testDedupe(t *testing.T, open Open) {
	s := open(t, Options{EventTTL: time.Hour})
	seen, err := s.SeenEvent(ctx(), "ev-1", t0)
	require.NoError(t, err)
	assert.False(t, seen)
	seen, err = s.SeenEvent(ctx(), "ev-1", t0.Add(time.Minute))
	require.NoError(t, err)
	assert.True(t, seen)
	_, err = s.SeenEvent(ctx(), "ev-2", t0.Add(50*time.Minute))
	require.NoError(t, err)

	res, err := s.Housekeep(ctx(), t0.Add(61*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, res.Events, "only ids older than the TTL are forgotten")
	seen, err = s.SeenEvent(ctx(), "ev-2", t0.Add(62*time.Minute))
	require.NoError(t, err)
	assert.True(t, seen)
	seen, err = s.SeenEvent(ctx(), "ev-1", t0.Add(62*time.Minute))
	require.NoError(t, err)
	assert.False(t, seen, "a forgotten id counts as new")
}

func testOutbox(t *testing.T, open Open) {
	s := open(t, Options{})
	items, err := s.ListOutbox(ctx())
	require.NoError(t, err)
	assert.Empty(t, items)
	to := chatmodel.Conversation{Platform: "slack", Channel: "C1", Thread: "1.1"}
	for _, id := range []string{"b", "a", "c"} {
		require.NoError(t, s.PutOutbox(ctx(), runmodel.OutboxItem{ID: id, To: to, Message: chatmodel.Message{Text: "hello " + id},
			RunID: "r-1", Role: chatmodel.RoleStep, NextTry: t0, Queued: t0}))
	}
	require.NoError(t, s.PutOutbox(ctx(), runmodel.OutboxItem{ID: "a", To: to, Message: chatmodel.Message{Text: "hello a"},
		Attempts: 3, LastErr: "rate limited", NextTry: t0.Add(time.Minute), Queued: t0, GaveUp: true}))
	items, err = s.ListOutbox(ctx())
	require.NoError(t, err)
	require.Len(t, items, 3)
	assert.Equal(t, []string{"a", "b", "c"}, []string{items[0].ID, items[1].ID, items[2].ID}, "ordered by id")
	assert.Equal(t, 3, items[0].Attempts, "a put replaces")
	assert.True(t, items[0].GaveUp)
	assert.Equal(t, "rate limited", items[0].LastErr)
	assert.Equal(t, to, items[1].To)
	assert.Equal(t, "hello b", items[1].Message.Text)
	require.NoError(t, s.DeleteOutbox(ctx(), "b"))
	require.NoError(t, s.DeleteOutbox(ctx(), "none"), "deleting what is gone is no error")
	items, err = s.ListOutbox(ctx())
	require.NoError(t, err)
	assert.Len(t, items, 2)
}

func testKV(t *testing.T, open Open) {
	s := open(t, Options{})
	v, err := s.GetKV(ctx(), "missing")
	require.NoError(t, err)
	assert.Nil(t, v)
	require.NoError(t, s.PutKV(ctx(), "watch/last", []byte(`{"a":1}`)))
	require.NoError(t, s.PutKV(ctx(), "bin", []byte{0, 1, 2, 255}))
	v, err = s.GetKV(ctx(), "watch/last")
	require.NoError(t, err)
	assert.Equal(t, []byte(`{"a":1}`), v)
	v, err = s.GetKV(ctx(), "bin")
	require.NoError(t, err)
	assert.Equal(t, []byte{0, 1, 2, 255}, v)
	require.NoError(t, s.PutKV(ctx(), "bin", []byte("x")))
	v, err = s.GetKV(ctx(), "bin")
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), v)
}

func testDigests(t *testing.T, open Open) {
	s := open(t, Options{})
	rec, err := s.LastDigest(ctx(), "daily")
	require.NoError(t, err)
	assert.Nil(t, rec)
	assert.Error(t, s.SaveDigest(ctx(), "", digest.Record{}))
	want := digest.Record{Fire: t0, State: digest.State("posted"), Posted: t0.Add(time.Second),
		Ref: chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "9.9"}}
	require.NoError(t, s.SaveDigest(ctx(), "daily", want))
	rec, err = s.LastDigest(ctx(), "daily")
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.True(t, rec.Fire.Equal(t0))
	assert.Equal(t, want.Ref, rec.Ref)
	assert.Equal(t, want.State, rec.State)
	want.Attempts = 2
	require.NoError(t, s.SaveDigest(ctx(), "daily", want))
	rec, err = s.LastDigest(ctx(), "daily")
	require.NoError(t, err)
	assert.Equal(t, 2, rec.Attempts)
}

func newIncident(id, key string, opened time.Time) *incident.Incident {
	return &incident.Incident{ID: id, Key: key, Title: "Worker stalled", Channel: "C1", State: incident.StateOpen,
		Evidence: []string{"w1 stalled 12 min"}, OpenedAt: opened, UpdatedAt: opened, Notifications: 1}
}

func testIncidents(t *testing.T, open Open) {
	s := open(t, Options{})
	_, err := s.GetIncident(ctx(), "i-none")
	assert.ErrorIs(t, err, incident.ErrNotFound)
	_, err = s.UpdateIncident(ctx(), "i-none", func(*incident.Incident) error { return nil })
	assert.ErrorIs(t, err, incident.ErrNotFound)

	got, err := s.UpsertIncident(ctx(), "k1", func(cur *incident.Incident) (*incident.Incident, error) {
		assert.Nil(t, cur)
		return newIncident("i-1", "k1", t0), nil
	})
	require.NoError(t, err)
	assert.Equal(t, "i-1", got.ID)
	// The next upsert of the key sees the incident.
	got, err = s.UpsertIncident(ctx(), "k1", func(cur *incident.Incident) (*incident.Incident, error) {
		require.NotNil(t, cur)
		cur.Notifications++
		return cur, nil
	})
	require.NoError(t, err)
	assert.Equal(t, 2, got.Notifications)
	// nil writes nothing.
	got, err = s.UpsertIncident(ctx(), "k1", func(cur *incident.Incident) (*incident.Incident, error) { return nil, nil })
	require.NoError(t, err)
	assert.Nil(t, got)
	// An error writes nothing.
	_, err = s.UpsertIncident(ctx(), "k2", func(*incident.Incident) (*incident.Incident, error) {
		return newIncident("i-2", "k2", t0), assert.AnError
	})
	assert.ErrorIs(t, err, assert.AnError)
	_, err = s.GetIncident(ctx(), "i-2")
	assert.ErrorIs(t, err, incident.ErrNotFound)
	// A key must match; an id is never reused.
	_, err = s.UpsertIncident(ctx(), "k2", func(*incident.Incident) (*incident.Incident, error) {
		return newIncident("i-2", "other", t0), nil
	})
	assert.Error(t, err)
	_, err = s.UpsertIncident(ctx(), "k2", func(*incident.Incident) (*incident.Incident, error) {
		return newIncident("i-1", "k2", t0), nil
	})
	assert.ErrorIs(t, err, runmodel.ErrExists)

	_, err = s.UpsertIncident(ctx(), "k2", func(*incident.Incident) (*incident.Incident, error) {
		return newIncident("i-2", "k2", t0.Add(time.Hour)), nil
	})
	require.NoError(t, err)
	_, err = s.UpsertIncident(ctx(), "k3", func(*incident.Incident) (*incident.Incident, error) {
		return newIncident("i-3", "k3", t0.Add(2*time.Hour)), nil
	})
	require.NoError(t, err)
	got, err = s.UpdateIncident(ctx(), "i-2", func(in *incident.Incident) error {
		in.State, in.ResolvedAt = incident.StateResolved, t0.Add(3*time.Hour)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, incident.StateResolved, got.State)

	all, err := s.ListIncidents(ctx(), incident.Query{})
	require.NoError(t, err)
	assert.Equal(t, []string{"i-3", "i-2", "i-1"}, incidentIDs(all), "most recently opened first")
	opened, err := s.ListIncidents(ctx(), incident.Query{Open: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"i-3", "i-1"}, incidentIDs(opened))
	one, err := s.ListIncidents(ctx(), incident.Query{Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"i-3"}, incidentIDs(one))

	// A resolved key starts a new incident: the latest is what upsert sees.
	_, err = s.UpsertIncident(ctx(), "k2", func(cur *incident.Incident) (*incident.Incident, error) {
		require.NotNil(t, cur)
		assert.Equal(t, "i-2", cur.ID)
		return newIncident("i-4", "k2", t0.Add(4*time.Hour)), nil
	})
	require.NoError(t, err)
	_, err = s.UpsertIncident(ctx(), "k2", func(cur *incident.Incident) (*incident.Incident, error) {
		require.NotNil(t, cur)
		assert.Equal(t, "i-4", cur.ID)
		return nil, nil
	})
	require.NoError(t, err)
	old, err := s.GetIncident(ctx(), "i-2")
	require.NoError(t, err)
	assert.Equal(t, incident.StateResolved, old.State)
	assert.Equal(t, []string{"w1 stalled 12 min"}, old.Evidence)
}

func incidentIDs(in []*incident.Incident) []string {
	out := []string{}
	for _, i := range in {
		out = append(out, i.ID)
	}
	return out
}

func testIncidentByMessage(t *testing.T, open Open) {
	s := open(t, Options{})
	root := chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "5.5"}
	_, err := s.IncidentByMessage(ctx(), root)
	assert.ErrorIs(t, err, incident.ErrNotFound)
	_, err = s.UpsertIncident(ctx(), "k1", func(*incident.Incident) (*incident.Incident, error) {
		return newIncident("i-1", "k1", t0), nil
	})
	require.NoError(t, err)
	_, err = s.UpdateIncident(ctx(), "i-1", func(in *incident.Incident) error { in.Root = root; return nil })
	require.NoError(t, err)
	got, err := s.IncidentByMessage(ctx(), root)
	require.NoError(t, err)
	assert.Equal(t, "i-1", got.ID)
	_, err = s.IncidentByMessage(ctx(), chatmodel.MessageRef{Platform: "slack", Channel: "C2", ID: "5.5"})
	assert.ErrorIs(t, err, incident.ErrNotFound)
}

func testIncidentConcurrent(t *testing.T, open Open) {
	s := open(t, Options{})
	const n = 30
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.UpsertIncident(ctx(), "storm", func(cur *incident.Incident) (*incident.Incident, error) {
				if cur == nil {
					in := newIncident("i-storm", "storm", t0)
					in.Notifications = 0
					cur = in
				}
				cur.Notifications++
				return cur, nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := s.GetIncident(ctx(), "i-storm")
	require.NoError(t, err)
	assert.Equal(t, n, got.Notifications, "upserts of one key serialise: one incident, every notification counted")
	all, err := s.ListIncidents(ctx(), incident.Query{})
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

func testRetention(t *testing.T, open Open) {
	s := open(t, Options{Retention: 24 * time.Hour, EventTTL: time.Hour})
	now := t0.Add(30 * 24 * time.Hour)
	type spec struct {
		id       string
		created  time.Duration // before now
		finished time.Duration // before now; 0 = still active
		kept     bool
	}
	runs := []spec{
		{"r-old", 72 * time.Hour, 48 * time.Hour, false},
		{"r-old-active", 72 * time.Hour, 0, true},
		{"r-long", 72 * time.Hour, time.Hour, true}, // started long ago, finished recently
		{"r-recent", 2 * time.Hour, time.Hour, true},
	}
	for i, r := range runs {
		run := newRun(r.id, now.Add(-r.created).Add(time.Duration(i)*time.Second))
		ref := chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "m-" + r.id}
		require.NoError(t, s.CreateRun(ctx(), run, &runmodel.Batch{
			Journal:  []runmodel.JournalEntry{{Type: runmodel.JRunStarted}},
			Audit:    []runmodel.AuditEntry{{Time: run.CreatedAt, Actor: "ana", Action: runmodel.ActionRunStarted}},
			Messages: []runmodel.MessageIndex{{Ref: ref, RunID: r.id, Role: chatmodel.RoleRoot}}}))
		if r.finished > 0 {
			_, err := s.UpdateRun(ctx(), r.id, func(run *runmodel.Run, _ *runmodel.Batch) error {
				run.State, run.FinishedAt, run.UpdatedAt = runmodel.RunSucceeded, now.Add(-r.finished), now.Add(-r.finished)
				return nil
			})
			require.NoError(t, err)
		}
	}
	_, err := s.SeenEvent(ctx(), "ev-old", now.Add(-2*time.Hour))
	require.NoError(t, err)

	res, err := s.Housekeep(ctx(), now)
	require.NoError(t, err)
	assert.Equal(t, [3]int{1, 1, 1}, [3]int{res.Events, res.Runs, res.Messages}, "event ids, runs, message references deleted")
	for _, r := range runs {
		_, err := s.GetRun(ctx(), r.id)
		_, merr := s.RunByMessage(ctx(), chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "m-" + r.id})
		j, jerr := s.Journal(ctx(), r.id)
		require.NoError(t, jerr)
		if r.kept {
			assert.NoError(t, err, r.id)
			assert.NoError(t, merr, r.id)
			assert.Len(t, j, 1, r.id)
		} else {
			assert.ErrorIs(t, err, chatmodel.ErrNotFound, r.id)
			assert.ErrorIs(t, merr, chatmodel.ErrNotFound, "the message index of a deleted run goes with it")
			assert.Empty(t, j, "the journal of a deleted run goes with it")
		}
	}
	all, err := s.ListRuns(ctx(), runmodel.RunQuery{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"r-old-active", "r-long", "r-recent"}, ids(all))
	th, err := s.ListRuns(ctx(), runmodel.RunQuery{Thread: "T-r-old"})
	require.NoError(t, err)
	assert.Empty(t, th)
	// The audit log is never pruned and still verifies.
	n, err := s.VerifyAudit(ctx())
	require.NoError(t, err)
	assert.Equal(t, len(runs), n)
	// A second pass finds nothing to do.
	res, err = s.Housekeep(ctx(), now)
	require.NoError(t, err)
	assert.Equal(t, [3]int{0, 0, 0}, [3]int{res.Events, res.Runs, res.Messages})
}

// testListFiltersAndPages: runs are selected by state, runbook and target,
// and a listing read page by page (After = the last run of the previous
// page) gives every run once, in the order of the whole listing, for each
// kind of listing.
func testListFiltersAndPages(t *testing.T, open Open) {
	s := open(t, Options{})
	states := []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunRunning, runmodel.RunSucceeded}
	for i := range 11 {
		r := newRun(fmt.Sprintf("r-%02d", i), t0.Add(time.Duration(i)*time.Minute))
		r.State = states[i%len(states)]
		if i%3 == 0 {
			r.Runbook = "prune"
		}
		if i%2 == 0 {
			r.Target = "infra-prd"
		}
		r.Conversation.Thread = "T"
		require.NoError(t, s.CreateRun(ctx(), r, nil))
	}
	list := func(q runmodel.RunQuery) []string {
		t.Helper()
		rs, err := s.ListRuns(ctx(), q)
		require.NoError(t, err)
		return ids(rs)
	}
	assert.Equal(t, []string{"r-09", "r-03", "r-00"}, list(runmodel.RunQuery{Runbook: "prune", States: []runmodel.RunState{runmodel.RunFailed, runmodel.RunSucceeded}}))
	assert.Equal(t, []string{"r-10", "r-06", "r-02"}, list(runmodel.RunQuery{Target: "infra-prd", States: []runmodel.RunState{runmodel.RunRunning}}))
	assert.Equal(t, []string{"r-10", "r-06"}, list(runmodel.RunQuery{Target: "infra-prd", Since: t0.Add(5 * time.Minute), States: []runmodel.RunState{runmodel.RunRunning}}))
	assert.Equal(t, []string{"r-10"}, list(runmodel.RunQuery{Active: true, Target: "infra-prd", Limit: 1}))
	assert.Empty(t, list(runmodel.RunQuery{Runbook: "none"}))

	for _, q := range []runmodel.RunQuery{{}, {Thread: "T"}, {Active: true}, {Target: "infra-prd"}} {
		want := list(q)
		require.NotEmpty(t, want)
		var got []string
		page := q
		page.Limit = 2
		for range 20 {
			rs, err := s.ListRuns(ctx(), page)
			require.NoError(t, err)
			if len(rs) == 0 {
				break
			}
			got = append(got, ids(rs)...)
			last := rs[len(rs)-1]
			page.After = runmodel.RunCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		assert.Equal(t, want, got, "%+v page by page", q)
	}
}

// testAuditPages: the audit log read a page at a time (AuditAfter the last
// sequence number of the previous page) is the whole log, in order.
func testAuditPages(t *testing.T, open Open) {
	s := open(t, Options{})
	for i := range 7 {
		require.NoError(t, s.AppendAudit(ctx(), runmodel.AuditEntry{Time: t0, Actor: "ana", Action: runmodel.ActionRunStarted, RunID: fmt.Sprintf("r-%d", i)}))
	}
	all, err := s.AuditEntries(ctx(), "")
	require.NoError(t, err)
	var got []runmodel.AuditEntry
	var after uint64
	for range 10 {
		page, err := s.AuditAfter(ctx(), after, 3)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		assert.LessOrEqual(t, len(page), 3)
		got = append(got, page...)
		after = page[len(page)-1].Seq
	}
	assert.Equal(t, all, got)
	rest, err := s.AuditAfter(ctx(), 5, 100)
	require.NoError(t, err)
	require.Len(t, rest, 2)
	assert.Equal(t, uint64(6), rest[0].Seq)
}

// testListFilteredAgreesWithTheWholeListing: a listing filtered by
// runbook, target, state and since (the filters a store may answer from
// an index) selects, in the same order, exactly the runs of the whole
// listing that match — after runs changed state, runs created in the same
// second, and finished runs deleted by retention — and reads page by page
// the same runs.
func testListFilteredAgreesWithTheWholeListing(t *testing.T, open Open) {
	s := open(t, Options{Retention: 24 * time.Hour})
	rng := rand.New(rand.NewPCG(7, 34))
	runbooks := []string{"worker-stalled", "prune", "abort-pending", "rare"}
	targets := []string{"infra-prd", "ocb", "ci"}
	states := []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled, runmodel.RunRunning, runmodel.RunAwaitingApproval}
	const n = 160
	for i := range n {
		// two runs a minute, some within the same second
		r := newRun(fmt.Sprintf("r-%03d", i), t0.Add(time.Duration(i/2)*time.Minute+time.Duration(rng.IntN(2))*time.Second))
		r.Runbook = runbooks[rng.IntN(len(runbooks)-1)]
		if i%40 == 7 {
			r.Runbook = "rare"
		}
		r.Target = targets[rng.IntN(len(targets))]
		r.State = runmodel.RunRunning
		r.Conversation.Thread = ""
		require.NoError(t, s.CreateRun(ctx(), r, nil))
	}
	// most runs end, some at once, some after a wait; some end long ago
	now := t0.Add(40 * 24 * time.Hour)
	for i := range n {
		st := states[rng.IntN(len(states))]
		_, err := s.UpdateRun(ctx(), fmt.Sprintf("r-%03d", i), func(r *runmodel.Run, _ *runmodel.Batch) error {
			if st == runmodel.RunAwaitingApproval {
				r.State = st
				return nil
			}
			r.State, r.FinishedAt, r.UpdatedAt = runmodel.RunAwaitingApproval, r.CreatedAt, r.CreatedAt
			return nil
		})
		require.NoError(t, err)
		if st == runmodel.RunAwaitingApproval || st == runmodel.RunRunning {
			continue
		}
		_, err = s.UpdateRun(ctx(), fmt.Sprintf("r-%03d", i), func(r *runmodel.Run, _ *runmodel.Batch) error {
			r.State, r.FinishedAt, r.UpdatedAt = st, r.CreatedAt.Add(time.Minute), r.CreatedAt.Add(time.Minute)
			if i >= n/2 {
				r.FinishedAt, r.UpdatedAt = now, now // the recent half is kept
			}
			return nil
		})
		require.NoError(t, err)
	}
	res, err := s.Housekeep(ctx(), now.Add(time.Hour))
	require.NoError(t, err)
	require.Positive(t, res.Runs, "retention deleted the runs that ended long ago")

	all, err := s.ListRuns(ctx(), runmodel.RunQuery{})
	require.NoError(t, err)
	finished := []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled}
	queries := []runmodel.RunQuery{
		{Runbook: "rare"},
		{Runbook: "prune"},
		{Target: "ocb"},
		{States: []runmodel.RunState{runmodel.RunFailed}},
		{States: []runmodel.RunState{runmodel.RunAwaitingApproval}},
		{Runbook: "prune", Target: "infra-prd"},
		{Runbook: "worker-stalled", States: []runmodel.RunState{runmodel.RunCancelled}},
		{Runbook: "abort-pending", Target: "ci", States: []runmodel.RunState{runmodel.RunSucceeded}},
		{Runbook: "prune", States: finished},
		{Target: "infra-prd", States: finished, Since: t0.Add(50 * time.Minute)},
		{Runbook: "rare", Target: "ocb", States: []runmodel.RunState{runmodel.RunFailed}, Since: t0.Add(time.Hour)},
		{Runbook: "nothing-of-that-name"},
	}
	for _, q := range queries {
		want := []string{}
		for _, r := range all {
			if (q.Runbook == "" || r.Runbook == q.Runbook) && (q.Target == "" || r.Target == q.Target) &&
				(len(q.States) == 0 || slices.Contains(q.States, r.State)) && (q.Since.IsZero() || !r.CreatedAt.Before(q.Since)) {
				want = append(want, r.ID)
			}
		}
		got, err := s.ListRuns(ctx(), q)
		require.NoError(t, err)
		assert.Equal(t, want, ids(got), "%+v", q)
		// page by page, 3 at a time
		paged := []string{}
		page := q
		page.Limit = 3
		for range n {
			rs, err := s.ListRuns(ctx(), page)
			require.NoError(t, err)
			if len(rs) == 0 {
				break
			}
			assert.LessOrEqual(t, len(rs), 3)
			paged = append(paged, ids(rs)...)
			last := rs[len(rs)-1]
			page.After = runmodel.RunCursor{CreatedAt: last.CreatedAt, ID: last.ID}
		}
		assert.Equal(t, want, paged, "%+v page by page", q)
	}
}
