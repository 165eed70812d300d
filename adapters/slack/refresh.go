package slack

import (
	"context"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// A target picked in groundcrew's modal changes the choices of the other
// fields (that target's workers, pipelines, teams). The target's select
// has dispatch_action, so Slack sends each change as block_actions from
// inside the view, over either transport; the adapter asks the engine for
// the form of the values entered (chatmodel.FormRefresher) and replaces
// the modal with views.update, giving the view's hash so that an older
// refresh never overwrites a newer one.

// Bounds of the views remembered (their last hash) and of one refresh.
const (
	maxRefreshedViews = 10000
	refreshedViewTTL  = time.Hour // a modal left open longer is refreshed with its payload's hash
	refreshTimeout    = 10 * time.Second
)

// viewRefreshes are the modals being refreshed and the hash each was
// last updated to. Changes of one view are refreshed one at a time, the
// latest first: a change that arrives during a refresh waits, and only the
// newest waiting one is refreshed.
type viewRefreshes struct {
	mu        sync.Mutex
	ctx       context.Context // Run's; nil before Run
	wg        sync.WaitGroup
	refresher chatmodel.FormRefresher
	views     map[string]*viewRefresh
}

type viewRefresh struct {
	next    *slackapi.InteractionCallback // the latest change not refreshed yet
	running bool
	hash    string // the hash of the view after groundcrew's last views.update
	at      time.Time
}

// SetFormRefresher makes a change of a form's field marked Refresh (the
// target) update the modal with the form for the values entered. Call it
// before Run.
func (a *Adapter) SetFormRefresher(r chatmodel.FormRefresher) {
	a.views.mu.Lock()
	defer a.views.mu.Unlock()
	a.views.refresher = r
}

func (a *Adapter) refresher() chatmodel.FormRefresher {
	a.views.mu.Lock()
	defer a.views.mu.Unlock()
	return a.views.refresher
}

// startRefreshes lets changes be refreshed with ctx (Run's); stop takes
// no more and waits for the refreshes under way.
func (a *Adapter) startRefreshes(ctx context.Context) (stop func()) {
	a.views.mu.Lock()
	a.views.ctx = ctx
	a.views.mu.Unlock()
	return func() {
		a.views.mu.Lock()
		a.views.ctx = nil
		a.views.mu.Unlock()
		a.views.wg.Wait()
	}
}

// isFormChange reports whether cb is a change inside groundcrew's modal
// (block_actions from its view), not a button on a message.
func isFormChange(cb slackapi.InteractionCallback) bool {
	return cb.Type == slackapi.InteractionTypeBlockActions && cb.View.CallbackID == formCallback && cb.View.ID != ""
}

// formChanged queues the refresh of the modal cb comes from. It returns
// at once (the payload is acknowledged without waiting for the engine).
func (a *Adapter) formChanged(cb slackapi.InteractionCallback) {
	r := &a.views
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ctx == nil || r.refresher == nil {
		a.log.Debug("slack: a form change not refreshed (no refresher)", "view", cb.View.ID)
		return
	}
	now := a.now()
	v := r.views[cb.View.ID]
	if v == nil {
		if r.views == nil {
			r.views = map[string]*viewRefresh{}
		}
		r.prune(now)
		if len(r.views) >= maxRefreshedViews {
			a.log.Warn("slack: too many open forms being refreshed; this change is not", "view", cb.View.ID)
			return
		}
		v = &viewRefresh{}
		r.views[cb.View.ID] = v
	}
	v.next, v.at = &cb, now
	if v.running {
		return
	}
	v.running = true
	ctx := r.ctx
	r.wg.Go(func() { a.refreshLoop(ctx, v) })
}

// prune forgets the views not changed for refreshedViewTTL (none of them
// is being refreshed).
func (r *viewRefreshes) prune(now time.Time) {
	for id, v := range r.views {
		if !v.running && now.Sub(v.at) > refreshedViewTTL {
			delete(r.views, id)
		}
	}
}

// refreshLoop refreshes v's latest change until none waits.
func (a *Adapter) refreshLoop(ctx context.Context, v *viewRefresh) {
	r := &a.views
	for {
		r.mu.Lock()
		cb := v.next
		v.next = nil
		if cb == nil || ctx.Err() != nil {
			v.running = false
			r.mu.Unlock()
			return
		}
		hash, refresher := v.hash, r.refresher
		r.mu.Unlock()
		if h := a.refreshForm(ctx, refresher, *cb, hash); h != "" {
			r.mu.Lock()
			v.hash = h
			r.mu.Unlock()
		}
	}
}

// refreshForm updates the modal of cb with the form for the values
// entered in it and returns the view's new hash ("" when it was not
// updated). known is the hash groundcrew last updated the view to: newer
// than the payload's when the person changed the field again before the
// last update reached them. A hash_conflict with it means the view changed
// elsewhere; the payload's own hash is tried, and when it is stale too the
// modal is left as it is (the next change refreshes it).
func (a *Adapter) refreshForm(ctx context.Context, refresher chatmodel.FormRefresher, cb slackapi.InteractionCallback, known string) string {
	st, values, ok := a.formValues(cb)
	if !ok {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	f, err := refresher.RefreshForm(ctx, chatmodel.Conversation{Platform: Platform, Channel: st.Channel, Thread: st.Thread}, st.Command, values)
	if err != nil {
		a.log.Info("slack: a form change not refreshed", "view", cb.View.ID, "user", cb.User.ID, "err", err)
		return ""
	}
	view, err := a.formView(f, st)
	if err != nil {
		return ""
	}
	hashes := []string{known}
	if known == "" {
		hashes = []string{cb.View.Hash}
	} else if cb.View.Hash != "" && cb.View.Hash != known {
		hashes = append(hashes, cb.View.Hash)
	}
	for _, hash := range hashes {
		var resp *slackapi.ViewResponse
		err := a.retry.do(ctx, "views.update", retryRateLimitOnly, func(ctx context.Context) error {
			var err error
			resp, err = a.api.UpdateViewContext(ctx, view, "", hash, cb.View.ID)
			return err
		})
		if slackErrorCode(err) == "hash_conflict" {
			continue
		}
		if err != nil {
			a.log.Warn("slack: could not update a form for the target picked", "view", cb.View.ID, "user", cb.User.ID, "err", err)
			return ""
		}
		return resp.Hash
	}
	a.log.Info("slack: a form changed meanwhile (hash_conflict); left as it is", "view", cb.View.ID, "user", cb.User.ID)
	return ""
}
