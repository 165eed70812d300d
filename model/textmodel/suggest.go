package textmodel

import "strings"

// Suggest returns the candidate closest to word when it is close enough to
// be a likely typo ("wroker" → "worker"), or "". Every "did you mean" of
// groundcrew comes from it: the runbook loader, the engine, the adapters.
func Suggest(word string, candidates []string) string {
	// An operation named without its provider ("workers" for
	// "concourse.workers") is a good guess when it is unambiguous.
	var suffixed []string
	for _, c := range candidates {
		if strings.HasSuffix(c, "."+word) {
			suffixed = append(suffixed, c)
		}
	}
	if len(suffixed) == 1 {
		return suffixed[0]
	}
	best, bestDist := "", -1
	for _, c := range candidates {
		if c == word {
			continue
		}
		d := editDistance(strings.ToLower(word), strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	// Allow roughly one edit per three characters, at least one.
	if best == "" || bestDist > max(1, len(word)/3) {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of neighbours ("wroker")
// each cost one. Names are ASCII, so bytes are compared.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
