// Package delivery is the one way every subsystem posts to chat: the
// engine's run messages, incidents, digests and audit checkpoints. It
// sanitises every message, posts it at once when it can and otherwise keeps
// it in a durable outbox (the store) that is retried with backoff, so a
// chat outage or a restart loses nothing. Within a thread the order is
// kept: a post waits behind an earlier one of the same thread that is still
// queued, and a reply to a root that is not posted yet waits for the root
// and is posted in its thread. A platform that says to slow down (a
// *chatmodel.RateLimitedError) pauses posting until it said; edits marked
// Coalesce are sent at most once per Options.EditEvery per message, the
// latest state winning, and Drain sends the last ones at shutdown.
//
// A chat server that accepts connections and never answers holds nobody
// up: every chat call has a deadline of its own (Options.CallTimeout); a
// channel whose posts are failing gets its new posts queued without a try
// (the queue's probe finds out when chat answers again); and with Run, the
// queue is posted by the outbox's own goroutine — a caller that must not
// wait for chat at all (an Alertmanager webhook) posts with Meta.Queue,
// and the engine's tick only wakes that goroutine.
//
// It is built as Alertmanager's notify pipeline is: one stage per concern
// (sanitise, order, rate limit, coalesce, retry), in one place.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Defaults of Options.
const (
	DefaultMaxAttempts = 10
	DefaultMaxBackoff  = 8 * time.Minute
	DefaultEditEvery   = 3 * time.Second
	DefaultProbeEvery  = 5 * time.Second
	// DefaultCallTimeout bounds one chat call (a post with its extra
	// parts, an edit, an ephemeral answer).
	DefaultCallTimeout = 20 * time.Second
	// flushEvery is how often Run looks at the queue when nothing wakes it.
	flushEvery = time.Second
)

// ErrGaveUp is returned for a post that can never be delivered (the
// platform said so, ErrCannotPost) or failed too often; it is kept in the
// store, marked given up, for /runbook status.
var ErrGaveUp = errors.New("chat post given up")

// Options configure an Outbox.
type Options struct {
	Chat chatmodel.Chat
	// Store keeps the queue; nil keeps it in memory only (nothing
	// survives a restart: for a subsystem used on its own and tests).
	Store runmodel.Outbox
	// Logger (default: discard) and Now (default time.Now).
	Logger *slog.Logger
	Now    func() time.Time
	// MaxAttempts is how many failed tries a post gets before it is given
	// up; the pause between tries doubles from 2 s up to MaxBackoff.
	MaxAttempts int
	MaxBackoff  time.Duration
	// ProbeEvery: while a channel's posts wait out their backoff, the
	// oldest is tried again this often without counting an attempt, so
	// the queue follows within seconds once chat is back.
	ProbeEvery time.Duration
	// EditEvery is the least time between two coalesced edits of one message.
	EditEvery time.Duration
	// CallTimeout is the deadline of each chat call the outbox makes, of
	// its own whatever the caller's context says (default
	// DefaultCallTimeout): a hung chat server fails the call, which is
	// queued and retried, instead of holding the caller.
	CallTimeout time.Duration
}

// Meta says who posts a message and what it is; it is stored with a
// queued item and handed back to the sender's Receiver on delivery.
type Meta struct {
	// From names the sender ("run", "incident", "digest", "checkpoint").
	From string
	// Key is the sender's own reference (an incident id, a digest key).
	Key string
	// RunID, Step and Role: the engine's run messages.
	RunID string
	Step  string
	Role  chatmodel.MessageRole
	// Coalesce (edits): at most one edit of the message per EditEvery,
	// the latest state wins.
	Coalesce bool
	// Queue: the caller never waits for chat. The post (or edit) is
	// stored and posted by the outbox's goroutine (Run), at once when chat
	// answers; its handle is Pending. Without Run it is tried at once, as
	// any post (tests, a subsystem used on its own).
	Queue bool
}

// Handle names a message: Ref once it is posted, else Pending, the
// outbox item that will post it.
type Handle struct {
	Ref     chatmodel.MessageRef `json:"ref,omitzero"`
	Pending string               `json:"pending,omitempty"`
}

// IsZero reports whether the handle names nothing.
func (h Handle) IsZero() bool { return h.Ref.IsZero() && h.Pending == "" }

