package chatmodel

import "context"

type freshKey struct{}

// Fresh returns a context under which look-ups of users and groups
// (IdentityResolver, GroupResolver) must ask the platform again rather than
// answer from a cache, and fail rather than fall back to a stale answer.
// The engine uses it for the re-check of every counted vote right before a
// destructive call.
func Fresh(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshKey{}, true)
}

// WantsFresh reports whether ctx asks for uncached look-ups (see Fresh).
func WantsFresh(ctx context.Context) bool {
	v, _ := ctx.Value(freshKey{}).(bool)
	return v
}
