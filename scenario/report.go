package scenario

import (
	"fmt"
	"strings"
)

// transcriptLines is how much of the thread a failure report shows.
const transcriptLines = 40

// Report renders the result for people: one line when it passed; when it
// failed, every difference as want/got, then the end of the thread.
func (r *Result) Report() string {
	var b strings.Builder
	sc := r.Scenario
	status := "PASS"
	if !r.Passed() {
		status = "FAIL"
	}
	fmt.Fprintf(&b, "%s %s (%s:%d, %s)\n", status, sc.ID(), sc.File, sc.Line, r.Elapsed.Round(1e6))
	if r.Passed() {
		return b.String()
	}
	if r.Err != nil {
		for _, l := range strings.Split(r.Err.Error(), "\n") {
			fmt.Fprintf(&b, "    %s\n", l)
		}
		return b.String()
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "    %s: %s\n", f.Where, f.Msg)
	}
	lines := strings.Split(strings.TrimRight(r.Transcript, "\n"), "\n")
	if len(lines) > transcriptLines {
		fmt.Fprintf(&b, "    thread (last %d of %d lines):\n", transcriptLines, len(lines))
		lines = lines[len(lines)-transcriptLines:]
	} else {
		b.WriteString("    thread:\n")
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "      | %s\n", l)
	}
	return b.String()
}
