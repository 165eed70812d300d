package incident

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Button actions of incident messages.
const (
	ActionAck     chatmodel.Intent = "incident_ack"
	ActionRun     chatmodel.Intent = "incident_run"
	ActionSilence chatmodel.Intent = "incident_silence"
	// ActionUnsilence expires the incident's silence.
	ActionUnsilence chatmodel.Intent = "incident_unsilence"
)

// SilenceFor is how long the silence button silences.
const SilenceFor = time.Hour

// maxListed is how many incidents `/runbook incidents` shows.
const maxListed = 20

// maxEvidence is how many evidence lines (alerts) the root message shows;
// the 🔔 Firing reply in its thread lists the rest.
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

// render renders the incident's root message, the summary people scan in
// the channel: what, where, since when, who acknowledged, the first
// maxEvidence alerts and how many more there are (the 🔔 Firing reply
// lists those: the root carries no detail that would repeat it), the
// source's warnings, the suggested run (button and exact command).
func (m *Manager) render(in *Incident) chatmodel.Message {
	now := m.o.Now()
	var b strings.Builder
	where := ""
	if in.Target != "" {
		where = " on `" + in.Target + "`"
	}
	fmt.Fprintf(&b, "%s *%s*%s — incident `%s`\n", stateIcon(in.State), in.Title, where, in.ID)
	// Times are absolute: a root is read long after it was written.
	switch in.State {
	case StateOpen:
		fmt.Fprintf(&b, "Status: %s · not acknowledged", openSince(in, now))
	case StateAcknowledged:
		fmt.Fprintf(&b, "Status: acknowledged by %s · %s", in.AckedBy.Display(), openSince(in, now))
	case StateResolved:
		fmt.Fprintf(&b, "Status: resolved %s after %s", at(in.ResolvedAt, now), human.Duration(in.Duration(now)))
		if in.ResolvedByCheck {
			b.WriteString(" (found by asking Alertmanager: it sends no resolve while a silence lasts)")
		}
		if in.AckedBy != nil {
			fmt.Fprintf(&b, " · acknowledged by %s", in.AckedBy.Display())
		}
	}
	switch {
	case in.SilenceID == "":
	case in.State != StateResolved:
		fmt.Fprintf(&b, " · 🔕 silenced until %s by %s", hm(in.SilencedUntil), in.SilencedBy.Display())
	case in.SilenceExpireErr != "":
		fmt.Fprintf(&b, "\n⚠️ Its silence `%s` is still in force until %s: it could not be expired (%s)", in.SilenceID, hm(in.SilencedUntil), in.SilenceExpireErr)
	case in.SilenceKept:
		fmt.Fprintf(&b, "\n🔕 Its silence `%s` (by %s) is still in force until %s: kept after the resolution (alerts.silences.keep_after_resolve) — Alertmanager tells nobody if these alerts fire again before then", in.SilenceID, in.SilencedBy.Display(), hm(in.SilencedUntil))
	default:
		fmt.Fprintf(&b, "\n🔕 Its silence `%s` ends with it (being expired)", in.SilenceID)
	}
	b.WriteString("\n" + sourceLine(in))
	ev := splitEvidence(in.Evidence, nil)
	for _, l := range ev.lines[:min(len(ev.lines), maxEvidence)] {
		b.WriteString("\n• " + l)
	}
	if more := max(len(ev.lines)-maxEvidence, 0) + ev.uncounted; more > 0 {
		var why []string
		if listed := len(ev.lines) - maxEvidence; listed > 0 {
			why = append(why, human.Count(listed)+" listed in the thread")
		}
		if ev.note != "" {
			why = append(why, ev.note)
		}
		fmt.Fprintf(&b, "\n• … and %s more", human.Count(more))
		if len(why) > 0 {
			b.WriteString(" (" + strings.Join(why, "; ") + ")")
		}
	}
	for _, w := range ev.warnings {
		b.WriteString("\n" + w)
	}
	msg := chatmodel.Message{}
	if in.State == StateResolved && m.o.Silencer != nil && in.SilenceID != "" && (in.SilenceKept || in.SilenceExpireErr != "") {
		msg.Buttons = append(msg.Buttons, chatmodel.Button{Action: ActionUnsilence, Label: "🔔 Expire silence", Value: in.ID})
	}
	if in.State != StateResolved {
		if cmd := in.Command(); cmd != "" {
			fmt.Fprintf(&b, "\nSuggested: `%s`", cmd)
		}
		if in.State == StateOpen {
			b.WriteString("\nReact 👀 to acknowledge (or `/runbook incidents ack " + in.ID + "`).")
			msg.Buttons = append(msg.Buttons, chatmodel.Button{Action: ActionAck, Label: "👀 Acknowledge", Value: in.ID})
		}
		if in.Runbook != "" && m.o.Starter != nil && !strings.Contains(in.Command(), "<") {
			msg.Buttons = append(msg.Buttons, chatmodel.Button{Action: ActionRun, Label: "▶ Run " + in.Runbook, Value: in.ID, Style: "primary"})
		}
		switch {
		case m.o.Silencer != nil && in.SilenceID != "":
			msg.Buttons = append(msg.Buttons, chatmodel.Button{Action: ActionUnsilence, Label: "🔔 Expire silence", Value: in.ID})
		case m.o.Silencer != nil && len(in.Silence) > 0:
			msg.Buttons = append(msg.Buttons, chatmodel.Button{Action: ActionSilence, Label: "🔕 Silence 1 h", Value: in.ID})
		}
	}
	msg.Text = b.String()
	if m.o.Link != nil {
		if u := m.o.Link(in.ID, in.OpenedAt); u != "" {
			msg.Link = &chatmodel.Link{URL: u, Label: "Incident page"}
		}
	}
	return msg
}