// Receiver is what a sender registers to hear about its queued posts.
type Receiver struct {
	// Delivered is called once a queued post went through (not for a post
	// that went through at once: Post returned its reference then).
	Delivered func(ctx context.Context, it runmodel.OutboxItem, ref chatmodel.MessageRef)
	// Posting, when set, is called before each retried post of the
	// sender; the func it returns is called after Delivered.
	Posting func() (done func())
	// Save, when set, performs the sender's store writes of the outbox
	// (the engine's retried, loud writer); default: three tries, then an
	// error log.
	Save func(ctx context.Context, runID, what string, write func() error) error
}

// Poster is what a subsystem needs of the Outbox to post (Outbox
// implements it); subsystems declare it, or a narrower one, as their port.
type Poster interface {
	Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message, meta Meta) (Handle, error)
	Reply(ctx context.Context, to chatmodel.Conversation, root Handle, m chatmodel.Message, meta Meta) (Handle, error)
	Update(ctx context.Context, h Handle, m chatmodel.Message, meta Meta) error
	Ephemeral(ctx context.Context, to chatmodel.Conversation, user chatmodel.User, m chatmodel.Message) error
	Register(from string, r Receiver)
}

var _ Poster = (*Outbox)(nil)

// Outbox delivers messages to chat. It is safe for concurrent use.
type Outbox struct {
	o Options
	// flushing serialises flushes: two at once would post an item twice.
	flushing sync.Mutex

	mu        sync.Mutex
	receivers map[string]Receiver
	loaded    bool
	// queue mirrors the stored items (plus those the store refused), by id.
	queue map[string]runmodel.OutboxItem
	// unsaved are queued items the store refused: retried while the process lives.
	unsaved map[string]bool
	// delivered are items posted whose deletion failed: never posted again.
	delivered map[string]bool
	// posted maps a delivered post's item id to its reference (a reply or
	// edit naming a pending root that has gone out meanwhile); postedIDs
	// keeps their order, so only the last maxPosted are kept.
	posted    map[string]chatmodel.MessageRef
	postedIDs []string
	// lastEdit is when each message was last edited (coalescing).
	lastEdit map[string]time.Time
	// probed is when a channel's queue was last probed.
	probed map[string]time.Time
	// pausedUntil: the platform asked to slow down until then.
	pausedUntil time.Time
	seq         uint64
	// running is set while Run posts the queue; wake wakes it.
	running bool
	wake    chan struct{}
	// health is what the last chat calls said (Health).
	health Health
}

// Health is what the outbox knows of chat: for /readyz and the logs.
type Health struct {
	// LastOK is when chat last took a post or an edit; LastFailure when a
	// call last failed, with its error.
	LastOK      time.Time
	LastFailure time.Time
	LastErr     string
	// Waiting is how many posts and edits wait in the queue (given-up
	// ones not counted), Oldest when the oldest of them first failed.
	Waiting int
	Oldest  time.Time
}

// Failing reports whether chat's last answer was a failure.
func (h Health) Failing() bool { return h.LastFailure.After(h.LastOK) }

// New returns an Outbox.
func New(o Options) *Outbox {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.EditEvery <= 0 {
		o.EditEvery = DefaultEditEvery
	}
	if o.ProbeEvery <= 0 {
		o.ProbeEvery = DefaultProbeEvery
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Store == nil {
		o.Store = &memoryStore{items: map[string]runmodel.OutboxItem{}}
	}
	return &Outbox{o: o, receivers: map[string]Receiver{}, queue: map[string]runmodel.OutboxItem{}, unsaved: map[string]bool{},
		delivered: map[string]bool{}, posted: map[string]chatmodel.MessageRef{}, lastEdit: map[string]time.Time{}, probed: map[string]time.Time{},
		wake: make(chan struct{}, 1)}
}

// Run posts the queue until ctx ends: at once when a post is queued, and
// every second for the retries that come due. While it runs, Flush only
// wakes it, so the engine's tick never waits for chat, and Meta.Queue
// posts are handed to it. It returns nil when ctx ends.
func (o *Outbox) Run(ctx context.Context) error {
	o.mu.Lock()
	o.running = true
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		o.running = false
		o.mu.Unlock()
	}()
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		o.flush(ctx, false)
		select {
		case <-ctx.Done():
			return nil
		case <-o.wake:
		case <-t.C:
		}
	}
}

