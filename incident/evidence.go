package incident

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/groundcrew/groundcrew/internal/human"
)

// evidence is an incident's evidence as its messages show it.
type evidence struct {
	// lines are the alerts (or a watch's observations), most important
	// first as the source ordered them.
	lines []string
	// keys are the identities of lines (Signal.EvidenceKeys), one per
	// line ("" for a line without one); nil when the source gave none.
	keys []string
	// uncounted is how many more the source counted without listing them;
	// more is its line saying so ("… and 1,200 more (50 not sent by
	// Alertmanager: max_alerts)"), note what it says in parentheses.
	uncounted int
	more      string
	note      string
	// warnings are the source's ⚠️ lines (a parameter it could not fill,
	// a target that is not configured): always in the root, next to the
	// suggestion they are about, never left to the thread.
	warnings []string
}

// splitEvidence separates the evidence lines from the line a source adds
// for what it did not list, and from its warnings: the root message
// counts the unlisted alerts with the ones it leaves to the thread, rather
// than as one more line. keys are the lines' identities (nil: none).
func splitEvidence(lines, keys []string) evidence {
	var ev evidence
	add := func(i int, l string) {
		ev.lines = append(ev.lines, l)
		if len(keys) > 0 {
			k := ""
			if i < len(keys) {
				k = keys[i]
			}
			ev.keys = append(ev.keys, k)
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(l, "⚠️") {
			ev.warnings = append(ev.warnings, l)
			continue
		}
		rest, ok := strings.CutPrefix(l, "… and ")
		if !ok {
			add(i, l)
			continue
		}
		num, tail, ok := strings.Cut(rest, " more")
		n, err := strconv.Atoi(strings.ReplaceAll(num, ",", ""))
		if !ok || err != nil || n < 0 {
			add(i, l)
			continue
		}
		ev.uncounted += n
		ev.more = l
		if t := strings.TrimSpace(tail); strings.HasPrefix(t, "(") && strings.HasSuffix(t, ")") {
			ev.note = t[1 : len(t)-1]
		}
	}
	return ev
}

// known reports whether ev says which alerts fired (an incident resolved
// by a notification that listed none does not).
func (ev evidence) known() bool { return len(ev.lines) > 0 || ev.uncounted > 0 }

// total is how many alerts ev stands for, those it counts without listing
// included.
func (ev evidence) total() int { return alertsIn(ev.lines) + ev.uncounted }

// othersText is what the root leaves out of ev (it shows the first
// maxEvidence lines): "the other 7 (the incident message shows the first
// 5)" and their lines, then what the source did not list. "" when the
// root shows them all.
func othersText(ev evidence) string {
	if len(ev.lines) <= maxEvidence {
		return ""
	}
	rest := ev.lines[maxEvidence:]
	var b strings.Builder
	fmt.Fprintf(&b, "the other %s (the incident message shows the first %d)", human.Count(len(rest)+ev.uncounted), maxEvidence)
	for _, l := range rest {
		b.WriteString("\n• " + l)
	}
	if ev.more != "" {
		b.WriteString("\n• " + ev.more)
	}
	return b.String()
}

// firingText is the 🔔 Firing reply that follows a new incident's root in
// its thread: the alerts the root does not show (it shows the first
// maxEvidence), and what the source did not list. "" when the root shows
// them all: the reply would only repeat it.
func firingText(lines []string) string {
	if others := othersText(splitEvidence(lines, nil)); others != "" {
		return "🔔 Firing: " + others
	}
	return ""
}

// evidenceDiff is how an incident's evidence changed from one
// notification (old) to the next (cur).
type evidenceDiff struct {
	cur, old evidence
	lineDiff
	newWarn, goneWarn []string
	// moreChanged: the source counts another number of alerts it did
	// not list.
	moreChanged bool
}

// diffEvidence compares the evidence cur (with its keys) to the previous
// prev.
func diffEvidence(cur, curKeys, prev, prevKeys []string) evidenceDiff {
	x := evidenceDiff{cur: splitEvidence(cur, curKeys), old: splitEvidence(prev, prevKeys)}
	x.lineDiff = diffLines(x.cur, x.old)
	x.newWarn, x.goneWarn = missing(x.cur.warnings, x.old.warnings), missing(x.old.warnings, x.cur.warnings)
	x.moreChanged = x.cur.uncounted != x.old.uncounted
	return x
}

// empty reports whether nothing a message would say changed (the same
// alerts, maybe in another order or shown with other labels).
func (x evidenceDiff) empty() bool {
	return len(x.fresh)+len(x.gone)+len(x.newWarn)+len(x.goneWarn) == 0 && !x.moreChanged
}

// split is the fresh lines as new alerts and changed ones.
func (x evidenceDiff) split() (added, changed []string) {
	for _, l := range x.fresh {
		if _, ok := x.was[l]; ok {
			changed = append(changed, l)
		} else {
			added = append(added, l)
		}
	}
	return added, changed
}

// goneWords is how a diff names the alerts of old that cur lacks: "gone"
// for an update, "not firing again" for a reopening; "no longer listed"
// when cur is a list the source cut (the alert may only have moved past
// its end: a more severe alert came first).
func (x evidenceDiff) goneWords(again bool) (word string, mark func(string) string) {
	switch {
	case x.cur.uncounted > 0:
		return "no longer listed", func(l string) string {
			return l + " (resolved, or past the " + human.Count(len(x.cur.lines)) + " listed)"
		}
	case again:
		return "not firing again", func(l string) string { return "~" + l + "~ (not firing again)" }
	}
	return "gone", func(l string) string { return "~" + l + "~ (gone)" }
}

// maxChanges is how many changed alerts a 🔁 Changed reply lists; it
// counts the others ("… and 38 more (36 new or changed, 2 gone)").
const maxChanges = 10

// changedText is the 🔁 Changed reply of a group whose alerts changed: only
// what changed — the new alerts (🆕), the ones whose line changed (the same
// alert, another summary: "(was: …)"), in the source's order (the most
// severe first, then in number order), then the ones gone; a change of
// what the source counted without listing and of its warnings — then how
// many others still fire and where the whole set is (the root message,
// kept up to date, and the timeline). In a group of 50 where one alert
// changes it lists that one, not the 50. "" when nothing it would show
// changed.
func changedText(in *Incident, x evidenceDiff) string {
	if x.empty() {
		return ""
	}
	return diffText(in, x, "🔁 Changed", false)
}

// firingAgainText is the 🔔 Firing again reply of a reopened incident,
// said as the first 🔔 Firing reply is, never repeating the root: since
// when it fires and how long it was resolved; then, when the alerts are
// the ones that fired last time, "the same 8 alerts as last time" and
// those the root does not show; when they are not, what is new and what
// does not fire again since last time (the others are the ones already
// said in the thread), as a 🔁 Changed reply says it.
func firingAgainText(in *Incident, x evidenceDiff) string {
	head := "🔔 Firing again" + againSince(in)
	if x.old.known() && !x.empty() {
		return diffText(in, x, head, true)
	}
	var b strings.Builder
	b.WriteString(head)
	sep := " — "
	if x.old.known() {
		n := in.Alerts
		if n <= 0 {
			n = x.cur.total()
		}
		if n == 1 {
			b.WriteString(" — the same alert as last time")
		} else {
			b.WriteString(" — the same " + human.Count(n) + " alerts as last time")
		}
		sep = "; "
	}
	if others := othersText(x.cur); others != "" {
		b.WriteString(sep + others)
	}
	return b.String()
}

// againSince says since when a reopened incident fires and how long it
// was resolved: " since 04:31, 11 min after it resolved".
func againSince(in *Incident) string {
	since := in.ReopenedAt
	if !in.Since.IsZero() && in.Since.After(in.SinceAfter) && in.Since.Before(since) {
		since = in.Since
	}
	if since.IsZero() {
		return ""
	}
	s := " since " + since.UTC().Format("15:04")
	if !in.SinceAfter.IsZero() {
		s += ", " + human.Duration(since.Sub(in.SinceAfter)) + " after it resolved"
	}
	return s
}

// diffText says x: head with the counts, at most maxChanges lines, what
// the source counts without listing, the warnings, then the others.
func diffText(in *Incident, x evidenceDiff, head string, again bool) string {
	goneWord, goneMark := x.goneWords(again)
	added, changed := x.split()
	var lines []string
	for _, l := range x.fresh {
		if was, ok := x.was[l]; ok {
			lines = append(lines, l+" (was: "+was+")")
		} else {
			lines = append(lines, l+"  🆕")
		}
	}
	for _, l := range x.gone {
		lines = append(lines, goneMark(l))
	}
	nAdded, nChanged := alertsIn(added), alertsIn(changed)
	var counts []string
	for _, c := range []struct {
		n    int
		word string
	}{{nAdded, "new"}, {nChanged, "changed"}, {alertsIn(x.gone), goneWord}} {
		if c.n > 0 {
			counts = append(counts, human.Count(c.n)+" "+c.word)
		}
	}
	var b strings.Builder
	b.WriteString(head)
	if len(counts) > 0 {
		sep := ": "
		if again {
			sep = " — "
		}
		b.WriteString(sep + strings.Join(counts, " · "))
		if again {
			b.WriteString(" since last time")
		}
	}
	for _, l := range lines[:min(len(lines), maxChanges)] {
		b.WriteString("\n• " + l)
	}
	omitted := max(len(lines)-maxChanges, 0)
	if omitted > 0 {
		var left []string
		if n := max(len(x.fresh)-maxChanges, 0); n > 0 {
			left = append(left, human.Count(n)+" new or changed")
		}
		shownGone := min(max(maxChanges-len(x.fresh), 0), len(x.gone))
		if n := len(x.gone) - shownGone; n > 0 {
			left = append(left, human.Count(n)+" "+goneWord)
		}
		fmt.Fprintf(&b, "\n• … and %s more (%s)", human.Count(omitted), strings.Join(left, ", "))
	}
	switch {
	case x.moreChanged && x.cur.more != "" && x.old.uncounted > 0:
		b.WriteString("\n• " + x.cur.more + " — was " + human.Count(x.old.uncounted))
	case x.moreChanged && x.cur.more != "":
		b.WriteString("\n• " + x.cur.more + "  🆕")
	case x.moreChanged:
		b.WriteString("\n• ~" + x.old.more + "~ (every alert is listed now)")
	}
	for _, w := range x.newWarn {
		b.WriteString("\n" + w + "  🆕")
	}
	for _, w := range x.goneWarn {
		b.WriteString("\n~" + w + "~ (gone)")
	}
	// The others: the alerts the root counts ("50 alerts firing") less
	// the ones said above.
	total := in.Alerts
	if total <= 0 {
		total = x.cur.total()
	}
	what := "still firing"
	switch {
	case again:
		what = "firing as last time"
	case in.Source.Kind != SourceAlert:
		what = "unchanged" // a watch's observations
	}
	if tail := othersLine(in, total, max(total-nAdded-nChanged, 0), omitted > 0, what); tail != "" {
		b.WriteString("\n" + tail)
	}
	return b.String()
}

// othersLine ends a 🔁 Changed reply: how many others (of total) did not
// change (what they do: "still firing"), and where the whole set is: the
// root message (it shows the first maxEvidence) and the timeline, when
// the reply and the root do not say it all.
func othersLine(in *Incident, total, others int, cut bool, what string) string {
	var where []string
	if total > maxEvidence {
		where = append(where, fmt.Sprintf("the incident message shows the first %d", maxEvidence))
	} else if others > 0 {
		where = append(where, "the incident message lists them all")
	}
	if total > maxEvidence || cut {
		where = append(where, "`/runbook incidents show "+in.ID+"` lists them all, with the timeline")
	}
	if others == 0 {
		if len(where) == 0 {
			return ""
		}
		tail := strings.Join(where, "; ")
		return strings.ToUpper(tail[:1]) + tail[1:]
	}
	tail := fmt.Sprintf("%s other%s %s", human.Count(others), plural(others), what)
	if len(where) > 0 {
		tail += " — " + strings.Join(where, "; ")
	}
	return tail
}

// maxNames is how many alerts a timeline entry names; it counts the
// others ("… and 95 more"). The entry keeps the whole set (Entry.Evidence).
const maxNames = 5

// changeSummary is x as a timeline entry: the counts, how many alerts
// fire, and the alerts new, changed and gone by name (their labels), at
// most maxNames, a changed one with its old and new summary: "3 new · 1
// changed · 52 alerts firing — new: `mountpoint=/vol200 severity=critical`,
// `mountpoint=/vol51`, `mountpoint=/vol100`; changed: `mountpoint=/vol7`
// (6% left → 3% left)".
func changeSummary(in *Incident, x evidenceDiff, again bool) string {
	goneWord, _ := x.goneWords(again)
	added, changed := x.split()
	var head []string
	count := func(n int, word string) {
		if n > 0 {
			head = append(head, human.Count(n)+" "+word)
		}
	}
	count(alertsIn(added), "new")
	count(alertsIn(changed), "changed")
	count(alertsIn(x.gone), goneWord)
	count(len(x.newWarn), "new warning"+plural(len(x.newWarn)))
	count(len(x.goneWarn), "warning"+plural(len(x.goneWarn))+" gone")
	if x.moreChanged {
		head = append(head, human.Count(x.cur.uncounted)+" not listed (was "+human.Count(x.old.uncounted)+")")
	}
	if in.Alerts > 0 {
		head = append(head, human.Count(in.Alerts)+" alert"+plural(in.Alerts)+" firing")
	}
	var groups []string
	shown, left := 0, 0
	for _, g := range []struct {
		word  string
		lines []string
	}{{"new", added}, {"changed", changed}, {goneWord, x.gone}, {"⚠️", x.newWarn}} {
		var names []string
		for _, l := range g.lines {
			if shown == maxNames {
				left++
				continue
			}
			shown++
			name := nameOf(l)
			if was, ok := x.was[l]; ok && g.word == "changed" {
				if lineKey(l) != "" {
					name += " (" + oneLine(was, 40) + " → " + oneLine(summaryOf(l), 40) + ")"
				} else {
					name += " (was: " + oneLine(was, 40) + ")"
				}
			}
			names = append(names, name)
		}
		if len(names) > 0 {
			groups = append(groups, g.word+": "+strings.Join(names, ", "))
		}
	}
	text := strings.Join(head, " · ")
	if len(groups) > 0 {
		text += " — " + strings.Join(groups, "; ")
	}
	if left > 0 {
		text += " … and " + human.Count(left) + " more"
	}
	return text
}

// againSummary is a reopening as a timeline entry: since when, how long
// it was resolved, and whether the same alerts fire.
func againSummary(in *Incident, x evidenceDiff) string {
	text := "firing again" + againSince(in)
	switch {
	case !x.old.known():
		if in.Alerts > 1 {
			text += " · " + human.Count(in.Alerts) + " alerts firing"
		}
	case x.empty():
		n := in.Alerts
		if n <= 0 {
			n = x.cur.total()
		}
		text += " — the same " + map[bool]string{true: "alert", false: human.Count(n) + " alerts"}[n == 1] + " as last time"
	default:
		text += " — since last time: " + changeSummary(in, x, true)
	}
	return text
}

// nameOf is how a timeline entry names an evidence line: its labels (its
// leading code span), or the line cut short.
func nameOf(l string) string {
	if k := lineKey(l); k != "" {
		return k
	}
	return oneLine(strings.TrimPrefix(l, "⚠️ "), 60)
}

// lineDiff is how a source's evidence lines changed.
type lineDiff struct {
	// fresh are cur's lines prev did not have, in cur's order; was maps
	// those that are an alert of prev changed to what its line said
	// after its labels.
	fresh []string
	was   map[string]string
	// gone are prev's lines cur does not have (and no fresh line
	// changed), in prev's order.
	gone []string
}

// diffLines compares the evidence lines of two notifications, each alert
// said once. When both say which alert each line is (keys), alerts are
// compared by identity: an alert of both whose line differs only in its
// labels (another label is shown now that it is no longer common to the
// group) did not change; one whose summary differs changed. Otherwise
// (a watch, an incident stored without keys) lines are compared by text.
func diffLines(cur, prev evidence) lineDiff {
	if len(cur.keys) == 0 || len(prev.keys) == 0 {
		return diffByText(cur.lines, prev.lines)
	}
	id := func(ev evidence, i int) string {
		if ev.keys[i] != "" {
			return "k\x00" + ev.keys[i]
		}
		return "t\x00" + ev.lines[i]
	}
	d := lineDiff{was: map[string]string{}}
	before := map[string]string{}
	for i, l := range prev.lines {
		if _, ok := before[id(prev, i)]; !ok {
			before[id(prev, i)] = l
		}
	}
	now := map[string]bool{}
	said := map[string]bool{}
	for i, l := range cur.lines {
		k := id(cur, i)
		if now[k] || said[l] {
			continue
		}
		now[k], said[l] = true, true
		was, ok := before[k]
		switch {
		case !ok:
			d.fresh = append(d.fresh, l)
		case was == l || summaryOf(was) == summaryOf(l):
			// The same alert, said alike (maybe with other labels).
		default:
			d.fresh = append(d.fresh, l)
			d.was[l] = nonEmpty(summaryOf(was), was)
		}
	}
	gone := map[string]bool{}
	for i, l := range prev.lines {
		if k := id(prev, i); !now[k] && !gone[k] {
			gone[k] = true
			d.gone = append(d.gone, l)
		}
	}
	return d
}

// diffByText compares lines by their text. A line new in cur that names
// the same alert as a line gone from prev — the same leading code span
// (the alert's labels), once in each — is that alert changed (its
// summary says another value), not one alert new and one gone.
func diffByText(cur, prev []string) lineDiff {
	d := lineDiff{fresh: missing(cur, prev), was: map[string]string{}}
	gone := missing(prev, cur)
	count := func(lines []string) map[string]int {
		n := map[string]int{}
		for l := range set(lines) {
			n[lineKey(l)]++
		}
		return n
	}
	inCur, inPrev := count(cur), count(prev)
	goneBy := map[string]string{}
	for _, l := range gone {
		goneBy[lineKey(l)] = l
	}
	paired := map[string]bool{}
	for _, l := range d.fresh {
		k := lineKey(l)
		if was, ok := goneBy[k]; ok && k != "" && inCur[k] == 1 && inPrev[k] == 1 {
			d.was[l], paired[was] = nonEmpty(summaryOf(was), was), true
		}
	}
	for _, l := range gone {
		if !paired[l] {
			d.gone = append(d.gone, l)
		}
	}
	return d
}

// summaryOf is what a line says after its labels ("6% left" of
// "`mountpoint=/vol7` — 6% left"); the whole line when it has no labels.
func summaryOf(l string) string {
	k := lineKey(l)
	if k == "" {
		return l
	}
	return strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(l, k)), "— ")
}

