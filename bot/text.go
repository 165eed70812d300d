package bot

import (
	"fmt"
	"strings"
)

// limitText cuts s to n characters, marking the cut.
func limitText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func capList(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:n], ", ") + fmt.Sprintf(" and %d more", len(xs)-n)
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
