package opmodel

import "errors"

// ErrUnchanged matches the errors of write and destructive calls that failed
// before changing anything (the pipeline to unpause does not exist): the run
// does not list such a call as attempted.
var ErrUnchanged = errors.New("nothing was changed")

// Unchanged marks err as returned before the call changed anything. Its
// message is err's; errors.Is matches err and ErrUnchanged.
func Unchanged(err error) error {
	if err == nil {
		return nil
	}
	return unchangedError{err}
}

type unchangedError struct{ err error }

func (e unchangedError) Error() string   { return e.err.Error() }
func (e unchangedError) Unwrap() []error { return []error{e.err, ErrUnchanged} }
