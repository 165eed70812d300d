// Package textmodel is the vocabulary of text that every part of groundcrew
// shares: which characters are ordinary and which are not (the classes a
// runbook parameter may allow), how a text is made safe to show
// (Sanitize), and which known name a typo meant (Suggest).
//
// It imports nothing of groundcrew: the model packages, the runbook format
// and every adapter use it without depending on each other.
package textmodel

import (
	"fmt"
	"unicode"
)

// Character classes of unusual characters (a runbook parameter may allow
// them by name: allow: [newline]).
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
