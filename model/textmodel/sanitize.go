package textmodel

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize escapes what could make a message read differently from what
// it says: control characters (but line breaks and tabs), bidi controls,
// zero-width and other invisible format characters become a visible
// <U+202E>; invalid UTF-8 becomes U+FFFD. A zero width joiner between two
// symbols (emoji such as 👩‍💻) is kept. Parameters are refused such
// characters up front (runbooks.CheckValue); this covers everything else
// that reaches a message: reasons, notes, names, results of operations.
func Sanitize(s string) string {
	if !needsSanitizing(s) {
		return s
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range rs {
		switch CharClass(r) {
		case "", CharsNewline, CharsTab:
			if r == '\u2028' || r == '\u2029' {
				b.WriteByte('\n')
				continue
			}
			b.WriteRune(r)
		default:
			if r == '\u200d' && i > 0 && i+1 < len(rs) && isSymbol(rs[i-1]) && isSymbol(rs[i+1]) {
				b.WriteRune(r)
				continue
			}
			fmt.Fprintf(&b, "<U+%04X>", r)
		}
	}
	return b.String()
}

func isSymbol(r rune) bool {
	return unicode.Is(unicode.So, r) || r == '\ufe0f' || unicode.Is(unicode.Sk, r)
}

func needsSanitizing(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return true
		}
		if cl := CharClass(r); cl != "" && cl != CharsTab {
			return true
		}
		i += n
	}
	return false
}
