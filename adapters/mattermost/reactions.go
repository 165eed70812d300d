package mattermost

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// reactionKey identifies one user's reaction with one emoji on a post.
type reactionKey struct{ user, emoji string }

// watched is a message whose reactions are re-read after reconnects.
type watched struct {
	ref   chatmodel.MessageRef
	since time.Time
	// known maps each reaction the adapter has reported to the update_at of
	// its addition, the stamp in its event id.
	known map[reactionKey]int64
	// synced says known mirrors the server; when false (a message watched
	// after a restart) the first re-read reports additions only.
	synced bool
}

// watchSet is the set of watched messages. Safe for concurrent use.
type watchSet struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	posts  map[string]*watched
}

func newWatchSet(window time.Duration, max int) *watchSet {
	return &watchSet{window: window, max: max, posts: map[string]*watched{}}
}

func (w *watchSet) add(ref chatmodel.MessageRef, now time.Time, synced bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.posts[ref.ID]; ok {
		if old.ref.Thread == "" {
			old.ref.Thread = ref.Thread
		}
		old.since = now
		return
	}
	w.posts[ref.ID] = &watched{ref: ref, since: now, known: map[reactionKey]int64{}, synced: synced}
	if len(w.posts) > w.max {
		w.evictOldest()
	}
}

func (w *watchSet) evictOldest() {
	var oldestID string
	var oldest time.Time
	for id, p := range w.posts {
		if oldestID == "" || p.since.Before(oldest) {
			oldestID, oldest = id, p.since
		}
	}
	delete(w.posts, oldestID)
}

func (w *watchSet) remove(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.posts, id)
}

// ids returns the ids of the watched messages, dropping expired ones.
func (w *watchSet) ids(now time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.posts))
	for id, p := range w.posts {
		if now.Sub(p.since) > w.window {
			delete(w.posts, id)
			continue
		}
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// live records a live reaction event. It returns the watched message's ref
// and, for a removal, the stamp of the addition it removes (0 if unknown).
func (w *watchSet) live(postID string, k reactionKey, removed bool, updateAt int64) (chatmodel.MessageRef, int64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.posts[postID]
	if !ok {
		return chatmodel.MessageRef{}, 0, false
	}
	if removed {
		at := p.known[k]
		delete(p.known, k)
		return p.ref, at, true
	}
	p.known[k] = updateAt
	return p.ref, 0, true
}

// reactionChange is a difference found when re-reading reactions.
type reactionChange struct {
	key     reactionKey
	removed bool
	at      int64 // update_at of the addition
}

// sync compares the server's reactions of a watched message with what was
// reported and returns the changes, oldest first; it then records the
// server's state as known.
func (w *watchSet) sync(postID string, current []*model.Reaction, botID string) (chatmodel.MessageRef, []reactionChange, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.posts[postID]
	if !ok {
		return chatmodel.MessageRef{}, nil, false
	}
	now := map[reactionKey]int64{}
	for _, r := range current {
		if r == nil || r.UserId == botID || r.DeleteAt != 0 {
			continue
		}
		now[reactionKey{r.UserId, r.EmojiName}] = r.UpdateAt
	}
	var changes []reactionChange
	if p.synced {
		for k, at := range p.known {
			if cur, ok := now[k]; !ok || cur != at {
				changes = append(changes, reactionChange{key: k, removed: true, at: at})
			}
		}
	}
	for k, at := range now {
		if old, ok := p.known[k]; !ok || old != at {
			changes = append(changes, reactionChange{key: k, at: at})
		}
	}
	sort.Slice(changes, func(i, j int) bool {
		ci, cj := changes[i], changes[j]
		if ci.removed != cj.removed {
			return ci.removed // removals of old reactions first
		}
		if ci.at != cj.at {
			return ci.at < cj.at
		}
		if ci.key.user != cj.key.user {
			return ci.key.user < cj.key.user
		}
		return ci.key.emoji < cj.key.emoji
	})
	p.known = now
	p.synced = true
	return p.ref, changes, true
}

// WatchReactions makes the adapter re-read the reactions of ref after every
// WebSocket (re)connect, and now if connected. Messages the adapter posts
// itself are watched automatically for Options.ReactionWindow; the engine
// calls this after a restart for the gates and manual steps still open, so
// that reactions added while groundcrew was down are delivered.
func (a *Adapter) WatchReactions(ref chatmodel.MessageRef) {
	if ref.ID == "" {
		return
	}
	a.watches.add(ref, a.now(), false)
	a.requestReconcile()
}

// UnwatchReactions stops re-reading the reactions of ref (a closed gate).
// Live reactions on it are still delivered.
func (a *Adapter) UnwatchReactions(ref chatmodel.MessageRef) {
	a.watches.remove(ref.ID)
}

func (a *Adapter) requestReconcile() {
	select {
	case a.reconcileCh <- struct{}{}:
	default:
	}
}

// reconcile re-reads the reactions of all watched messages and delivers the
// differences. On failure it schedules another try.
func (a *Adapter) reconcile(ctx context.Context) {
	ids := a.watches.ids(a.now())
	botID := a.BotUserID()
	const chunk = 100
	for start := 0; start < len(ids); start += chunk {
		part := ids[start:min(start+chunk, len(ids))]
		var got map[string][]*model.Reaction
		err := a.call(ctx, fmt.Sprintf("re-reading reactions of %d messages", len(part)), true, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			got, resp, err = a.client.GetBulkReactions(ctx, part)
			return resp, err
		})
		if err != nil {
			if ctx.Err() == nil {
				a.log.Error("could not re-read reactions after reconnect; retrying in 30s", "err", err)
				time.AfterFunc(30*time.Second, a.requestReconcile)
			}
			return
		}
		for _, id := range part {
			ref, changes, ok := a.watches.sync(id, got[id], botID)
			if !ok {
				continue
			}
			for _, c := range changes {
				a.deliverOn(ref.ID, a.reactionEvent(ctx, ref, c.key.user, c.key.emoji, c.removed, c.at))
			}
		}
	}
}

