package incident

import (
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/internal/human"
)

// Button actions of incident messages.
const (
	ActionAck     bot.Intent = "incident_ack"
	ActionRun     bot.Intent = "incident_run"
	ActionSilence bot.Intent = "incident_silence"
)

// SilenceFor is how long the silence button silences.
const SilenceFor = time.Hour

// maxListed is how many incidents `/runbook incidents` shows.
const maxListed = 20

// maxEvidence is how many evidence lines the root message shows; the rest
// go in the detail.
const maxEvidence = 5

func stateIcon(s State) string {
	switch s {
	case StateAcknowledged:
		return "👀"
	case StateResolved:
		return "✅"
	}
	return "🚨"
}

// render renders the incident's root message: what, where, since when,
// who acknowledged, the suggested run (button and exact command).
func (m *Manager) render(in *Incident) bot.Message {
	now := m.o.Now()
	var b strings.Builder
	where := ""
	if in.Target != "" {
		where = " on `" + in.Target + "`"
	}
	fmt.Fprintf(&b, "%s *%s*%s — incident `%s`\n", stateIcon(in.State), in.Title, where, in.ID)
	switch in.State {
	case StateOpen:
		fmt.Fprintf(&b, "Status: open for %s · not acknowledged", human.Duration(in.Duration(now)))
	case StateAcknowledged:
		fmt.Fprintf(&b, "Status: acknowledged by %s · open for %s", in.AckedBy.Display(), human.Duration(in.Duration(now)))
	case StateResolved:
		fmt.Fprintf(&b, "Status: resolved after %s", human.Duration(in.Duration(now)))
		if in.AckedBy != nil {
			fmt.Fprintf(&b, " · acknowledged by %s", in.AckedBy.Display())
		}
	}
	b.WriteString("\n" + sourceLine(in))
	var detail string
	for i, l := range in.Evidence {
		if i == maxEvidence {
			fmt.Fprintf(&b, "\n• … and %d more (details below)", len(in.Evidence)-maxEvidence)
			detail = strings.Join(in.Evidence, "\n")
			break
		}
		b.WriteString("\n• " + l)
	}
	msg := bot.Message{}
	if in.State != StateResolved {
		if cmd := in.Command(); cmd != "" {
			fmt.Fprintf(&b, "\nSuggested: `%s`", cmd)
		}
		if in.State == StateOpen {
			b.WriteString("\nReact 👀 to acknowledge (or `/runbook incidents ack " + in.ID + "`).")
			msg.Buttons = append(msg.Buttons, bot.Button{Action: ActionAck, Label: "👀 Acknowledge", Value: in.ID})
		}
		if in.Runbook != "" && m.o.Starter != nil && !strings.Contains(in.Command(), "<") {
			msg.Buttons = append(msg.Buttons, bot.Button{Action: ActionRun, Label: "▶ Run " + in.Runbook, Value: in.ID, Style: "primary"})
		}
		if m.o.Silencer != nil && len(in.Silence) > 0 {
			msg.Buttons = append(msg.Buttons, bot.Button{Action: ActionSilence, Label: "🔕 Silence 1 h", Value: in.ID})
		}
	}
	msg.Text, msg.Detail = b.String(), detail
	return msg
}

func sourceLine(in *Incident) string {
	n := in.Notifications
	times := fmt.Sprintf("%d notification%s", n, plural(n))
	switch in.Source.Kind {
	case SourceAlert:
		return fmt.Sprintf("Source: Alertmanager (%s) · %s", in.Source.Name, times)
	case SourceWatch:
		return fmt.Sprintf("Source: watch `%s` · %s", in.Source.Name, strings.Replace(times, "notification", "poll", 1))
	}
	return "Source: " + string(in.Source.Kind)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// ListText renders `/runbook incidents`: the open incidents, oldest first,
// with their state, age, thread and linked runs.
func (m *Manager) ListText(ins []*Incident, runs func(*Incident) []*bot.Run) string {
	if len(ins) == 0 {
		return "✅ No open incidents."
	}
	now := m.o.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "*Open incidents* (%d)", len(ins))
	more := 0
	if len(ins) > maxListed {
		ins, more = ins[:maxListed], len(ins)-maxListed
	}
	for _, in := range ins {
		where := ""
		if in.Target != "" {
			where = " on `" + in.Target + "`"
		}
		state := "open, not acknowledged"
		if in.State == StateAcknowledged {
			state = "acknowledged by " + in.AckedBy.Display()
		}
		fmt.Fprintf(&b, "\n%s `%s` %s%s — %s, %s", stateIcon(in.State), in.ID, in.Title, where, state, human.Duration(in.Duration(now)))
		var rs []string
		for _, r := range runs(in) {
			rs = append(rs, fmt.Sprintf("`%s` %s %s", r.ID, r.Runbook, r.State))
		}
		if len(rs) > 0 {
			b.WriteString("\n    runs: " + strings.Join(rs, ", "))
		} else if cmd := in.Command(); cmd != "" {
			b.WriteString("\n    suggested: `" + cmd + "`")
		}
	}
	if more > 0 {
		fmt.Fprintf(&b, "\n… and %d more, newer (resolve or acknowledge the oldest first).", more)
	}
	b.WriteString("\nAcknowledge: react 👀 on the incident, or `/runbook incidents ack <incident>`.")
	return b.String()
}

// TimelineText renders the incident's timeline, for `/runbook incidents show`.
func (m *Manager) TimelineText(in *Incident) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s *Incident* `%s` — %s\nTimeline (UTC):", stateIcon(in.State), in.ID, m.heading(in))
	for _, e := range in.Timeline {
		fmt.Fprintf(&b, "\n%s %s — %s", e.Time.UTC().Format("15:04"), e.Kind, e.Text)
	}
	return b.String()
}

// heading is the incident in two lines: title, target, state, duration,
// who acknowledged; then its source.
func (m *Manager) heading(in *Incident) string {
	now := m.o.Now()
	where := ""
	if in.Target != "" {
		where = " on `" + in.Target + "`"
	}
	var state string
	switch in.State {
	case StateResolved:
		state = "resolved after " + human.Duration(in.Duration(now))
		if in.AckedBy != nil {
			state += " · acknowledged by " + in.AckedBy.Display()
		}
	case StateAcknowledged:
		state = "acknowledged by " + in.AckedBy.Display() + ", open for " + human.Duration(in.Duration(now))
	default:
		state = "open for " + human.Duration(in.Duration(now)) + ", not acknowledged"
	}
	return fmt.Sprintf("%s%s: %s\n%s", in.Title, where, state, sourceLine(in))
}

// entryIcons mark the incident's own items in its thread's summary.
var entryIcons = map[string]string{"opened": "🚨", "reopened": "🚨", "changed": "🔔", "acknowledged": "👀",
	"silenced": "🔕", "resolved": "✅", "run": "🔗", "autostart": "▶"}

// Notes is the incident as its thread's summary shows it: headed by the
// incident, its timeline entries as items merged with the runs and
// people's messages (bot.ThreadNoter, through the Handler).
func (m *Manager) Notes(in *Incident) bot.ThreadNotes {
	n := bot.ThreadNotes{Heading: fmt.Sprintf("%s incident `%s` %s", stateIcon(in.State), in.ID, m.heading(in))}
	for _, e := range in.Timeline {
		icon := entryIcons[e.Kind]
		if icon == "" {
			icon = "•"
		}
		n.Items = append(n.Items, bot.ThreadMessage{Time: e.Time, Text: fmt.Sprintf("%s %s — %s", icon, e.Kind, e.Text), From: "incident"})
	}
	return n
}
