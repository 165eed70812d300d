package watch

import "github.com/groundcrew/groundcrew/incident"

// UnreachableSignal exposes the unreachable/login signal for tests.
func UnreachableSignal(w *Watcher, r Rule, err error) incident.Signal { return w.unreachable(r, err) }
