package bot

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Words for people. Stored states, statuses and journal types are
// identifiers ("awaiting_manual", "gate_opened"); nothing shown to a person
// uses them directly.

// journalWords names a journal entry type for the timeline.
var journalWords = map[runmodel.JournalType]string{
	runmodel.JRunStarted:   "run started",
	runmodel.JStepStarted:  "step started",
	runmodel.JStepDone:     "step done",
	runmodel.JStepSkipped:  "step skipped",
	runmodel.JStepFailed:   "step failed",
	runmodel.JIntent:       "about to call",
	runmodel.JOutcome:      "result",
	runmodel.JGateOpened:   "approval requested",
	runmodel.JVote:         "vote",
	runmodel.JVoteRefused:  "vote not counted",
	runmodel.JVoteVoided:   "approval voided",
	runmodel.JGateDecided:  "approval decided",
	runmodel.JManualDone:   "manual step answered",
	runmodel.JReconciled:   "checked again after a restart",
	runmodel.JRunFinished:  "run finished",
	runmodel.JRunCancelled: "run cancelled",
}

// journalLine renders one journal entry for people: what happened, by
// whom (their name, not their platform id) and the message, with the
// identifiers of older entries (a stored state, a Go map) put into words.
func journalLine(e runmodel.JournalEntry, r *runmodel.Run) string {
	what, ok := journalWords[e.Type]
	if !ok {
		what = strings.ReplaceAll(string(e.Type), "_", " ")
	}
	if e.Actor != "" {
		what += " by " + journalActor(e, r)
	}
	msg := e.Message
	switch e.Type {
	case runmodel.JRunStarted:
		// Written from the run, not the stored message (older versions
		// stored the parameters as a Go map).
		msg = fmt.Sprintf("%s on %s", r.Runbook, r.Target)
		if p := FormatParams(r.Params); p != "" {
			msg += " with " + p
		}
	case runmodel.JManualDone:
		st, note, _ := strings.Cut(msg, ": ")
		if w, ok := manualWords[runmodel.StepStatus(st)]; ok {
			msg = w + optional(note)
		}
	case runmodel.JRunFinished:
		st, rest, _ := strings.Cut(msg, ": ")
		msg = runmodel.RunState(st).Human() + optional(rest)
	case runmodel.JGateDecided:
		msg = decisionWords(msg) // the votes, just before, name the voters
	}
	if msg == "" {
		return what
	}
	return what + ": " + msg
}

// manualWords says how a person answered a manual step.
var manualWords = map[runmodel.StepStatus]string{runmodel.StepSucceeded: "done", runmodel.StepSkipped: "skipped", runmodel.StepFailed: "marked failed"}

// FormatParams renders run parameters as "k=v k=v", sorted by name.
func FormatParams(p map[string]string) string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + quoteIfSpaced(p[k])
	}
	return strings.Join(parts, " ")
}

// formatArgs renders operation arguments as "k=v k=v", sorted by name;
// lists and mappings are written as JSON.
func formatArgs(a opmodel.Args) string {
	keys := make([]string, 0, len(a))
	for k := range a {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		var v string
		switch x := a[k].(type) {
		case string:
			v = quoteIfSpaced(x)
		case nil:
			v = `""`
		case bool, int, int64, float64, uint64:
			v = fmt.Sprint(x)
		default:
			b, err := json.Marshal(x)
			if err != nil {
				b = []byte(fmt.Sprintf("%q", fmt.Sprint(x)))
			}
			v = string(b)
		}
		parts[i] = k + "=" + v
	}
	return strings.Join(parts, " ")
}

func quoteIfSpaced(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"") {
		return fmt.Sprintf("%q", s)
	}
	return s
}
