package bot

import (
	"fmt"
	"strings"
	"time"
)

// RunMarkdown renders a run and its journal as Markdown ready to paste into
// a post-mortem: what ran, who approved what plan, what changed, and the
// timeline. It reads only the stored facts.
func RunMarkdown(r *Run, journal []JournalEntry) string {
	var b strings.Builder
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
	fmt.Fprintf(&b, "# %s on %s — run %s\n\n", r.Runbook, r.Target, r.ID)
	fmt.Fprintf(&b, "- **Runbook:** %s (%s)\n", r.Runbook, r.Title)
	fmt.Fprintf(&b, "- **Target:** %s\n", r.Target)
	fmt.Fprintf(&b, "- **Started by:** %s at %s\n", r.Requester.Display(), ts(r.CreatedAt))
	if len(r.Params) > 0 {
		var ps []string
		for k, v := range r.Params {
			ps = append(ps, fmt.Sprintf("`%s=%s`", k, v))
		}
		fmt.Fprintf(&b, "- **Parameters:** %s\n", strings.Join(sortedStrings(ps), " "))
	}
	end := "still open"
	if !r.FinishedAt.IsZero() {
		end = ts(r.FinishedAt)
	}
	fmt.Fprintf(&b, "- **Outcome:** %s (ended %s, duration %s)\n", r.State, end, humanDuration(r.Duration(time.Now())))
	if r.DryRun {
		b.WriteString("- **Dry run:** nothing was changed\n")
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "- **Reason:** %s\n", r.Error)
	}
	if c := changesMade(r); c != "" {
		fmt.Fprintf(&b, "- **Changes made:** %s\n", c)
	}
	b.WriteString("\n## Steps\n\n| # | Step | Kind | Status | Result |\n|---|---|---|---|---|\n")
	for i, st := range r.Steps {
		res := st.Summary
		if st.Error != "" {
			res = strings.TrimSpace(res + " " + st.Error)
		}
		if st.By != nil {
			res += " (" + st.By.Display() + ")"
		}
		if len(st.ApprovedBy) > 0 {
			res += " — approved by " + userList(st.ApprovedBy)
		}
		status := string(st.Status)
		if st.Status == StepPending && r.State.Terminal() {
			status = "not run"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s |\n", i+1, mdCell(nonEmpty(st.Title, st.ID)), st.Kind, status, mdCell(res))
	}
	var votes []string
	for _, e := range journal {
		if e.Type == JVote || e.Type == JVoteRefused || e.Type == JGateDecided || e.Type == JGateOpened {
			votes = append(votes, fmt.Sprintf("- %s `%s` %s %s%s", ts(e.Time), e.Step, e.Type, mdCell(e.Message), hashNote(e.PlanHash)))
		}
	}
	if len(votes) > 0 {
		b.WriteString("\n## Approvals\n\n" + strings.Join(votes, "\n") + "\n")
	}
	b.WriteString("\n## Timeline\n\n")
	for _, e := range journal {
		actor := ""
		if e.Actor != "" {
			actor = " (" + e.Actor + ")"
		}
		step := ""
		if e.Step != "" {
			step = " `" + e.Step + "`"
		}
		fmt.Fprintf(&b, "- %s%s %s%s: %s\n", ts(e.Time), step, e.Type, actor, mdCell(e.Message))
	}
	return b.String()
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
