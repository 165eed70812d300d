package runbooks

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is one problem found while loading a runbook, located in its file.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
	// Warning marks a problem that does not stop the runbook from loading
	// (`groundcrew lint` reports it and still succeeds).
	Warning bool
}

// Error returns "file:line:col: msg" (line and column are left out when
// unknown), with "warning: " before the message of a warning.
func (e *Error) Error() string {
	msg := e.Msg
	if e.Warning {
		msg = "warning: " + msg
	}
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, msg)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, msg)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, msg)
	}
	return msg
}

// ErrorList is every problem found while loading one or more runbooks.
// Loaders return it (as an error) only when it is not empty; use errors.As
// to get at the individual errors.
type ErrorList []*Error

// Error joins the errors with newlines.
func (l ErrorList) Error() string {
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Err returns the list as an error, or nil when it is empty. It avoids the
// non-nil-interface-holding-a-nil-slice trap.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Sort orders the errors by file, line and column, keeping the order in
// which they were found for errors at the same place.
func (l ErrorList) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}

// errorsOf flattens err into an ErrorList: an ErrorList or *Error is
// taken as is, anything else becomes one Error in file.
func errorsOf(file string, err error) ErrorList {
	if err == nil {
		return nil
	}
	var list ErrorList
	if errors.As(err, &list) {
		return list
	}
	var one *Error
	if errors.As(err, &one) {
		return ErrorList{one}
	}
	return ErrorList{{File: file, Msg: err.Error()}}
}
