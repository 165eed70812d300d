package bot

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// RunMarkdown renders a run and its journal as Markdown ready to paste into
// a post-mortem: what ran, who approved what plan, what changed, and the
// timeline. It reads only the stored facts.
func RunMarkdown(r *runmodel.Run, journal []runmodel.JournalEntry) string {
	var b strings.Builder
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
	fmt.Fprintf(&b, "# %s on %s — run %s\n\n", r.Runbook, r.Target, r.ID)
	fmt.Fprintf(&b, "- **Runbook:** %s (%s)\n", r.Runbook, r.Title)
	fmt.Fprintf(&b, "- **Target:** %s\n", r.Target)
	fmt.Fprintf(&b, "- **Started by:** %s at %s\n", r.Requester.Display(), ts(r.CreatedAt))
	if r.Scope != nil {
		fmt.Fprintf(&b, "- **Channel:** `%s`, bound to %s: the run read and changed only that\n", r.Scope.Key, policy.ScopeOfRun(r.Scope).What())
	}
	if teams := r.Teams(); len(teams) > 0 {
		fmt.Fprintf(&b, "- **Teams:** %s (whose things its changes concern)\n", strings.Join(quoteAll(teams), ", "))
	}
	if len(r.Params) > 0 {
		var ps []string
		for k, v := range r.Params {
			ps = append(ps, fmt.Sprintf("`%s=%s`", k, v))
		}
		fmt.Fprintf(&b, "- **Parameters:** %s\n", strings.Join(sortedStrings(ps), " "))
	}
	if r.FinishedAt.IsZero() {
		fmt.Fprintf(&b, "- **Outcome:** still open — %s (for %s)\n", r.State.Human(), human.Duration(r.Duration(time.Now())))
	} else {
		fmt.Fprintf(&b, "- **Outcome:** %s (ended %s, duration %s)\n", r.State.Human(), ts(r.FinishedAt), human.Duration(r.Duration(time.Now())))
	}
	if r.DryRun {
		b.WriteString("- **Dry run:** nothing was changed\n")
	}
	if r.Error != "" && r.State != runmodel.RunSucceeded {
		fmt.Fprintf(&b, "- **Reason:** %s\n", whyStopped(r, journal, true))
	}
	if cs := RunChanges(r, journal); len(cs) > 0 {
		b.WriteString("- **Changes made:**\n")
		for _, c := range cs {
			fmt.Fprintf(&b, "  - %s: %s\n", mdCell(stepName(r, c.Step)), mdCell(c.Text))
		}
	} else if !r.DryRun {
		b.WriteString("- **Changes made:** none" + mdCell(movedFirst(r, journal)) + "\n")
	}
	b.WriteString("\n## Steps\n\n| # | Step | Kind | Status | Result |\n|---|---|---|---|---|\n")
	for i, st := range r.Steps {
		res := st.Summary
		if st.Error != "" {
			res = strings.TrimSpace(res + " " + st.Error)
		}
		if st.By != nil && !strings.Contains(res, st.By.Display()) {
			res += " (" + st.By.Display() + ")"
		}
		if len(st.ApprovedBy) > 0 && !mentionsApproval(res) {
			res += " — approved by " + userList(st.ApprovedBy)
		}
		status := st.Status.Human()
		if st.Status == runmodel.StepPending && r.State.Terminal() {
			status = "not run"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, mdCell(nonEmpty(st.Title, st.ID)), st.Kind, status, mdCell(res))
	}
	var votes []string
	for _, e := range journal {
		if e.Type == runmodel.JVote || e.Type == runmodel.JVoteRefused || e.Type == runmodel.JVoteVoided || e.Type == runmodel.JGateDecided || e.Type == runmodel.JGateOpened {
			votes = append(votes, fmt.Sprintf("- %s %s — %s%s", ts(e.Time), mdCell(stepName(r, e.Step)), mdCell(journalLine(e, r)), hashNote(e.PlanHash)))
		}
	}
	if len(votes) > 0 {
		b.WriteString("\n## Approvals\n\n" + strings.Join(votes, "\n") + "\n")
	}
	b.WriteString("\n## Timeline\n\n")
	stop := failedWith(r)
	for _, e := range journal {
		step := ""
		if e.Step != "" {
			step = " " + mdCell(stepName(r, e.Step)) + " —"
		}
		fmt.Fprintf(&b, "- %s%s %s\n", ts(e.Time), step, mdCell(timelineLine(e, r, stop)))
	}
	return b.String()
}