// lineKey is what names an alert in its evidence line: the leading code
// span (its labels, "`mountpoint=/vol7`"); "" when the line has none.
func lineKey(l string) string {
	if !strings.HasPrefix(l, "`") {
		return ""
	}
	end := strings.IndexByte(l[1:], '`')
	if end <= 0 {
		return ""
	}
	return l[:end+2]
}

// missing is the lines of a that b does not have, in a's order, each once.
func missing(a, b []string) []string {
	inB := set(b)
	var out []string
	said := map[string]bool{}
	for _, l := range a {
		if !inB[l] && !said[l] {
			said[l] = true
			out = append(out, l)
		}
	}
	return out
}

func set(lines []string) map[string]bool {
	s := make(map[string]bool, len(lines))
	for _, l := range lines {
		s[l] = true
	}
	return s
}

// alertsIn is how many alerts lines stand for: a source says identical
// alerts once with their count ("… (×3)").
func alertsIn(lines []string) int {
	n := 0
	for _, l := range lines {
		n += timesOf(l)
	}
	return n
}

func timesOf(l string) int {
	if i := strings.LastIndex(l, " (×"); i >= 0 && strings.HasSuffix(l, ")") {
		if n, err := strconv.Atoi(l[i+len(" (×") : len(l)-1]); err == nil && n > 0 {
			return n
		}
	}
	return 1
}