// kick wakes Run (when it runs) to post what was just queued.
func (o *Outbox) kick() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Running reports whether Run posts the queue.
func (o *Outbox) Running() bool { return o.background() }

// background reports whether Run posts the queue.
func (o *Outbox) background() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.running
}

// call bounds one chat call by CallTimeout.
func (o *Outbox) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.o.CallTimeout)
}

// Health reports what the outbox knows of chat.
func (o *Outbox) Health() Health {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.health
	for _, it := range o.queue {
		if it.GaveUp || o.delivered[it.ID] {
			continue
		}
		h.Waiting++
		if q := it.Queued; !q.IsZero() && (h.Oldest.IsZero() || q.Before(h.Oldest)) {
			h.Oldest = q
		}
	}
	return h
}

// answered records a chat call's outcome for Health.
func (o *Outbox) answered(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.o.Now()
	if err == nil {
		o.health.LastOK = now
		return
	}
	if _, limited := chatmodel.RetryAfter(err); limited || errors.Is(err, chatmodel.ErrCannotPost) {
		return // chat answered: it refused this post, or asked to slow down
	}
	o.health.LastFailure, o.health.LastErr = now, err.Error()
}

// failingLocked reports whether posts to channel are failing: one of its
// queued items failed and is waiting for its retry. A new post then waits
// in the queue too, instead of trying a chat that does not answer in the
// caller's goroutine; the queue's probe finds out when it answers again.
func (o *Outbox) failingLocked(channel string) bool {
	for _, q := range o.queue {
		if !q.GaveUp && q.LastErr != "" && channelOf(q) == channel && !o.delivered[q.ID] {
			return true
		}
	}
	return false
}

// Register sets the receiver of the sender from. Register every sender
// before the first Flush: queued items of a sender with no receiver are
// still delivered, without a callback.
func (o *Outbox) Register(from string, r Receiver) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.receivers[from] = r
}

func (o *Outbox) receiver(from string) Receiver {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.receivers[from]
}

// threadKey is what orders posts: the thread a post goes to, or the
// pending root it waits for. Top-level posts are not ordered.
func threadKey(it runmodel.OutboxItem) string {
	switch {
	case !it.Update.IsZero():
		return ""
	case it.After != "":
		return "item:" + it.After
	case it.To.Thread != "":
		return it.To.Channel + "/" + it.To.Thread
	}
	return ""
}

func channelOf(it runmodel.OutboxItem) string {
	if !it.Update.IsZero() {
		return it.Update.Channel
	}
	return it.To.Channel
}

func editKey(ref chatmodel.MessageRef) string { return "u|" + ref.Channel + "|" + ref.ID }

// load reads the stored queue once.
func (o *Outbox) load(ctx context.Context) {
	o.mu.Lock()
	done := o.loaded
	o.mu.Unlock()
	if done {
		return
	}
	items, err := o.o.Store.ListOutbox(ctx)
	if err != nil {
		o.o.Logger.Error("reading the outbox; trying again at the next flush", "err", err)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.loaded {
		return
	}
	for _, it := range items {
		if _, ok := o.queue[it.ID]; !ok {
			o.queue[it.ID] = it
		}
	}
	o.loaded = true
}

// backlog reports whether a post must wait: an earlier post of its thread
// is queued, or its root is not posted yet.
func (o *Outbox) backlogLocked(it runmodel.OutboxItem) bool {
	k := threadKey(it)
	if k == "" {
		return false
	}
	for id, q := range o.queue {
		if id != it.ID && !q.GaveUp && q.Update.IsZero() && threadKey(q) == k && id < it.ID {
			return true
		}
	}
	if it.After != "" {
		if _, ok := o.queue[it.After]; ok {
			return true
		}
	}
	return false
}

func (o *Outbox) newID(prefix string) string {
	o.seq++
	return fmt.Sprintf("%s|%020d|%06d", prefix, o.o.Now().UnixNano(), o.seq%1000000)
}

// Post posts m to `to` now, or queues it (behind an earlier queued post of
// its thread, while the platform asked to slow down, or when the attempt
// fails). The handle has the reference when it was posted, else the
// pending item. The error is non-nil only when the post was given up.
func (o *Outbox) Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message, meta Meta) (Handle, error) {
	o.load(ctx)
	m = m.Clean()
	it := item(meta)
	it.To, it.Message = to, m
	o.mu.Lock()
	it.ID = o.newID("p")
	it.Message.PostKey = it.ID
	wait := o.backlogLocked(it) || o.o.Now().Before(o.pausedUntil) || o.failingLocked(to.Channel) || meta.Queue && o.running
	o.mu.Unlock()
	if wait {
		o.hold(ctx, it)
		return Handle{Pending: it.ID}, nil
	}
	cctx, cancel := o.call(ctx)
	ref, err := o.o.Chat.Post(cctx, to, it.Message)
	cancel()
	o.answered(err)
	if err != nil {
		if gaveUp := o.failed(ctx, it, err); gaveUp {
			return Handle{Pending: it.ID}, fmt.Errorf("%w: %w", ErrGaveUp, err)
		}
		return Handle{Pending: it.ID}, nil
	}
	o.recovered(channelOf(it))
	return Handle{Ref: ref}, nil
}