// onLiveReaction delivers a reaction received on the WebSocket.
func (a *Adapter) onLiveReaction(ctx context.Context, r *model.Reaction, channel string, removed bool) {
	if r.UserId == "" || r.UserId == a.BotUserID() {
		return
	}
	ref := chatmodel.MessageRef{Platform: Platform, Channel: channel, ID: r.PostId}
	at := r.UpdateAt
	if wref, addAt, ok := a.watches.live(r.PostId, reactionKey{r.UserId, r.EmojiName}, removed, r.UpdateAt); ok {
		ref = wref
		if removed && addAt != 0 {
			at = addAt
		}
	}
	if ref.Channel == "" {
		ref.Channel = channel
	}
	a.deliverOn(ref.ID, a.reactionEvent(ctx, ref, r.UserId, r.EmojiName, removed, at))
}

// deliverOn delivers an event about post. An event on a post whose Post
// call has not returned yet needs no holding back here: the engine matches
// it once the post's reference is stored.
func (a *Adapter) deliverOn(_ string, e chatmodel.Event) {
	_ = a.deliver(e)
}

// reactionEvent builds the engine event for a reaction. Its id is stable
// for one reaction, whether seen live or re-read:
// reaction:<post>:<user>:<emoji>:<added|removed>:<update_at of the addition>.
func (a *Adapter) reactionEvent(ctx context.Context, ref chatmodel.MessageRef, user, emoji string, removed bool, at int64) chatmodel.Event {
	verb := "added"
	if removed {
		verb = "removed"
	}
	thread := ref.Thread
	if thread == "" {
		thread = ref.ID
	}
	when := time.UnixMilli(at)
	if removed {
		when = a.now()
	}
	return chatmodel.Event{
		Kind:         chatmodel.EventReaction,
		ID:           fmt.Sprintf("reaction:%s:%s:%s:%s:%d", ref.ID, user, emoji, verb, at),
		User:         chatmodel.User{ID: user}, // named by deliver, from the id
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: ref.Channel, Thread: thread},
		Message:      ref,
		Intent:       chatutil.IntentOf(emoji),
		Removed:      removed,
		Time:         when,
	}
}
