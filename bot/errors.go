package bot

import "errors"

// Sentinel errors callers branch on.
var (
	ErrNotFound          = errors.New("not found")
	ErrInvalidTransition = errors.New("invalid state transition")
	ErrNotApprover       = errors.New("not an approver")
	ErrNotConfigured     = errors.New("not configured")
	ErrLocked            = errors.New("store is locked by another process")
	ErrExists            = errors.New("already exists")
)

// UserError is an error whose message is meant for the chat user as is
// (bad command, unknown runbook, bad parameter).
type UserError struct{ Msg string }

func (e *UserError) Error() string { return e.Msg }

func userErrorf(format string, args ...any) error {
	return &UserError{Msg: sprintf(format, args...)}
}