// Reply posts m in the thread of root: at once when the root is posted,
// else after it (the thread is filled in when the root goes out). to
// names the channel (and platform).
func (o *Outbox) Reply(ctx context.Context, to chatmodel.Conversation, root Handle, m chatmodel.Message, meta Meta) (Handle, error) {
	if !root.Ref.IsZero() {
		to.Thread = root.Ref.ID
		return o.Post(ctx, to, m, meta)
	}
	if root.Pending == "" {
		return o.Post(ctx, to, m, meta)
	}
	o.load(ctx)
	o.mu.Lock()
	ref, out := o.posted[root.Pending]
	_, queued := o.queue[root.Pending]
	o.mu.Unlock()
	switch {
	case out:
		to.Thread = ref.ID
		return o.Post(ctx, to, m, meta)
	case !queued:
		// The root is neither queued nor known as posted (posted before a
		// restart): the sender's record has its reference by now, or never will.
		return o.Post(ctx, to, m, meta)
	}
	it := item(meta)
	it.To, it.Message, it.After = to, m.Clean(), root.Pending
	o.mu.Lock()
	it.ID = o.newID("p")
	it.Message.PostKey = it.ID
	o.mu.Unlock()
	o.hold(ctx, it)
	return Handle{Pending: it.ID}, nil
}

// Update replaces the content of the message h names. A message still
// pending has its queued post replaced (the latest state wins). With
// meta.Coalesce an edit closer than EditEvery to the previous one of the
// same message is queued and sent when its time comes; a newer one
// replaces it.
func (o *Outbox) Update(ctx context.Context, h Handle, m chatmodel.Message, meta Meta) error {
	o.load(ctx)
	m = m.Clean()
	ref := h.Ref
	if ref.IsZero() && h.Pending != "" {
		o.mu.Lock()
		q, queued := o.queue[h.Pending]
		posted, out := o.posted[h.Pending]
		o.mu.Unlock()
		switch {
		case queued:
			m.PostKey = q.Message.PostKey
			q.Message = m
			o.save(ctx, q)
			return nil
		case out:
			ref = posted
		default:
			return nil // nothing to edit: the post was given up or forgotten
		}
	}
	if ref.IsZero() {
		return nil
	}
	it := item(meta)
	it.Update, it.Message, it.ID = ref, m, editKey(ref)
	now := o.o.Now()
	o.mu.Lock()
	_, pending := o.queue[it.ID]
	wait := pending || now.Before(o.pausedUntil) || o.failingLocked(ref.Channel) || meta.Queue && o.running
	if meta.Coalesce {
		if last, ok := o.lastEdit[it.ID]; ok && now.Sub(last) < o.o.EditEvery {
			wait = true
			it.NextTry = last.Add(o.o.EditEvery)
		}
	}
	if pending {
		// keep the backoff of the queued edit it replaces
		q := o.queue[it.ID]
		it.Attempts, it.Queued, it.LastErr = q.Attempts, q.Queued, q.LastErr
		if q.NextTry.After(it.NextTry) {
			it.NextTry = q.NextTry
		}
	}
	o.mu.Unlock()
	if wait {
		if it.NextTry.IsZero() {
			it.NextTry = now
		}
		o.save(ctx, it)
		return nil
	}
	o.mu.Lock()
	o.lastEdit[it.ID] = now
	o.mu.Unlock()
	cctx, cancel := o.call(ctx)
	err := o.o.Chat.Update(cctx, ref, m)
	cancel()
	o.answered(err)
	if err != nil {
		if o.failed(ctx, it, err) {
			return fmt.Errorf("%w: %w", ErrGaveUp, err)
		}
		return nil
	}
	o.recovered(ref.Channel)
	return nil
}

