package chatmodel

import "errors"

// Sentinel errors callers branch on.
var (
	ErrNotFound      = errors.New("not found")
	ErrNotApprover   = errors.New("not an approver")
	ErrNotConfigured = errors.New("not configured")
	// ErrCannotPost is wrapped by chat adapters when a post can never
	// succeed as it is (the bot is not in the channel, the channel is
	// gone): the outbox gives it up instead of retrying.
	ErrCannotPost = errors.New("cannot post there")
)

// UserError is an error whose message is meant for the chat user as is
// (bad command, unknown runbook, bad parameter).
type UserError struct{ Msg string }

func (e *UserError) Error() string { return e.Msg }
