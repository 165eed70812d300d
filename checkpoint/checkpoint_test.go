package checkpoint_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/checkpoint"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/delivery/deliverytest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

type posts struct {
	mu  sync.Mutex
	got []string
	to  []chatmodel.Conversation
}

func (p *posts) Post(_ context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got, p.to = append(p.got, m.Text), append(p.to, to)
	return chatmodel.MessageRef{Channel: to.Channel, ID: "m"}, nil
}

func (p *posts) texts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

func openStore(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "gc.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestLogAtStartAndAfterEachRun(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	var logs bytes.Buffer
	c := checkpoint.New(checkpoint.Options{Heads: db, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c.Log(ctx, "start")
	assert.Contains(t, logs.String(), `msg="audit head" head=0: when=start`)

	s := c.Store(db)
	r := &runmodel.Run{ID: "r-1", State: runmodel.RunRunning}
	require.NoError(t, s.CreateRun(ctx, r, &runmodel.Batch{Audit: []runmodel.AuditEntry{{Actor: "alice", Action: "run_started"}}}))
	logs.Reset()
	_, err := s.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Cursor++
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, logs.String(), "a run that goes on logs nothing")

	_, err = s.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
		r.State = runmodel.RunSucceeded
		b.AuditLog(runmodel.AuditEntry{Actor: "groundcrew", Action: "run_succeeded"})
		return nil
	})
	require.NoError(t, err)
	head, err := db.AuditHead(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), head.Count)
	assert.Contains(t, logs.String(), "head="+head.String()+` when="run r-1 succeeded"`, "logged after the commit, with the entry the run end wrote")
	assert.Contains(t, logs.String(), `verify="groundcrew audit verify --expect `+head.String()+`"`)

	logs.Reset()
	_, err = s.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error { return nil })
	require.NoError(t, err)
	assert.Empty(t, logs.String(), "only the transition to the end is logged")
}

func TestPostOnSchedule(t *testing.T) {
	db := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chat := &posts{}
	ticks := make(chan time.Time)
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	c := checkpoint.New(checkpoint.Options{Heads: db, Chat: chat, Channel: "#ci-audit", Platform: "slack", Ticks: ticks,
		Now: func() time.Time { return now }})
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()

	tick := func() { ticks <- now; ticks <- now } // the second send waits until the first tick's post is done
	tick()
	require.Len(t, chat.texts(), 1, "posted at start")
	assert.Equal(t, "🧾 *Audit checkpoint* 2026-12-01 09:00 UTC — 0 entries, head `0:`\nCheck the log still holds it: `groundcrew audit verify --expect 0:`", chat.texts()[0])
	assert.Equal(t, chatmodel.Conversation{Platform: "slack", Channel: "#ci-audit"}, chat.to[0])

	require.NoError(t, db.AppendAudit(ctx, runmodel.AuditEntry{Actor: "alice", Action: "approve"}))
	tick()
	require.Len(t, chat.texts(), 2)
	head, _ := db.AuditHead(ctx)
	assert.Contains(t, chat.texts()[1], "1 entry, head `"+head.String()+"`")
	assert.True(t, strings.HasSuffix(chat.texts()[1], "`groundcrew audit verify --expect "+head.String()+"`"))
	tick()
	assert.Len(t, chat.texts(), 2, "an unchanged head is not posted again")

	cancel()
	require.NoError(t, <-done)
}

func TestNoChannelNoPosts(t *testing.T) {
	chat := &posts{}
	c := checkpoint.New(checkpoint.Options{Heads: openStore(t), Chat: chat})
	require.NoError(t, c.Run(context.Background()), "returns at once")
	assert.Empty(t, chat.texts())
}

// TestPost_ChatDownThenBack: a head posted while chat is down is posted
// once chat is back, and a restart in between loses nothing (the outbox
// is the store's).
func TestPost_ChatDownThenBack(t *testing.T) {
	db := openStore(t)
	ctx := context.Background()
	chat := &deliverytest.Chat{}
	now := time.Date(2026, 3, 4, 3, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ob := delivery.New(delivery.Options{Chat: chat, Store: db, Now: clock})
	c := checkpoint.New(checkpoint.Options{Heads: db, Outbox: ob, Channel: "#audit", Now: clock})
	chat.Down()
	require.NoError(t, c.Post(ctx), "a head chat did not take is queued, not an error")
	ob.Flush(ctx)
	assert.Empty(t, chat.Posts())

	// restart while chat is still down: a new process, the same store
	ob = delivery.New(delivery.Options{Chat: chat, Store: db, Now: clock})
	now = now.Add(time.Minute)
	ob.Flush(ctx)
	chat.Up()
	now = now.Add(10 * time.Second)
	ob.Flush(ctx)
	posts := chat.Posts()
	require.Len(t, posts, 1, "posted once chat is back")
	assert.Contains(t, posts[0].Message.Text, "Audit checkpoint")
	assert.Equal(t, "#audit", posts[0].To.Channel)
	now = now.Add(time.Hour)
	ob.Flush(ctx)
	assert.Len(t, chat.Posts(), 1, "not twice")
	left, err := db.ListOutbox(ctx)
	require.NoError(t, err)
	assert.Empty(t, left)
}
