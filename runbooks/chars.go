package runbooks

import (
	"fmt"
	"unicode/utf8"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// Parameter value limits. A runbook may raise the length per parameter
// with max_length (up to MaxParamLengthLimit) and allow more kinds of
// characters with allow.
const (
	// MaxParamLength is the default limit of one parameter value, in characters.
	MaxParamLength = 1024
	// MaxParamLengthLimit is the largest max_length a runbook may set.
	MaxParamLengthLimit = 64 << 10
)

// CheckValue checks a parameter value against p's limits: its length
// (max_length, default MaxParamLength) and its characters (only ordinary
// printable ones unless allow names more; NUL and invalid UTF-8 never).
// The message names the parameter, the limit and how a runbook raises it.
func CheckValue(p runbookmodel.Param, val string) error {
	limit := p.MaxLength
	if limit <= 0 {
		limit = MaxParamLength
	}
	if !utf8.ValidString(val) {
		return fmt.Errorf("parameter %q: the value is not valid UTF-8 text", p.Name)
	}
	if n := utf8.RuneCountInString(val); n > limit {
		return fmt.Errorf("parameter %q: the value is %d characters long; the limit is %d (a runbook may raise it with max_length)", p.Name, n, limit)
	}
	pos := 0
	for _, r := range val {
		pos++
		if r == 0 {
			return fmt.Errorf("parameter %q: character %d is NUL, which is never allowed", p.Name, pos)
		}
		class := textmodel.CharClass(r)
		if class == "" || allows(p, class) {
			continue
		}
		why := "it is not shown, or changes how the text around it is shown, so approvers could read something else than what runs"
		if class == textmodel.CharsNewline || class == textmodel.CharsTab || class == textmodel.CharsControl {
			why = "values are single lines of printable text"
		}
		return fmt.Errorf("parameter %q: character %d is %s (%s); %s. A runbook may allow it with allow: [%s]", p.Name, pos, textmodel.CharName(r), class, why, class)
	}
	return nil
}

func allows(p runbookmodel.Param, class string) bool {
	for _, a := range p.Allow {
		if a == class {
			return true
		}
	}
	return false
}