// Ephemeral shows a sanitised message to one person now. It is not queued:
// it answers what the person just did.
func (o *Outbox) Ephemeral(ctx context.Context, to chatmodel.Conversation, user chatmodel.User, m chatmodel.Message) error {
	ctx, cancel := o.call(ctx)
	defer cancel()
	return o.o.Chat.Ephemeral(ctx, to, user, m.Clean())
}

// Pending returns the queued items (the store's and those it refused),
// oldest first, given-up ones included.
func (o *Outbox) Pending(ctx context.Context) []runmodel.OutboxItem {
	o.load(ctx)
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]runmodel.OutboxItem, 0, len(o.queue))
	for _, it := range o.queue {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func item(meta Meta) runmodel.OutboxItem {
	return runmodel.OutboxItem{From: meta.From, Key: meta.Key, RunID: meta.RunID, Step: meta.Step, Role: meta.Role, Coalesce: meta.Coalesce}
}

// hold queues an item that was not tried (it waits its turn).
func (o *Outbox) hold(ctx context.Context, it runmodel.OutboxItem) {
	if it.NextTry.IsZero() {
		it.NextTry = o.o.Now()
	}
	o.save(ctx, it)
	o.kick()
}

// failed queues a failed item for a retry with backoff, or gives it up.
// It reports whether it was given up.
func (o *Outbox) failed(ctx context.Context, it runmodel.OutboxItem, cause error) bool {
	now := o.o.Now()
	if it.Queued.IsZero() {
		it.Queued = now
	}
	it.LastErr = chatmodel.UserMessage(cause)
	if wait, ok := chatmodel.RetryAfter(cause); ok {
		wait = max(wait, time.Second)
		o.mu.Lock()
		if until := now.Add(wait); until.After(o.pausedUntil) {
			o.pausedUntil = until
		}
		o.mu.Unlock()
		it.NextTry = now.Add(wait)
		o.o.Logger.Warn("chat asked to slow down; posting paused", "from", it.From, "run", it.RunID, "retry_after", wait)
		o.save(ctx, it)
		return false
	}
	it.Attempts++
	it.NextTry = now.Add(min(time.Duration(1<<min(it.Attempts, 10))*time.Second, o.o.MaxBackoff))
	if it.Attempts >= o.o.MaxAttempts || errors.Is(cause, chatmodel.ErrCannotPost) {
		it.GaveUp = true
		o.o.Logger.Error("chat post failed; gave up", "from", it.From, "key", it.Key, "run", it.RunID, "role", it.Role, "attempts", it.Attempts, "err", cause)
	} else {
		o.o.Logger.Warn("chat post failed; queued for retry", "from", it.From, "key", it.Key, "run", it.RunID, "role", it.Role, "attempts", it.Attempts, "next_try", it.NextTry, "err", cause)
	}
	o.save(ctx, it)
	return it.GaveUp
}

// recovered marks a channel's queue as due at once: chat answered again.
func (o *Outbox) recovered(channel string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.o.Now()
	for id, it := range o.queue {
		if channelOf(it) == channel && !it.GaveUp && it.NextTry.After(now) && it.LastErr != "" {
			it.NextTry = now
			o.queue[id] = it // in memory: the stored NextTry is only a lower bound after a restart
		}
	}
}

// save stores an item; when the store refuses it, it is kept in memory
// and still retried.
func (o *Outbox) save(ctx context.Context, it runmodel.OutboxItem) {
	err := o.write(ctx, it, "a chat message waiting to be sent", func() error { return o.o.Store.PutOutbox(ctx, it) })
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queue[it.ID] = it
	if err != nil {
		o.unsaved[it.ID] = true
	} else {
		delete(o.unsaved, it.ID)
	}
}

// done removes a delivered item. When the store refuses, the item is
// remembered as delivered (never posted twice) and removed at the next flush.
func (o *Outbox) done(ctx context.Context, it runmodel.OutboxItem) {
	err := o.write(ctx, it, "the removal of a delivered message from the outbox", func() error { return o.o.Store.DeleteOutbox(ctx, it.ID) })
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.queue, it.ID)
	delete(o.unsaved, it.ID)
	if err != nil {
		o.delivered[it.ID] = true
	} else {
		delete(o.delivered, it.ID)
	}
}

