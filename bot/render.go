package bot

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// How many rows/items are shown inline before the rest goes one tap away.
const (
	tableInline = 15
	planInline  = 10
)

func stepIcon(st *runmodel.StepState) string {
	switch st.Status {
	case runmodel.StepSucceeded:
		if st.Warn {
			return "⚠️"
		}
		return "✅"
	case runmodel.StepFailed:
		return "❌"
	case runmodel.StepSkipped:
		return "⏭"
	case runmodel.StepCancelled:
		return "🚫"
	case runmodel.StepManual:
		return "✋"
	case runmodel.StepWaiting:
		return "⏳"
	case runmodel.StepGated:
		return "🔒"
	case runmodel.StepRunning, runmodel.StepExecuting:
		return "▶️"
	}
	return "•"
}

func runIcon(s runmodel.RunState) string {
	switch s {
	case runmodel.RunSucceeded:
		return "✅"
	case runmodel.RunFailed:
		return "❌"
	case runmodel.RunCancelled:
		return "🚫"
	}
	return "🛠"
}

func stepTitle(st *runmodel.StepState) string {
	if st.Title != "" {
		return st.Title
	}
	return st.ID
}

// stateLine says what a run is doing in a few words.
func stateLine(r *runmodel.Run) string {
	st := r.Current()
	pos := ""
	if st != nil {
		pos = fmt.Sprintf(" (step %d/%d: %s)", r.Cursor+1, len(r.Steps), nonEmpty(st.Title, st.ID))
	}
	switch r.State {
	case runmodel.RunAwaitingApproval:
		return "🔒 waiting for approval" + pos
	case runmodel.RunAwaitingManual:
		return "✋ waiting for a person" + pos
	case runmodel.RunWaiting:
		return "⏳ waiting" + pos
	case runmodel.RunRunning:
		return "▶️ running" + pos
	case runmodel.RunSucceeded:
		return "✅ succeeded"
	case runmodel.RunFailed:
		if st := failedWith(r); st != nil {
			// The step says the error in full; the status points at it.
			return "❌ " + stopWords(r, st, false)
		}
		return "❌ failed: " + r.Error
	case runmodel.RunCancelled:
		return "🚫 " + r.Error
	}
	return r.State.Human()
}

// renderRoot renders the run's root message at time now.
func renderRoot(r *runmodel.Run, now time.Time) chatmodel.Message {
	dry := ""
	if r.DryRun {
		dry = " (dry run)"
	}
	text := fmt.Sprintf("%s *%s* on `%s`%s — started by %s · run `%s`\nStatus: %s",
		runIcon(r.State), r.Runbook, r.Target, dry, r.Requester.Display(), r.ID, stateLine(r))
	if r.State.Terminal() {
		text += " · " + runDuration(r, now)
	} else {
		text += "\nThread below."
	}
	return chatmodel.Message{Text: text}
}

// runDuration says how long a run took, and how much of it was waiting
// for approval: "12 s (8 s waiting for approval)".
func runDuration(r *runmodel.Run, now time.Time) string {
	d := r.Duration(now)
	out := human.Duration(d)
	if w := min(r.ApprovalWait, d); w >= time.Second {
		out += fmt.Sprintf(" (%s waiting for approval)", human.Duration(w))
	}
	return out
}

