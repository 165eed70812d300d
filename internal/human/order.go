package human

import (
	"cmp"
	"slices"
	"strings"
)

// Compare orders names as people read them ("natural" or "version"
// order): a run of digits compares by its value, so vol2 < vol10 < vol100
// < vol1000 and worker-9 < worker-10, where a plain string sort gives
// vol0, vol1000, vol100. Everything else compares byte by byte (case
// matters; a number sorts where its first digit would). Names equal but
// for leading zeros (a01, a1) order by their text, so the order is total:
// the same list always comes out the same.
func Compare(a, b string) int {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if isDigit(a[i]) && isDigit(b[j]) {
			si, sj := i, j
			for i < len(a) && isDigit(a[i]) {
				i++
			}
			for j < len(b) && isDigit(b[j]) {
				j++
			}
			// Any length: strip the leading zeros, then the longer
			// number is the larger.
			na, nb := strings.TrimLeft(a[si:i], "0"), strings.TrimLeft(b[sj:j], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			continue
		}
		if a[i] != b[j] {
			return cmp.Compare(a[i], b[j])
		}
		i++
		j++
	}
	if c := cmp.Compare(len(a)-i, len(b)-j); c != 0 {
		return c // the one that ended first is a prefix of the other
	}
	return strings.Compare(a, b)
}

// Sort sorts names in Compare's order.
func Sort(names []string) { slices.SortFunc(names, Compare) }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
