package bottest

import (
	"sync"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// WatchingChat is Chat that also implements chatmodel.ReactionWatcher: it
// records the messages it is asked to watch again after a restart.
type WatchingChat struct {
	*Chat
	mu      sync.Mutex
	watched []chatmodel.MessageRef
}

// WatchReactions implements chatmodel.ReactionWatcher.
func (w *WatchingChat) WatchReactions(ref chatmodel.MessageRef) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.watched = append(w.watched, ref)
}

// Watched returns the messages asked for so far, in order.
func (w *WatchingChat) Watched() []chatmodel.MessageRef {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]chatmodel.MessageRef(nil), w.watched...)
}