// renderStep renders one step's message at time now.
func renderStep(r *runmodel.Run, st *runmodel.StepState, now time.Time, h hints) chatmodel.Message {
	idx := 0
	for i := range r.Steps {
		if r.Steps[i].ID == st.ID {
			idx = i
		}
	}
	var b strings.Builder
	head := fmt.Sprintf("%d/%d %s *%s*", idx+1, len(r.Steps), stepIcon(st), stepTitle(st))
	b.WriteString(head)
	note := ""
	if st.Text != "" && st.Kind != runbookmodel.KindManual {
		note = "\nℹ️ " + strings.TrimSpace(st.Text)
	}
	var btns []chatmodel.Button
	switch st.Status {
	case runmodel.StepManual:
		b.WriteString("\n" + strings.TrimSpace(st.Text) + "\n")
		b.WriteString(h.manual(r.ID, st.Text))
		if !st.Deadline.IsZero() {
			fmt.Fprintf(&b, " Times out in %s.", human.Duration(st.Deadline.Sub(now)))
		}
		v := r.ID + "|" + st.ID
		btns = []chatmodel.Button{{Action: chatmodel.IntentDone, Label: "Done", Value: v, Style: "primary"}, {Action: chatmodel.IntentSkip, Label: "Skip", Value: v}, {Action: chatmodel.IntentFail, Label: "Failed", Value: v, Style: "danger"}}
	case runmodel.StepWaiting:
		spec := r.Spec.Steps[idx]
		fmt.Fprintf(&b, " — up to %s, checking every %s", human.Duration(time.Duration(spec.Timeout)), human.Duration(nonZero(spec.Interval, 30*time.Second)))
		if st.Note != "" {
			b.WriteString("\n" + st.Note)
		}
	case runmodel.StepRunning:
		b.WriteString(" …")
	case runmodel.StepExecuting:
		if st.Plan != nil {
			b.WriteString(" — executing: " + st.Plan.Summary)
		} else {
			b.WriteString(" — executing …")
		}
	default:
		if st.Summary != "" {
			b.WriteString(" — " + st.Summary)
		}
		if st.Text != "" && st.Kind == runbookmodel.KindManual {
			b.WriteString("\n" + strings.TrimSpace(st.Text))
		}
		if st.Error != "" {
			b.WriteString("\n❗ " + st.Error)
		}
		if st.Note != "" && st.Kind == runbookmodel.KindManual {
			b.WriteString("\nNote: " + st.Note)
		}
		// Who approved is on the approval request, just above.
		if failed := (opmodel.Result{Items: st.Items}).Failed(); len(failed) > 0 && !namesAll(st.Summary, failed) {
			var ids []string
			for _, f := range failed {
				if f.Reason == "" || strings.Contains(st.Error, f.Reason) {
					ids = append(ids, fmt.Sprintf("`%s`", f.ID)) // the error above says why
					continue
				}
				ids = append(ids, fmt.Sprintf("`%s` (%s)", f.ID, f.Reason))
			}
			b.WriteString("\nDid not succeed: " + capList(ids, 10))
		}
		if st.Table != nil && len(st.Table.Rows) > 0 {
			b.WriteString("\n```\n" + renderTable(st.Table, tableInline) + "```")
		}
	}
	if note != "" {
		b.WriteString(note)
	}
	return chatmodel.Message{Text: b.String(), Buttons: btns}
}

