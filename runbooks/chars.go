package runbooks

import (
	"fmt"
	"unicode"
	"unicode/utf8"
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

// Character classes a parameter may allow (param field allow: [...]).
const (
	CharsNewline = "newline" // line breaks: \n, U+2028, U+2029
	CharsTab     = "tab"     // \t
	CharsControl = "control" // other control characters (\r, ESC, …); NUL never
	CharsFormat  = "format"  // invisible format characters: bidi controls, zero-width
)

// CharClasses are the classes allow may name.
var CharClasses = []string{CharsNewline, CharsTab, CharsControl, CharsFormat}

// CharClass returns the class of an unusual character, or "" for an
// ordinary printable one (letters, digits, punctuation, symbols, spaces,
// combining marks such as emoji variation selectors).
func CharClass(r rune) string {
	switch {
	case r == '\n' || r == '\u2028' || r == '\u2029':
		return CharsNewline
	case r == '\t':
		return CharsTab
	case unicode.Is(unicode.Cc, r):
		return CharsControl
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r), r == '\u115f', r == '\u1160', r == '\u3164', r == '\uffa0', r == '\u034f':
		// Format characters (U+202E RIGHT-TO-LEFT OVERRIDE, U+200B ZERO
		// WIDTH SPACE, …), private use, and the fillers that render as
		// nothing.
		return CharsFormat
	}
	return ""
}

// charNames names the characters people meet in spoofing attempts.
var charNames = map[rune]string{
	'\u202a': "LEFT-TO-RIGHT EMBEDDING", '\u202b': "RIGHT-TO-LEFT EMBEDDING", '\u202c': "POP DIRECTIONAL FORMATTING",
	'\u202d': "LEFT-TO-RIGHT OVERRIDE", '\u202e': "RIGHT-TO-LEFT OVERRIDE", '\u2066': "LEFT-TO-RIGHT ISOLATE",
	'\u2067': "RIGHT-TO-LEFT ISOLATE", '\u2068': "FIRST STRONG ISOLATE", '\u2069': "POP DIRECTIONAL ISOLATE",
	'\u200e': "LEFT-TO-RIGHT MARK", '\u200f': "RIGHT-TO-LEFT MARK", '\u061c': "ARABIC LETTER MARK",
	'\u200b': "ZERO WIDTH SPACE", '\u200c': "ZERO WIDTH NON-JOINER", '\u200d': "ZERO WIDTH JOINER",
	'\u2060': "WORD JOINER", '\ufeff': "ZERO WIDTH NO-BREAK SPACE", '\u00ad': "SOFT HYPHEN",
	'\n': "LINE FEED", '\r': "CARRIAGE RETURN", '\t': "TAB", 0: "NUL", '\x1b': "ESCAPE",
}

// CharName is "U+202E RIGHT-TO-LEFT OVERRIDE" (or just "U+0007").
func CharName(r rune) string {
	if n, ok := charNames[r]; ok {
		return fmt.Sprintf("U+%04X %s", r, n)
	}
	return fmt.Sprintf("U+%04X", r)
}

// CheckValue checks a parameter value against p's limits: its length
// (max_length, default MaxParamLength) and its characters (only ordinary
// printable ones unless allow names more; NUL and invalid UTF-8 never).
// The message names the parameter, the limit and how a runbook raises it.
func CheckValue(p Param, val string) error {
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
		class := CharClass(r)
		if class == "" || p.allows(class) {
			continue
		}
		why := "it is not shown, or changes how the text around it is shown, so approvers could read something else than what runs"
		if class == CharsNewline || class == CharsTab || class == CharsControl {
			why = "values are single lines of printable text"
		}
		return fmt.Errorf("parameter %q: character %d is %s (%s); %s. A runbook may allow it with allow: [%s]", p.Name, pos, CharName(r), class, why, class)
	}
	return nil
}

func (p Param) allows(class string) bool {
	for _, a := range p.Allow {
		if a == class {
			return true
		}
	}
	return false
}