// timelineLine is a journal entry in words, in a timeline shown below the
// run's steps (`runs show`, the run's page): the error of the step that
// stopped the run (stop, from failedWith) is on that step; the timeline
// says when, not again what.
func timelineLine(e runmodel.JournalEntry, r *runmodel.Run, stop *runmodel.StepState) string {
	if stop != nil && r.State == runmodel.RunFailed {
		switch {
		case e.Type == runmodel.JStepFailed && e.Step == stop.ID && e.Message == stop.Error:
			return journalWords[e.Type]
		case e.Type == runmodel.JRunFinished:
			return journalWords[e.Type] + ": " + stopWords(r, stop, false)
		}
	}
	return journalLine(e, r)
}

func hashNote(h string) string {
	if h == "" {
		return ""
	}
	return " (plan " + short(h) + ")"
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

func sortedStrings(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// Summary renders the end-of-run summary from the run and its journal: a
// short message for the thread, with the details one tap away.
func (e *Engine) Summary(r *runmodel.Run, journal []runmodel.JournalEntry) chatmodel.Message {
	return summarize(r, journal, e.opts.Now())
}

// summarize renders the end-of-run summary at time now (see Summary).
func summarize(r *runmodel.Run, journal []runmodel.JournalEntry, now time.Time) chatmodel.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "📋 *Summary* of `%s` — %s on `%s`: %s %s after %s\n", r.ID, r.Runbook, r.Target, runIcon(r.State), r.State.Human(), human.Duration(r.Duration(now)))
	fmt.Fprintf(&b, "Started by %s · %s", r.Requester.Display(), stepCounts(r))
	if r.Scope != nil || len(r.Teams()) > 1 {
		// Where it was scoped, and whose things: said when a channel's
		// binding scoped it or it concerned several teams (the changes
		// below name a single team's pipelines already).
		b.WriteString("\n📌 " + policy.RunScope(r))
	}
	if c := changesMade(r, journal); c != "" {
		b.WriteString("\nChanges: " + c)
	} else if !r.DryRun {
		b.WriteString("\nChanges: none" + movedFirst(r, journal))
	}
	if r.Error != "" && r.State != runmodel.RunSucceeded {
		b.WriteString("\nWhy it stopped: " + whyStopped(r, journal, false))
	}
	if fu := followUps(r); len(fu) > 0 {
		b.WriteString("\nFollow-up: " + strings.Join(fu, " · "))
	}
	return chatmodel.Message{Text: b.String(), Detail: summaryDetail(r, journal)}
}

// stepCounts says how many steps the run has and how they ended: "4
// steps: 2 succeeded, 1 failed, 1 not run" (" · dry run, nothing changed").
func stepCounts(r *runmodel.Run) string {
	counts := map[runmodel.StepStatus]int{}
	for _, st := range r.Steps {
		if st.Status == runmodel.StepFailed && strings.HasPrefix(st.Error, "timed out") {
			counts["timed out"]++
			continue
		}
		counts[st.Status]++
	}
	var cs []string
	for _, s := range []runmodel.StepStatus{runmodel.StepSucceeded, runmodel.StepFailed, "timed out", runmodel.StepSkipped, runmodel.StepCancelled, runmodel.StepPending} {
		if counts[s] > 0 {
			label := string(s)
			if s == runmodel.StepPending {
				label = "not run"
			}
			cs = append(cs, fmt.Sprintf("%d %s", counts[s], label))
		}
	}
	out := fmt.Sprintf("%d step%s", len(r.Steps), plural(len(r.Steps)))
	if len(cs) > 0 {
		out += ": " + strings.Join(cs, ", ")
	}
	if r.DryRun {
		out += " · dry run, nothing changed"
	}
	return out
}

// followUps renders the runbook's follow_up suggestions as commands.
func followUps(r *runmodel.Run) []string {
	if r.Spec == nil {
		return nil
	}
	var out []string
	env := runEnv(r)
	for _, f := range r.Spec.FollowUp {
		s, err := runbooks.Render(f, env)
		if err != nil || strings.TrimSpace(s) == "" {
			continue
		}
		out = append(out, fmt.Sprintf("`/runbook run %s target=%s`", strings.TrimSpace(s), r.Target))
	}
	return out
}

