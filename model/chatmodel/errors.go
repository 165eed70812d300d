package chatmodel

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors callers branch on.
var (
	ErrNotFound      = errors.New("not found")
	ErrNotApprover   = errors.New("not an approver")
	ErrNotConfigured = errors.New("not configured")
	// ErrCannotPost is wrapped by chat adapters when a post can never
	// succeed as it is (the bot is not in the channel, the channel is
	// gone): the outbox gives it up instead of retrying.
	ErrCannotPost = errors.New("cannot post there")
	// ErrUnreachable is wrapped by chat adapters when the chat server did
	// not answer at all (the connection refused or reset, no answer
	// before the call's deadline: a server that hangs). Nothing is wrong
	// with the request or the configuration; the error's text names the
	// server and the last error.
	ErrUnreachable = errors.New("the chat server did not answer")
)

// UserError is an error whose message is meant for the chat user as is
// (bad command, unknown runbook, bad parameter).
type UserError struct{ Msg string }

func (e *UserError) Error() string { return e.Msg }

// RateLimitedError is returned (wrapped or not) by a chat adapter whose
// platform refused a call for now (HTTP 429) and the adapter stopped
// waiting (its context ended, or it ran out of tries). RetryAfter is the
// wait the platform asked for, 0 when it did not say. Nothing was done:
// the same call may be made again after RetryAfter. Find it with
// errors.As, or RetryAfter.
type RateLimitedError struct {
	Platform   string        // "slack", "mattermost"
	RetryAfter time.Duration // the platform's Retry-After, 0 when not given
	Err        error         // the platform's error
}

func (e *RateLimitedError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("rate limited by %s (retry after %s): %v", e.Platform, e.RetryAfter, e.Err)
	}
	return fmt.Sprintf("rate limited by %s: %v", e.Platform, e.Err)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// RetryAfter reports whether err is (or wraps) a *RateLimitedError, and the
// wait the platform asked for (0 when it did not say).
func RetryAfter(err error) (time.Duration, bool) {
	var rl *RateLimitedError
	if errors.As(err, &rl) {
		return rl.RetryAfter, true
	}
	return 0, false
}

// UserMessage turns an error into a sentence for chat, for the engine's
// subsystems too: a timeout says so.
func UserMessage(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out: " + err.Error()
	}
	return err.Error()
}
