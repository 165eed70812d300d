package incident

import "time"

// SetExpireTries replaces the waits between tries to expire a resolved
// incident's silence; the returned func restores them.
func SetExpireTries(waits []time.Duration) (restore func()) {
	old := expireTries
	expireTries = waits
	return func() { expireTries = old }
}
