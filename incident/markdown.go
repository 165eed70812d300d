package incident

import (
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// SourceLine says where the incident comes from and how often it was
// notified ("Source: Alertmanager (disk-full) · 3 notifications").
func SourceLine(in *Incident) string { return sourceLine(in) }

// Markdown renders the incident for a post-mortem, as `groundcrew runs
// show` renders a run: what, where, the state and who acknowledged, what
// fires now, the linked runs and the whole timeline (UTC). It reads only
// the stored facts.
func Markdown(in *Incident, runs []*runmodel.Run, now time.Time) string {
	var b strings.Builder
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
	cell := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }
	fmt.Fprintf(&b, "# Incident %s — %s\n\n", in.ID, in.Title)
	if in.Target != "" {
		fmt.Fprintf(&b, "- **Target:** %s\n", in.Target)
	}
	fmt.Fprintf(&b, "- **%s**\n", cell(strings.TrimPrefix(sourceLine(in), "Source: ")))
	b.WriteString("- **Opened:** " + ts(in.OpenedAt))
	if s := firingSince(in.Since, in.OpenedAt); s != "" {
		b.WriteString(s)
	}
	b.WriteString("\n")
	switch in.State {
	case StateResolved:
		fmt.Fprintf(&b, "- **State:** resolved at %s, after %s\n", ts(in.ResolvedAt), human.Duration(in.Duration(now)))
	default:
		fmt.Fprintf(&b, "- **State:** %s, open for %s\n", in.State, human.Duration(in.Duration(now)))
	}
	if in.AckedBy != nil {
		fmt.Fprintf(&b, "- **Acknowledged by:** %s at %s\n", in.AckedBy.Display(), ts(in.AckedAt))
	}
	if in.SilenceID != "" && in.SilencedBy != nil {
		fmt.Fprintf(&b, "- **Silenced:** until %s by %s\n", ts(in.SilencedUntil), in.SilencedBy.Display())
	}
	if cmd := in.Command(); cmd != "" {
		fmt.Fprintf(&b, "- **Suggested:** `%s`\n", cmd)
	}
	if in.State != StateResolved && len(in.Evidence) > 0 {
		fmt.Fprintf(&b, "\n## Firing (as of %s)\n\n", ts(in.UpdatedAt))
		for _, l := range in.Evidence {
			b.WriteString("- " + cell(l) + "\n")
		}
	}
	if len(runs) > 0 {
		b.WriteString("\n## Runs\n\n| Run | Runbook | Target | Started by | Started | Outcome |\n|---|---|---|---|---|---|\n")
		for _, r := range runs {
			rb := r.Runbook
			if r.DryRun {
				rb += " (dry run)"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.ID, cell(rb), r.Target, r.Requester.Display(), ts(r.CreatedAt), cell(r.State.Human()))
		}
	}
	b.WriteString("\n## Timeline\n\n")
	for _, e := range in.Timeline {
		who := ""
		if e.Actor != "" {
			who = " (" + e.Actor + ")"
		}
		fmt.Fprintf(&b, "- %s %s%s — %s\n", ts(e.Time), e.Kind, who, cell(e.Text))
	}
	return b.String()
}
