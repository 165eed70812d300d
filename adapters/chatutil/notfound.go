package chatutil

import (
	"fmt"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// NotFoundError is a name (a user, a group) the platform does not know,
// with the closest name it does know. It wraps chatmodel.ErrNotFound; `config
// check` shows the suggestion as a did-you-mean (DidYouMean).
type NotFoundError struct {
	What       string // "slack user", "slack usergroup"
	Name       string
	Suggestion string // the closest known name, or ""
	// Mention shows the name as @name instead of quoted.
	Mention bool
}

// NotFound returns a *NotFoundError for name, suggesting the closest of
// known (runbooks.Suggest: about one edit per three characters).
func NotFound(what, name string, known []string) *NotFoundError {
	return &NotFoundError{What: what, Name: name, Suggestion: textmodel.Suggest(name, known)}
}

func (e *NotFoundError) Error() string {
	name := fmt.Sprintf("%q", e.Name)
	if e.Mention {
		name = "@" + e.Name
	}
	msg := fmt.Sprintf("%s %s: %v", e.What, name, chatmodel.ErrNotFound)
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// Unwrap makes errors.Is find chatmodel.ErrNotFound.
func (e *NotFoundError) Unwrap() error { return chatmodel.ErrNotFound }

// DidYouMean is the closest known name, or "".
func (e *NotFoundError) DidYouMean() string { return e.Suggestion }