// summaryDetail is the long part of a summary: steps (with who answered
// the manual ones, and when), approvals, changes and what is still open.
// Steps are named by their titles. The error of the step that stopped the
// run is not said again: "Why it stopped" points at it.
func summaryDetail(r *runmodel.Run, journal []runmodel.JournalEntry) string {
	hm := func(t time.Time) string { return t.UTC().Format("15:04") }
	stop := failedWith(r)
	var b strings.Builder
	b.WriteString("Steps:\n")
	for i := range r.Steps {
		st := &r.Steps[i]
		line := fmt.Sprintf("%d. %s %s", i+1, stepIcon(st), stepTitle(st))
		if st.Status == runmodel.StepPending {
			line += " — not run"
		}
		if st.Summary != "" {
			line += " — " + st.Summary
		}
		switch {
		case st.Error != "" && st == stop:
			// Said once, in the thread; "Why it stopped" points at it.
		case st.Error != "":
			line += " — " + st.Error
		}
		if st.Kind == runbookmodel.KindManual && st.By != nil && st != stop {
			line += " at " + hm(st.FinishedAt)
			if st.Status != runmodel.StepFailed { // a failed one's error has the note
				line += optional(st.Note)
			}
		}
		b.WriteString(line + "\n")
	}
	// Approvals, by step: the votes, then what they decided (in a word:
	// the votes are listed just above).
	var approvals []string
	group := ""
	for _, j := range journal {
		var line string
		switch j.Type {
		case runmodel.JVote, runmodel.JVoteRefused, runmodel.JVoteVoided:
			words := voteWords(j.Message)
			if !strings.HasPrefix(words, "'") {
				words = " " + words
			}
			line = fmt.Sprintf("• %s %s%s (plan %s)", hm(j.Time), journalActor(j, r), words, short(j.PlanHash))
		case runmodel.JGateDecided:
			line = fmt.Sprintf("• %s → %s", hm(j.Time), decisionWords(j.Message))
		case runmodel.JReconciled, runmodel.JGateEscalated:
			line = fmt.Sprintf("• %s %s", hm(j.Time), j.Message)
		default:
			continue
		}
		if j.Step != group {
			group = j.Step
			approvals = append(approvals, "Approvals — "+stepName(r, j.Step)+":")
		}
		approvals = append(approvals, line)
	}
	if len(approvals) > 0 {
		b.WriteString(strings.Join(approvals, "\n") + "\n")
	}
	// The changes made are in the summary's text ("Changes: …").
	if same := RunNoChanges(r, journal); len(same) > 0 {
		b.WriteString("No change needed:\n")
		for _, c := range same {
			b.WriteString("• " + stepName(r, c.Step) + ": " + c.Text + "\n")
		}
	}
	// A failed step is not "still open": the run has moved past it or
	// ended, and the Steps above mark it (❌) with its error.
	if !r.State.Terminal() {
		b.WriteString("Still open:\n• the run is still " + r.State.Human() + ": " + stateLine(r) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// journalActor names the actor of a journal entry: as the run knows them,
// else by the name the entry recorded, else by id.
func journalActor(j runmodel.JournalEntry, r *runmodel.Run) string {
	name := actorName(j.Actor, r)
	if name == "@"+j.Actor && j.ActorName != "" {
		return "@" + j.ActorName
	}
	return name
}

func actorName(id string, r *runmodel.Run) string {
	if id == r.Requester.ID {
		return r.Requester.Display()
	}
	if r.Gate != nil {
		for _, v := range r.Gate.Votes {
			if v.User.ID == id {
				return v.User.Display()
			}
		}
		for _, rf := range append(append([]runmodel.Refusal(nil), r.Gate.Refusals...), r.Gate.Voided...) {
			if rf.User.ID == id {
				return rf.User.Display()
			}
		}
	}
	for _, st := range r.Steps {
		for _, u := range st.ApprovedBy {
			if u.ID == id {
				return u.Display()
			}
		}
		if st.By != nil && st.By.ID == id {
			return st.By.Display()
		}
	}
	return "@" + id
}

// IncidentSummary merges the runs started in a thread with the people's
// messages of that thread into one timeline. notes, when the thread belongs
// to another subsystem (an incident), heads the summary and adds its own
// timeline items; the engine knows nothing more of them.
func (e *Engine) IncidentSummary(runs []*runmodel.Run, journals map[string][]runmodel.JournalEntry, msgs []chatmodel.ThreadMessage, notes *chatmodel.ThreadNotes) chatmodel.Message {
	return incidentSummary(runs, journals, msgs, notes)
}

// incidentSummary is IncidentSummary: a plain function of its data.
func incidentSummary(runs []*runmodel.Run, journals map[string][]runmodel.JournalEntry, msgs []chatmodel.ThreadMessage, notes *chatmodel.ThreadNotes) chatmodel.Message {
	type item struct {
		at   time.Time
		text string
	}
	var items []item
	if notes != nil {
		for _, m := range notes.Items {
			items = append(items, item{m.Time, firstLine(m.Text)})
		}
	}
	for _, m := range msgs {
		if m.Bot {
			continue
		}
		items = append(items, item{m.Time, fmt.Sprintf("%s: %s", m.Author.Display(), firstLine(m.Text))})
	}
	var states []string
	for _, r := range runs {
		states = append(states, fmt.Sprintf("`%s` %s %s", r.ID, r.Runbook, r.State.Human()))
		for _, j := range journals[r.ID] {
			switch j.Type {
			case runmodel.JRunStarted:
				items = append(items, item{j.Time, fmt.Sprintf("▶ `%s` %s started by %s", r.ID, r.Runbook, r.Requester.Display())})
			case runmodel.JGateDecided:
				items = append(items, item{j.Time, fmt.Sprintf("`%s` %s: %s", r.ID, stepName(r, j.Step), j.Message)})
			case runmodel.JManualDone:
				st, note, _ := strings.Cut(j.Message, ": ")
				items = append(items, item{j.Time, fmt.Sprintf("`%s` %s: %s by %s%s", r.ID, stepName(r, j.Step), nonEmpty(manualWords[runmodel.StepStatus(st)], runmodel.StepStatus(st).Human()), journalActor(j, r), optional(note))})
			case runmodel.JOutcome:
				if j.Outcome == runmodel.CallUnchanged || j.Outcome == runmodel.CallNotMade {
					continue
				}
				items = append(items, item{j.Time, fmt.Sprintf("`%s` %s changed: %s", r.ID, stepName(r, j.Step), j.Message)})
			case runmodel.JRunFinished, runmodel.JRunCancelled:
				msg := j.Message
				if st := failedWith(r); st != nil && r.State == runmodel.RunFailed && j.Type == runmodel.JRunFinished {
					msg = stopWords(r, st, false) // the step says why, in the run's thread
				}
				items = append(items, item{j.Time, fmt.Sprintf("%s `%s` %s", runIcon(r.State), r.ID, msg)})
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	var b strings.Builder
	b.WriteString("📋 *Incident summary* — ")
	if notes != nil && notes.Heading != "" {
		b.WriteString(strings.TrimSpace(notes.Heading) + "\n")
	}
	if len(runs) == 0 {
		b.WriteString("no runs in this thread yet")
	} else {
		fmt.Fprintf(&b, "%d run%s in this thread: %s", len(runs), plural(len(runs)), strings.Join(states, "; "))
	}
	var changes []string
	for _, r := range runs {
		if c := changesMade(r, journals[r.ID]); c != "" {
			changes = append(changes, "`"+r.ID+"`: "+c)
		}
	}
	if len(changes) > 0 {
		b.WriteString("\nChanges: " + strings.Join(changes, "; "))
	}
	var d strings.Builder
	d.WriteString("Timeline (UTC):\n")
	for _, it := range items {
		fmt.Fprintf(&d, "%s %s\n", it.at.UTC().Format("15:04"), it.text)
	}
	return chatmodel.Message{Text: b.String(), Detail: strings.TrimRight(d.String(), "\n")}
}

// whyStopped says why a run that did not succeed stopped, pointing at the
// step that says it in full — in the thread, or in the Steps and Approvals
// of the Markdown (markdown) — or, when no step does, in the run's own
// words.
func whyStopped(r *runmodel.Run, journal []runmodel.JournalEntry, markdown bool) string {
	st := failedWith(r)
	where := map[bool][3]string{
		false: {"its message says why", "the reason is on its approval request", "their note is on that step"},
		true:  {"its error is in the Steps table", "the reason is under Approvals", "their note is in the Steps table"},
	}[markdown]
	// The step is named by its number: the title is on the step, in the
	// root's status and in the list of steps.
	switch {
	case st != nil && r.State == runmodel.RunFailed && st.ID == rejectedStep(r):
		var by []chatmodel.User
		for _, v := range r.Gate.Votes {
			if !v.Approve {
				by = append(by, v.User)
			}
		}
		if len(by) > 0 { // the reason is with the vote, under Approvals
			return fmt.Sprintf("%s was rejected by %s", stepNumber(r, st), userList(by))
		}
		return fmt.Sprintf("%s was rejected — %s", stepNumber(r, st), where[1])
	case st != nil && r.State == runmodel.RunFailed && r.Gate != nil && r.Gate.Decision == runmodel.GateExpired && r.Gate.StepID == st.ID:
		return stepNumber(r, st) + " was not approved in time"
	case st != nil && r.State == runmodel.RunFailed && st.Kind == runbookmodel.KindManual && st.By != nil:
		// A person's answer: who said it failed is the cause.
		why := fmt.Sprintf("%s marked %s failed", st.By.Display(), stepNumber(r, st))
		if st.Note != "" {
			why += " — " + where[2]
		}
		return why
	case st != nil && r.State == runmodel.RunFailed:
		return fmt.Sprintf("%s failed — %s", stepNumber(r, st), where[0])
	}
	if by := cancelledBy(r, journal); by != "" {
		return "cancelled by " + by // the reason, if given, is in the run's status
	}
	return r.Error
}

// stepName names a step by its title (its id when it has none, or when
// the run has no such step).
func stepName(r *runmodel.Run, id string) string {
	if st := r.Step(id); st != nil {
		return stepTitle(st)
	}
	return id
}

// voteWords puts a vote's journal message into words, to follow the
// voter's name: "approve" → "approved", "reject: not now" → "rejected: not
// now", "approve not counted: …" → "'s approval was not counted: …"; the
// others after a dash.
func voteWords(msg string) string {
	switch {
	case msg == "approve":
		return "approved"
	case msg == "reject" || strings.HasPrefix(msg, "reject: "):
		return "rejected" + strings.TrimPrefix(msg, "reject")
	case strings.HasPrefix(msg, "approve: "): // an approval with a note
		return "approved" + strings.TrimPrefix(msg, "approve")
	case strings.HasPrefix(msg, "approve not counted: "):
		return "'s approval was not counted: " + strings.TrimPrefix(msg, "approve not counted: ")
	case strings.HasPrefix(msg, "reject not counted: "):
		return "'s rejection was not counted: " + strings.TrimPrefix(msg, "reject not counted: ")
	}
	return "— " + msg
}

// decisionWords says what a gate's votes decided, without the voters (the
// vote lines name them): "approved by @bob, @carol" → "approved",
// "rejected by @carol: not now" → "rejected".
func decisionWords(msg string) string {
	for _, d := range []string{"approved by ", "rejected by "} {
		if strings.HasPrefix(msg, d) {
			return strings.TrimSuffix(d, " by ")
		}
	}
	return msg
}

// rejectedStep is the step whose gate was rejected, "" when none was.
func rejectedStep(r *runmodel.Run) string {
	if r.Gate != nil && r.Gate.Decision == runmodel.GateRejected {
		return r.Gate.StepID
	}
	return ""
}

// failedWith is the failed step whose error the run's error repeats (the
// step that ended the run), nil when there is none. Two failed steps may
// have the same error ("marked failed by @bob"; the first one's failure
// led on to the second): the one the run's error names, else the last.
func failedWith(r *runmodel.Run) *runmodel.StepState {
	if r.Error == "" {
		return nil
	}
	var found *runmodel.StepState
	for i := len(r.Steps) - 1; i >= 0; i-- {
		st := &r.Steps[i]
		if st.Status != runmodel.StepFailed || st.Error == "" || !strings.Contains(r.Error, st.Error) {
			continue
		}
		if strings.HasPrefix(r.Error, "step "+st.ID+" failed") {
			return st
		}
		if found == nil {
			found = st
		}
	}
	return found
}

// mentionsApproval reports whether a step's text already says who approved
// it (an approval step's summary is "approved by @carol").
func mentionsApproval(s string) bool {
	return strings.Contains(strings.ToLower(s), "approved by")
}
