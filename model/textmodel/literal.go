package textmodel

import (
	"regexp"
	"strings"
)

// markup matches what chat Markdown (Slack mrkdwn, Mattermost, the console)
// would read as markup in a value: emphasis and strike marks, a code
// span, a link; an underscore only where it can open or close emphasis
// (my_pipeline is plain text everywhere).
var markup = regexp.MustCompile("[*~`\\[]|(^|[^\\p{L}\\p{N}])_|_($|[^\\p{L}\\p{N}])")

// Literal makes a value from outside — a parameter someone typed, a name
// Concourse gave — read as itself once placed in a chat message: a value
// with markup in it (`.*`, `*prod*`, `_tmp_`) becomes a code span; any
// other value is returned unchanged.
func Literal(s string) string {
	if s == "" || !markup.MatchString(s) {
		return s
	}
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	// A value with backticks: a longer fence, padded so that a backtick
	// at either end stays inside (CommonMark code spans).
	fence := "``"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + s + " " + fence
}