var saveRetries = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond}

func (o *Outbox) write(ctx context.Context, it runmodel.OutboxItem, what string, write func() error) error {
	if save := o.receiver(it.From).Save; save != nil {
		return save(ctx, it.RunID, what, write)
	}
	var err error
	for i := 0; ; i++ {
		if err = write(); err == nil {
			return nil
		}
		if i >= len(saveRetries) || ctx.Err() != nil {
			break
		}
		time.Sleep(saveRetries[i])
	}
	o.o.Logger.Error("store write failed after retries", "what", what, "from", it.From, "key", it.Key, "err", err)
	return err
}

// Flush tries the queued items that are due, oldest first, keeping the
// order within each thread. Call it often (the engine's tick does). While
// Run runs, it only wakes Run: the caller does not wait for chat.
func (o *Outbox) Flush(ctx context.Context) {
	if o.background() {
		o.kick()
		return
	}
	o.flush(ctx, false)
}

// Drain sends the edits held back by coalescing now and tries every
// queued item once (shutdown).
func (o *Outbox) Drain(ctx context.Context) { o.flush(ctx, true) }

func (o *Outbox) flush(ctx context.Context, all bool) {
	o.flushing.Lock()
	defer o.flushing.Unlock()
	o.load(ctx)
	now := o.o.Now()
	o.mu.Lock()
	o.forgetEdits(now)
	if now.Before(o.pausedUntil) && !all {
		o.mu.Unlock()
		return
	}
	redelete := make([]runmodel.OutboxItem, 0)
	for id := range o.delivered {
		if it, ok := o.queue[id]; ok {
			redelete = append(redelete, it)
		} else {
			redelete = append(redelete, runmodel.OutboxItem{ID: id})
		}
	}
	items := make([]runmodel.OutboxItem, 0, len(o.queue))
	for id, it := range o.queue {
		if !o.delivered[id] {
			items = append(items, it)
		}
	}
	o.mu.Unlock()
	for _, it := range redelete {
		o.done(ctx, it)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].ID < items[j].ID })
	blocked := map[string]bool{} // threads whose earlier post is still queued
	down := map[string]bool{}    // channels that failed in this flush
	probing := map[string]bool{} // channels probed in this flush
	up := map[string]bool{}      // channels that took a post in this flush
	for _, it := range items {
		if ctx.Err() != nil {
			return
		}
		o.mu.Lock()
		cur, ok := o.queue[it.ID] // replaced meanwhile: a newer edit, a root posted
		o.mu.Unlock()
		if !ok {
			continue
		}
		it = cur
		if it.GaveUp {
			continue
		}
		k := threadKey(it)
		ch := channelOf(it)
		if k != "" && blocked[k] || down[ch] {
			if k != "" {
				blocked[k] = true
			}
			continue
		}
		if it.After != "" {
			o.mu.Lock()
			root, rootQueued := o.queue[it.After]
			o.mu.Unlock()
			switch {
			case rootQueued && root.GaveUp:
				// the root will never be posted: the reply goes to the channel
				it.After = ""
			case rootQueued:
				blocked[k] = true
				continue
			}
		}
		due := !it.NextTry.After(now) || all
		probe := false
		if !due {
			o.mu.Lock()
			if it.LastErr != "" && !probing[ch] && now.Sub(o.probed[ch]) >= o.o.ProbeEvery {
				probe, probing[ch] = true, true
				o.probed[ch] = now
			}
			o.mu.Unlock()
		}
		if !due && !probe {
			if k != "" {
				blocked[k] = true
			}
			continue
		}
		if err := o.try(ctx, it, probe); err != nil {
			if k != "" {
				blocked[k] = true
			}
			down[ch] = true
			if _, limited := chatmodel.RetryAfter(err); limited {
				return
			}
			continue
		}
		if !up[ch] {
			// chat answered: the rest of the channel's queue is due now
			up[ch] = true
			o.recovered(ch)
		}
	}
}

