package chatutil

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const fence = "```"

// Split cuts s into pieces of at most limit runes, at line breaks where
// possible; a line longer than a piece is cut. A fenced block cut in two is
// closed at the end of one piece and reopened (with its language) at the
// start of the next, so every piece renders on its own. Blank pieces are
// dropped: a blank s gives none.
func Split(s string, limit int) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	if utf8.RuneCountInString(s) <= limit {
		return []string{s}
	}
	var out []string
	var cur strings.Builder
	curRunes, prefixRunes := 0, 0 // prefixRunes: the reopened fence at the start
	inFence := false
	fenceOpen := fence // the opening line, with its language
	flush := func() {
		text := cur.String()
		if inFence {
			text = strings.TrimRight(text, "\n") + "\n" + fence
		}
		text = strings.TrimRight(text, "\n")
		if strings.TrimSpace(strings.Trim(text, "`\n ")) != "" {
			out = append(out, text)
		}
		cur.Reset()
		curRunes, prefixRunes = 0, 0
		if inFence {
			cur.WriteString(fenceOpen + "\n")
			curRunes = utf8.RuneCountInString(fenceOpen) + 1
			prefixRunes = curRunes
		}
	}
	budget := limit - len(fence) - 1 // room to close a fence
	for _, line := range strings.SplitAfter(s, "\n") {
		for curRunes+utf8.RuneCountInString(line) > budget {
			if curRunes > prefixRunes {
				flush()
				continue
			}
			// The line alone is longer than a piece: cut it.
			rs := []rune(line)
			take := budget - curRunes
			cur.WriteString(string(rs[:take]))
			curRunes += take
			line = string(rs[take:])
			flush()
		}
		cur.WriteString(line)
		curRunes += utf8.RuneCountInString(line)
		if t := strings.TrimSpace(line); strings.HasPrefix(t, fence) && strings.Count(t, fence)%2 == 1 {
			inFence = !inFence
			if inFence {
				fenceOpen = fence
				if utf8.RuneCountInString(t) <= 20 {
					fenceOpen = t
				}
			}
		}
	}
	if curRunes > prefixRunes {
		inFence = false
		flush()
	}
	return out
}

// Truncate cuts s to at most limit runes, ending with a visible note of how
// much was cut; a fenced block left open is closed. For content that must
// fit in one message (an update cannot add thread replies).
func Truncate(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	keep := max(limit-60, limit/2)
	note := fmt.Sprintf("\n_(%d more characters not shown)_", n-keep)
	cut := string([]rune(s)[:keep])
	if strings.Count(cut, fence)%2 == 1 {
		cut += "\n" + fence
	}
	return cut + note
}

// Ellipsis cuts a short label (a button, a title) to max runes, ending
// with "…" when cut.
func Ellipsis(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-1]) + "…"
}