// openSince says since when the incident is open, as a time of day
// ("open since 04:10 UTC", "open again since 04:40 UTC" once reopened: its
// age counts from then), with the day when that is not within the last
// 20 hours.
func openSince(in *Incident, now time.Time) string {
	if !in.ReopenedAt.IsZero() {
		return "open again since " + at(started(in), now)[len("at "):]
	}
	return "open since " + at(started(in), now)[len("at "):]
}

// at is t as people read it in a message that stays: "at 04:10 UTC", or
// "at Mar 1 04:10 UTC" when it is not within the 20 hours before now.
func at(t, now time.Time) string {
	if d := now.Sub(t); d < 20*time.Hour && d > -time.Hour {
		return "at " + hm(t)
	}
	return "at " + t.UTC().Format("Jan 2 15:04") + " UTC"
}

func sourceLine(in *Incident) string {
	n := in.Notifications
	times := fmt.Sprintf("%d notification%s", n, plural(n))
	switch in.Source.Kind {
	case SourceAlert:
		if in.Alerts > 1 {
			times = human.Count(in.Alerts) + " alerts firing · " + times
		}
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

// ListFilter selects and pages `/runbook incidents`.
type ListFilter struct {
	Unacked bool   // only the incidents nobody acknowledged
	All     bool   // the resolved ones too (most recent first, after the open ones)
	Target  string // only this target
	Page    int    // 1-based; 0 is 1
}

// ParseListFilter reads the words after `/runbook incidents`: unacked,
// all, target=NAME, page N (or page=N).
func ParseListFilter(words []string) (ListFilter, error) {
	var f ListFilter
	for i := 0; i < len(words); i++ {
		w := words[i]
		k, v, hasValue := strings.Cut(w, "=")
		switch {
		case strings.EqualFold(w, "unacked") || strings.EqualFold(w, "unacknowledged"):
			f.Unacked = true
		case strings.EqualFold(w, "all"):
			f.All = true
		case hasValue && strings.EqualFold(k, "target") && v != "":
			f.Target = v
		case strings.EqualFold(k, "page"):
			if !hasValue {
				if i+1 == len(words) {
					return f, errors.New("page needs a number: `page 2`")
				}
				i++
				v = words[i]
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				return f, fmt.Errorf("page %.20q: give a page number, `page 2`", v)
			}
			f.Page = n
		default:
			return f, fmt.Errorf("%.40q is not a filter: use unacked, all, target=<target> or page <n>", w)
		}
	}
	return f, nil
}

// words is the filter as the command words that give it (without page).
func (f ListFilter) words() string {
	var w []string
	if f.Unacked {
		w = append(w, "unacked")
	}
	if f.All {
		w = append(w, "all")
	}
	if f.Target != "" {
		w = append(w, "target="+f.Target)
	}
	return strings.Join(w, " ")
}

// listRank orders the list: what needs a person first (not acknowledged,
// oldest first), then acknowledged (oldest first), then resolved (most
// recently resolved first).
func listRank(ins []*Incident) {
	rank := func(in *Incident) int {
		switch {
		case in.State == StateResolved:
			return 3
		case in.SilenceID != "":
			return 2 // silenced: Alertmanager is quiet, groundcrew watches
		case in.State == StateAcknowledged:
			return 1
		}
		return 0
	}
	sort.SliceStable(ins, func(i, j int) bool {
		a, b := ins[i], ins[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if a.State == StateResolved {
			return a.ResolvedAt.After(b.ResolvedAt)
		}
		if sa, sb := started(a), started(b); !sa.Equal(sb) {
			return sa.Before(sb) // the age the list shows: oldest first
		}
		return a.ID < b.ID
	})
}

// started is when the incident's age counts from (as Duration): when the
// condition started (an alert's startsAt) if that is earlier than the
// opening.
func started(in *Incident) time.Time {
	if !in.Since.IsZero() && in.Since.Before(in.OpenedAt) {
		return in.Since
	}
	return in.OpenedAt
}

// ListText renders `/runbook incidents`: counts by state, then the
// incidents that need a person first (not acknowledged, oldest first),
// then the acknowledged ones, a page of maxListed at a time, with their
// state, age and linked runs or suggested command. ins are the incidents
// the filter may show (the open ones, and with All the resolved ones).
func (m *Manager) ListText(ins []*Incident, f ListFilter, runs func(*Incident) []*runmodel.Run) string {
	now := m.o.Now()
	counts := map[State]int{}
	var shown []*Incident
	for _, in := range ins {
		if in.State != StateResolved {
			counts[in.State]++
		}
		if f.Target != "" && !strings.EqualFold(in.Target, f.Target) ||
			f.Unacked && in.State != StateOpen || !f.All && in.State == StateResolved {
			continue
		}
		shown = append(shown, in)
	}
	listRank(shown)
	var b strings.Builder
	open := counts[StateOpen] + counts[StateAcknowledged]
	if open == 0 {
		b.WriteString("✅ No open incidents.")
	} else {
		fmt.Fprintf(&b, "*Open incidents* (%d): %d not acknowledged · %d acknowledged", open, counts[StateOpen], counts[StateAcknowledged])
	}
	if fw := f.words(); fw != "" {
		fmt.Fprintf(&b, "\nShowing `%s`: %d incident%s", fw, len(shown), plural(len(shown)))
	}
	if len(shown) == 0 {
		if f.words() != "" {
			b.WriteString(" — `/runbook incidents` lists every open one.")
		}
		return b.String()
	}
	pages := (len(shown) + maxListed - 1) / maxListed
	page := max(f.Page, 1)
	if page > pages {
		fmt.Fprintf(&b, "\nThere is no page %d (%d page%s); showing the last one.", page, pages, plural(pages))
		page = pages
	}
	from := (page - 1) * maxListed
	to := min(from+maxListed, len(shown))
	for _, in := range shown[from:to] {
		where := ""
		if in.Target != "" {
			where = " on `" + in.Target + "`"
		}
		var state string
		switch in.State {
		case StateAcknowledged:
			state = "acknowledged by " + in.AckedBy.Display() + ", open for " + human.Duration(in.Duration(now))
		case StateResolved:
			state = "resolved " + in.ResolvedAt.UTC().Format("Jan 2 15:04") + " after " + human.Duration(in.Duration(now))
		default:
			state = "not acknowledged, open for " + human.Duration(in.Duration(now))
		}
		switch {
		case in.SilenceID == "":
		case in.State != StateResolved:
			state += ", 🔕 silenced until " + hm(in.SilencedUntil) + " by " + in.SilencedBy.Display()
		case now.Before(in.SilencedUntil):
			state += ", 🔕 its silence is still in force until " + hm(in.SilencedUntil)
		}
		if in.State != StateResolved && in.Root.IsZero() {
			state += " · ⏳ not in chat yet: its thread waits in the outbox until chat takes posts"
		}
		fmt.Fprintf(&b, "\n%s `%s` %s%s — %s", stateIcon(in.State), in.ID, in.Title, where, state)
		if in.State == StateResolved {
			continue
		}
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
	if pages > 1 {
		fmt.Fprintf(&b, "\nPage %d of %d (%d–%d of %d).", page, pages, from+1, to, len(shown))
		if page < pages {
			fmt.Fprintf(&b, " Next: `%s`", strings.Join(strings.Fields("/runbook incidents "+f.words()+" page "+strconv.Itoa(page+1)), " "))
		}
	}
	if counts[StateOpen] > 0 {
		b.WriteString("\nAcknowledge: react 👀 on the incident, or `/runbook incidents ack <incident>`.")
	}
	if !f.Unacked && counts[StateOpen] > 0 && counts[StateAcknowledged] > 0 {
		b.WriteString(" Only those nobody acknowledged: `/runbook incidents unacked`.")
	}
	return b.String()
}

// TimelineText renders the incident's timeline, for `/runbook incidents show`.
func (m *Manager) TimelineText(in *Incident) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s *Incident* `%s` — %s", stateIcon(in.State), in.ID, m.heading(in))
	// What fires now, whole: the root shows the first maxEvidence and the
	// thread's replies what changed, so this is the one place that lists
	// the current set.
	if ev := splitEvidence(in.Evidence, nil); in.State != StateResolved && len(ev.lines) > 0 {
		fmt.Fprintf(&b, "\nNow (as of %s UTC):", in.UpdatedAt.UTC().Format("15:04"))
		for _, l := range ev.lines {
			b.WriteString("\n• " + l)
		}
		if ev.uncounted > 0 {
			fmt.Fprintf(&b, "\n• … and %s more", human.Count(ev.uncounted))
			if ev.note != "" {
				b.WriteString(" (" + ev.note + ")")
			}
		}
		for _, w := range ev.warnings {
			b.WriteString("\n" + w)
		}
	}
	b.WriteString("\nTimeline (UTC):")
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
	"silenced": "🔕", "unsilenced": "🔔", "resolved": "✅", "run": "🔗", "autostart": "▶"}

// Notes is the incident as its thread's summary shows it: headed by the
// incident, its timeline entries as items merged with the runs and
// people's messages (chatmodel.ThreadNoter, through the Handler).
func (m *Manager) Notes(in *Incident) chatmodel.ThreadNotes {
	n := chatmodel.ThreadNotes{Heading: fmt.Sprintf("%s incident `%s` %s", stateIcon(in.State), in.ID, m.heading(in))}
	for _, e := range in.Timeline {
		icon := entryIcons[e.Kind]
		if icon == "" {
			icon = "•"
		}
		n.Items = append(n.Items, chatmodel.ThreadMessage{Time: e.Time, Text: fmt.Sprintf("%s %s — %s", icon, e.Kind, e.Text), From: "incident"})
	}
	return n
}