// try sends one queued item; on success it is removed and its sender told.
// A failed probe counts no attempt.
func (o *Outbox) try(ctx context.Context, it runmodel.OutboxItem, probe bool) error {
	r := o.receiver(it.From)
	if !it.Update.IsZero() {
		o.mu.Lock()
		o.lastEdit[it.ID] = o.o.Now()
		o.mu.Unlock()
		cctx, cancel := o.call(ctx)
		err := o.o.Chat.Update(cctx, it.Update, it.Message.Clean())
		cancel()
		o.answered(err)
		if err != nil {
			o.retryFailed(ctx, it, err, probe)
			return err
		}
		o.done(ctx, it)
		return nil
	}
	var finish func()
	if r.Posting != nil {
		finish = r.Posting()
	}
	m := it.Message.Clean()
	if m.PostKey == "" {
		m.PostKey = it.ID // queued before posts had keys
	}
	cctx, cancel := o.call(ctx)
	ref, err := o.o.Chat.Post(cctx, it.To, m)
	cancel()
	o.answered(err)
	if err != nil {
		if finish != nil {
			finish()
		}
		o.retryFailed(ctx, it, err, probe)
		return err
	}
	o.mu.Lock()
	o.remember(it.ID, ref)
	var children []runmodel.OutboxItem
	for _, q := range o.queue {
		if q.After == it.ID {
			children = append(children, q)
		}
	}
	// An edit of the post while it was on its way replaced the queued
	// message: it becomes an edit of the post now made.
	cur, queued := o.queue[it.ID]
	o.mu.Unlock()
	// replies waiting for this root now know their thread
	for _, c := range children {
		c.After, c.To.Thread = "", ref.ID
		o.save(ctx, c)
	}
	o.done(ctx, it)
	if queued && !reflect.DeepEqual(cur.Message, it.Message) {
		if err := o.Update(ctx, Handle{Ref: ref}, cur.Message, Meta{From: it.From, Key: it.Key, Queue: true}); err != nil {
			o.o.Logger.Warn("editing a post changed while it was sent", "from", it.From, "key", it.Key, "err", err)
		}
	}
	if r.Delivered != nil {
		r.Delivered(ctx, it, ref)
	}
	if finish != nil {
		finish()
	}
	return nil
}

// maxPosted bounds the references of delivered queued posts kept in memory.
const maxPosted = 10000

// remember keeps the reference of a delivered queued post (o.mu held).
func (o *Outbox) remember(id string, ref chatmodel.MessageRef) {
	o.posted[id] = ref
	o.postedIDs = append(o.postedIDs, id)
	if len(o.postedIDs) > maxPosted {
		drop := o.postedIDs[:len(o.postedIDs)-maxPosted]
		for _, old := range drop {
			delete(o.posted, old)
		}
		o.postedIDs = append([]string(nil), o.postedIDs[len(drop):]...)
	}
}

// forgetEdits drops the edit times older than EditEvery: they hold
// nothing back any more (o.mu held).
func (o *Outbox) forgetEdits(now time.Time) {
	for k, t := range o.lastEdit {
		if now.Sub(t) >= o.o.EditEvery {
			if _, queued := o.queue[k]; !queued {
				delete(o.lastEdit, k)
			}
		}
	}
}

func (o *Outbox) retryFailed(ctx context.Context, it runmodel.OutboxItem, err error, probe bool) {
	if probe {
		if _, limited := chatmodel.RetryAfter(err); !limited && !errors.Is(err, chatmodel.ErrCannotPost) {
			it.LastErr = chatmodel.UserMessage(err)
			o.mu.Lock()
			o.queue[it.ID] = it
			o.mu.Unlock()
			return
		}
	}
	o.failed(ctx, it, err)
}