// namesAll reports whether a step's summary already names every item
// that did not succeed ("1 still pending after 60 s (102): …"): then a
// "Did not succeed" line would only say them again.
func namesAll(summary string, failed []opmodel.ItemResult) bool {
	if summary == "" {
		return false
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(summary) {
		words[strings.Trim(w, "()[],;:.`'\"")] = true
	}
	for _, f := range failed {
		if !words[f.ID] {
			return false
		}
	}
	return true
}

func nonZero(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// renderGate renders an approval request, with its live state at time now.
func renderGate(r *runmodel.Run, g *runmodel.Gate, now time.Time, h hints) chatmodel.Message {
	st := r.Step(g.StepID)
	idx := 0
	for i := range r.Steps {
		if r.Steps[i].ID == g.StepID {
			idx = i
		}
	}
	var b strings.Builder
	title := g.StepID
	if st != nil {
		title = stepTitle(st)
	}
	icon, verdict := "🔒", "Approval needed"
	switch g.Decision {
	case runmodel.GateApproved:
		icon, verdict = "🔓", "Approved by "+userList(voters(g))
	case runmodel.GateRejected:
		icon, verdict = "⛔", "Rejected"
	case runmodel.GateExpired:
		icon, verdict = "⌛", fmt.Sprintf("Expired after %s with %d of %d approvals — nothing was done", human.Duration(time.Duration(g.Policy.Expires)), len(g.Votes), g.Policy.WithDefaults().Required)
	case runmodel.GateVoid:
		icon, verdict = "🚫", "Void — this request no longer applies"
	}
	fmt.Fprintf(&b, "%d/%d %s *%s* — %s", idx+1, len(r.Steps), icon, verdict, title)
	if g.Reason != "" {
		b.WriteString("\n⚠️ " + g.Reason)
	}
	if r.AlertInstance != "" {
		b.WriteString("\n" + alertLine(r))
	}
	if g.Plan != nil {
		if one, ok := oneItemPlan(g.Plan); ok {
			fmt.Fprintf(&b, "\nPlan: %s", one)
		} else {
			fmt.Fprintf(&b, "\nPlan: %s", g.Plan.Summary)
			if len(g.Plan.Items) > 0 && g.Plan.Op != "approval" {
				b.WriteString("\n" + renderPlanItems(g.Plan, planInline))
			}
		}
		for _, n := range g.Plan.Notes {
			if !strings.Contains(g.Plan.Summary, n) { // said once
				b.WriteString("\nℹ️ " + n)
			}
		}
		fmt.Fprintf(&b, "\nPlan hash `%s` · target `%s`", short(g.PlanHash), r.Target)
		if showTeams(r, g) {
			b.WriteString(" · " + teamsText(g.Teams))
		}
	}
	var btns []chatmodel.Button
	if g.Decision == runmodel.GatePending {
		left := expiresIn(g.ExpiresAt.Sub(now))
		fmt.Fprintf(&b, "\n%s · expires in %s (%s UTC)", policy.Describe(g.Policy, r.Requester.Display()), human.Duration(left), g.ExpiresAt.UTC().Format("15:04"))
		for _, l := range policy.TeamLines(g.Policy) {
			b.WriteString("\n" + l)
		}
		if l := policy.RoleLine(g.Policy); l != "" {
			b.WriteString("\n" + l)
		}
		if m := Missing(g); m != "" && len(g.Votes) > 0 {
			fmt.Fprintf(&b, "\nStill needed: %s", m)
		}
		b.WriteString("\n" + h.gate(r.ID))
		v := r.ID + "|" + g.ID
		btns = []chatmodel.Button{{Action: chatmodel.IntentApprove, Label: "Approve", Value: v, Style: "primary"}, {Action: chatmodel.IntentReject, Label: "Reject", Value: v, Style: "danger"}}
	}
	for _, rf := range g.Refusals {
		what := "" // an approval, as before
		if rf.Action != "" && rf.Action != "approval" {
			what = rf.Action + " "
		}
		fmt.Fprintf(&b, "\n• %s — %snot counted: %s", rf.User.Display(), what, rf.Reason)
	}
	for _, rf := range g.Voided {
		fmt.Fprintf(&b, "\n• ⚠️ %s", voidLine(rf.User, rf.Reason))
	}
	for _, w := range g.Withdrawals {
		what := "approval"
		if !w.Approve {
			what = "rejection"
		}
		fmt.Fprintf(&b, "\n• %s withdrew their %s %s (%s removed)", w.User.Display(), what, w.At.UTC().Format("15:04"), w.Via)
	}
	for _, v := range g.Votes {
		verb := "✅ approved"
		if !v.Approve {
			verb = "❌ rejected"
		}
		if v.BreakGlass {
			verb = "🚨 BREAK-GLASS approved"
		}
		via := string(v.Via)
		for _, c := range v.AlsoVia {
			via += " and " + string(c)
		}
		fmt.Fprintf(&b, "\n• %s %s %s (%s)%s", v.User.Display(), verb, v.At.UTC().Format("15:04"), via, optional(v.Reason))
	}
	return chatmodel.Message{Text: b.String(), Buttons: btns}
}

// expiresIn rounds the time a gate has left to the nearest minute (to the
// second under a minute): a 30 min gate edited seconds after it opened
// still says 30 min, not 29 (29 min 58 s, truncated).
func expiresIn(left time.Duration) time.Duration {
	if left >= time.Minute-time.Second/2 {
		return left.Round(time.Minute)
	}
	return left.Round(time.Second)
}

// renderPlanItems lists plan items, at most n, one per line.
// oneItemPlan says a plan of one item whose summary names it in one line:
// "pause 1 pipeline: main/app (running, public no)", not the name again
// on a line of its own under the step's title that said it already.
func oneItemPlan(p *opmodel.Plan) (string, bool) {
	if len(p.Items) != 1 || p.Op == "approval" {
		return "", false
	}
	it := p.Items[0]
	at := wordAt(p.Summary, it.ID)
	if at < 0 {
		return "", false
	}
	if it.Detail == "" {
		return p.Summary, true
	}
	end := at + len(it.ID)
	return p.Summary[:end] + " (" + it.Detail + ")" + p.Summary[end:], true
}

// wordAt is the index of the first occurrence of word in s that is a
// whole name (not a part of a longer one: "1" is not in "abort 1021"), or -1.
func wordAt(s, word string) int {
	if word == "" {
		return -1
	}
	inName := func(r rune) bool {
		return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./", r)
	}
	for from := 0; from < len(s); {
		i := strings.Index(s[from:], word)
		if i < 0 {
			return -1
		}
		i += from
		before, _ := utf8.DecodeLastRuneInString(s[:i])
		after, _ := utf8.DecodeRuneInString(s[i+len(word):])
		if (i == 0 || !inName(before)) && (i+len(word) == len(s) || !inName(after) || after == '.' && i+len(word)+1 == len(s)) {
			return i
		}
		from = i + 1
	}
	return -1
}

func renderPlanItems(p *opmodel.Plan, n int) string {
	var lines []string
	for i, it := range p.Items {
		if i == n {
			lines = append(lines, fmt.Sprintf("… and %d more (full list in the thread)", len(p.Items)-n))
			break
		}
		line := fmt.Sprintf("• %s `%s`", it.Kind, it.ID)
		if it.Detail != "" {
			line += " — " + it.Detail
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// renderFinal renders the message posted when a run ends — its summary:
// how it ended, what it changed, how its steps ended, and the details (the
// steps, the approvals) one tap away. journal is the run's journal (nil
// when it could not be read). `/runbook summary` posts the same facts
// again, on their own.
func renderFinal(r *runmodel.Run, journal []runmodel.JournalEntry, now time.Time) chatmodel.Message {
	var b strings.Builder
	// The error is said in full once, where it happened (the step, its
	// approval request) or, when it belongs to no step, in the run's
	// status; the end message only says where the run stopped.
	verb := map[runmodel.RunState]string{runmodel.RunSucceeded: "finished", runmodel.RunFailed: "failed", runmodel.RunCancelled: "was cancelled"}[r.State]
	if st := failedWith(r); st != nil && r.State == runmodel.RunFailed {
		verb = stopWords(r, st, true)
	} else if by := cancelledBy(r, journal); by != "" {
		verb += " by " + by
	}
	fmt.Fprintf(&b, "%s *%s* on `%s` %s after %s", runIcon(r.State), r.Runbook, r.Target, verb, runDuration(r, now))
	if changes := changesMade(r, journal); changes != "" {
		b.WriteString(" — " + changes)
	} else if !r.DryRun && journal != nil { // nil: the journal could not be read
		b.WriteString(" — nothing was changed" + movedFirst(r, journal))
	}
	fmt.Fprintf(&b, "\n%s · `/runbook summary %s`", stepCounts(r), r.ID)
	if fu := followUps(r); len(fu) > 0 {
		b.WriteString("\nFollow-up: " + strings.Join(fu, " · "))
	}
	m := chatmodel.Message{Text: b.String(), Broadcast: true}
	// The details list the steps and the votes: for a run of one step they
	// would only repeat its message and its approval request, just above.
	if journal != nil && len(r.Steps) > 1 { // nil: the journal could not be read
		m.Detail = summaryDetail(r, journal)
	}
	return m
}

// stepNumber is a step's position in its run: "step 3/9".
func stepNumber(r *runmodel.Run, st *runmodel.StepState) string {
	n := 0
	for i := range r.Steps {
		if r.Steps[i].ID == st.ID {
			n = i + 1
			break
		}
	}
	return fmt.Sprintf("step %d/%d", n, len(r.Steps))
}

// stepPlace names a step for a pointer to it: "step 3/9 (Prune caascad-…-0)".
func stepPlace(r *runmodel.Run, st *runmodel.StepState) string {
	return stepNumber(r, st) + " (" + stepTitle(st) + ")"
}

// stopWords says where and how a failed run stopped, pointing at the step
// whose message (or approval request) says why: "failed at step 1/1
// (Pause nope)", "rejected at step 7/9 (Prune …)". sentence: as the verb
// of a sentence about the run, and without the title, which the root
// above already says ("was rejected at step 7/9").
func stopWords(r *runmodel.Run, st *runmodel.StepState, sentence bool) string {
	how := "failed"
	switch {
	case st.ID == rejectedStep(r):
		how = "rejected"
		if sentence {
			how = "was rejected"
		}
	case r.Gate != nil && r.Gate.Decision == runmodel.GateExpired && r.Gate.StepID == st.ID:
		how = "not approved in time"
		if sentence {
			how = "was not approved in time"
		}
	}
	if sentence {
		return how + " at " + stepNumber(r, st)
	}
	return how + " at " + stepPlace(r, st)
}

// RunStopped says where a failed run stopped, for a page that shows the
// steps below it: the step whose error ended the run and the words that
// point at it ("failed at step 1/1 (Pause nope)"), as the run's status in
// chat says it. ok is false when the run did not fail at a step (its
// error, if any, belongs to no step and is said as it is).
func RunStopped(r *runmodel.Run) (step, words string, ok bool) {
	st := failedWith(r)
	if st == nil || r.State != runmodel.RunFailed {
		return "", "", false
	}
	return st.ID, stopWords(r, st, false), true
}

// cancelledBy names who cancelled the run, from its journal ("" when it
// was not cancelled by a person or the journal does not say).
func cancelledBy(r *runmodel.Run, journal []runmodel.JournalEntry) string {
	if r.State != runmodel.RunCancelled {
		return ""
	}
	for _, j := range journal {
		if j.Type == runmodel.JRunCancelled && j.Actor != "" {
			return journalActor(j, r)
		}
	}
	return ""
}

// changesMade summarises the write and destructive calls the run made (or
// attempted: a call that failed may have changed part of its plan), one
// per outcome, joined with "; ".
func changesMade(r *runmodel.Run, journal []runmodel.JournalEntry) string {
	var parts []string
	for _, c := range RunChanges(r, journal) {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "; ")
}

// Change is one write or destructive call of a run: its step and
// what the call did (or tried to do). Step is the step id.
type Change struct {
	Step string `json:"step"`
	Text string `json:"change"`
}

// RunChanges lists the write and destructive calls of the run, in order.
// It reads the journal's outcome entries, which the engine writes after
// every write and destructive call (never after a read), so a write
// without an approval — unpause a pipeline, re-check a resource type — is
// listed as much as an approved prune. A call interrupted by a crash and
// found in effect on restart (reconciled) is listed too.
// A call that found every item already as wanted changed nothing: it is
// not listed (RunNoChanges lists it).
func RunChanges(r *runmodel.Run, journal []runmodel.JournalEntry) []Change {
	var out []Change
	for _, j := range journal {
		st := r.Step(j.Step)
		if st == nil || j.Type == runmodel.JOutcome && (noChange(st) || j.Outcome == runmodel.CallUnchanged || j.Outcome == runmodel.CallNotMade) {
			continue
		}
		var s string
		switch {
		case j.Type == runmodel.JOutcome && (j.Outcome == runmodel.CallFailed || j.Outcome == "" && strings.HasPrefix(j.Message, outcomeFailedPrefix)):
			s = "attempted " + attempted(st) + " — failed"
			// The error is on the step's own line (reply, summary, final
			// message); a change list does not say it again.
			if why := strings.TrimPrefix(j.Message, outcomeFailedPrefix); why != "" && !strings.Contains(st.Error, why) {
				s += ": " + why
			}
		case j.Type == runmodel.JOutcome:
			s = nonEmpty(j.Message, attempted(st))
			if failed := (opmodel.Result{Items: st.Items}).Failed(); len(failed) > 0 {
				ids := make([]string, 0, len(failed))
				for _, f := range failed {
					ids = append(ids, f.ID)
				}
				s += fmt.Sprintf("; %d did not succeed: %s", len(failed), capList(ids, 20))
			}
		case j.Type == runmodel.JReconciled && st.Status == runmodel.StepSucceeded && strings.HasPrefix(j.Message, "effect visible"):
			s = attempted(st) + " — in effect (checked again after a restart)"
		default:
			continue
		}
		if len(st.ApprovedBy) > 0 {
			s += " (approved by " + userList(st.ApprovedBy) + ")"
		}
		out = append(out, Change{Step: st.ID, Text: s})
	}
	return out
}

// noChange reports whether a step's call found every item of its plan
// already in the wanted state (an unpause of a pipeline that was not paused).
func noChange(st *runmodel.StepState) bool {
	if st.Status != runmodel.StepSucceeded || len(st.Items) == 0 {
		return false
	}
	for _, it := range st.Items {
		if it.Outcome != opmodel.OutcomeAlreadyDone {
			return false
		}
	}
	return true
}

// RunNoChanges lists the write and destructive calls that changed nothing
// (every item was already as wanted), and the approved ones not made
// because their objects moved first (what was found of each).
func RunNoChanges(r *runmodel.Run, journal []runmodel.JournalEntry) []Change {
	var out []Change
	for _, j := range journal {
		if st := r.Step(j.Step); st != nil && j.Type == runmodel.JOutcome && (noChange(st) || j.Outcome == runmodel.CallNotMade) {
			out = append(out, Change{Step: st.ID, Text: nonEmpty(j.Message, attempted(st))})
		}
	}
	return out
}

// movedFirst says, in brackets, why approved calls of the run were not
// made: what the re-check found of their objects ("(w-0 is no longer
// registered: … — nothing to prune)"); "" when every approved call was made.
func movedFirst(r *runmodel.Run, journal []runmodel.JournalEntry) string {
	var out []string
	for _, j := range journal {
		if j.Type == runmodel.JOutcome && j.Outcome == runmodel.CallNotMade && r.Step(j.Step) != nil {
			out = append(out, j.Message)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + capList(out, 2) + ")"
}

// outcomeFailedPrefix starts the journal message of a call that failed
// (entries written before CallOutcome are recognised by it).
const outcomeFailedPrefix = "failed: "

// attempted names what a step's call was meant to do.
func attempted(st *runmodel.StepState) string {
	if st.Plan != nil && st.Plan.Summary != "" {
		return st.Plan.Summary
	}
	if st.Op != "" {
		return st.Op
	}
	return nonEmpty(st.Title, st.ID)
}

// renderTable renders a table in fixed-width columns, at most n rows.
func renderTable(t *opmodel.Table, n int) string {
	widths := make([]int, len(t.Columns))
	for i, c := range t.Columns {
		widths[i] = utf8.RuneCountInString(c)
	}
	rows := t.Rows
	more := 0
	if n > 0 && len(rows) > n {
		more = len(rows) - n
		rows = rows[:n]
	}
	for _, row := range rows {
		for i, c := range row {
			if i < len(widths) && utf8.RuneCountInString(c) > widths[i] {
				widths[i] = utf8.RuneCountInString(c)
			}
		}
	}
	var b strings.Builder
	line := func(cells []string) {
		for i, c := range cells {
			if i >= len(widths) {
				break
			}
			if i == len(cells)-1 {
				b.WriteString(c)
			} else {
				b.WriteString(c + strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
			}
		}
		b.WriteString("\n")
	}
	line(t.Columns)
	for _, row := range rows {
		line(row)
	}
	if more > 0 {
		fmt.Fprintf(&b, "… %d more rows\n", more)
	}
	return b.String()
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// alertLine says which machine the alert that started the run is about,
// next to the worker the run resolved (the step that checked the alert's
// instance), so an approver sees both before approving.
func alertLine(r *runmodel.Run) string {
	line := fmt.Sprintf("🔔 Started from an alert on `%s`", r.AlertInstance)
	for _, st := range r.Steps {
		if st.Status != runmodel.StepSucceeded || st.Args.String("alert_instance") == "" || len(st.Result) == 0 {
			continue
		}
		var w struct {
			Name  string `json:"name"`
			Found bool   `json:"found"`
		}
		if json.Unmarshal(st.Result, &w) == nil && w.Found && w.Name != "" {
			line += fmt.Sprintf(" · resolved worker `%s`", w.Name)
		}
	}
	return line
}
