package digest

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func sPlural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func codeList(xs []string, n int) string {
	var parts []string
	for i, x := range xs {
		if i == n {
			parts = append(parts, fmt.Sprintf("%d more", len(xs)-n))
			break
		}
		parts = append(parts, "`"+x+"`")
	}
	return strings.Join(parts, ", ")
}

// humanBytes renders a size with binary units: "512 B", "3.4 MiB", "12.0 GiB".
func humanBytes(n int64) string {
	if n < 0 {
		return "-" + humanBytes(-n)
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// orderedStates returns the known states in order, then the others by name.
func orderedStates(m map[string]int, known []string) []string {
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	return append(slices.Clone(known), extra...)
}

// trendInt renders the change of a figure: " ▲3", " ▼2", or "" when equal
// or when there is nothing to compare with.
func trendInt(cur, prev int, has bool) string {
	switch {
	case !has || cur == prev:
		return ""
	case cur > prev:
		return fmt.Sprintf(" ▲%d", cur-prev)
	}
	return fmt.Sprintf(" ▼%d", prev-cur)
}

func trendBytes(cur, prev int64, has bool) string {
	switch {
	case !has || cur == prev:
		return ""
	case cur > prev:
		return " ▲" + humanBytes(cur-prev)
	}
	return " ▼" + humanBytes(prev-cur)
}

// Render renders a digest: a short message (health line, figures
// with their ▲▼ trend against prev, suggested runbook commands) and the
// details in Detail. prev is the previous digest (nil for the first); now
// gives the time zone of the times shown.
func Render(target string, cur Data, prev *Data, now time.Time) chatmodel.Message {
	when := func(t time.Time) string { return t.In(now.Location()).Format("Mon 15:04 MST") }
	if prev != nil && prev.Err != "" {
		prev = nil // an unreachable digest has no figures to compare with
	}
	has := prev != nil
	var pv Data
	if has {
		pv = *prev
	}
	var b strings.Builder
	if cur.Err != "" {
		verdict := "unreachable"
		if cur.LoginRefused {
			verdict = "login refused"
		}
		fmt.Fprintf(&b, "🔴 *Health digest* `%s`%s · %s — %s\n%s", target, teamsOf(cur.Teams), when(now), verdict, cur.Err)
		for _, s := range Suggestions(target, cur, now) {
			fmt.Fprintf(&b, "\nIf Concourse web is down → `%s`", s.Command)
		}
		if has {
			fmt.Fprintf(&b, "\nLast figures (%s): %d workers, %d stalled, %d pending builds.", when(pv.At),
				len(pv.Workers.Names), len(pv.Workers.Stalled), pv.Builds.Count(statusPending))
		}
		return chatmodel.Message{Text: b.String()}
	}
	sugg := Suggestions(target, cur, now)
	if s, ok := dbGrowthSuggestion(target, cur, prev); ok {
		sugg = append(sugg, s)
	}
	w, bf := cur.Workers, cur.Builds
	icon, verdict := "🟢", "all healthy"
	problems := len(sugg)
	if len(w.Missing) > 0 {
		problems++
	}
	if problems > 0 {
		icon, verdict = "🟠", fmt.Sprintf("%d problem%s", problems, sPlural(problems))
	}
	if len(w.Stalled) > 0 || bf.ImageFetch > 0 || (len(w.Names) > 0 && w.ByState[workerRunning] == 0) {
		icon = "🔴"
	}
	fmt.Fprintf(&b, "%s *Health digest* `%s`%s · %s — %s\n", icon, target, teamsOf(cur.Teams), when(now), verdict)

	var states []string
	for _, s := range orderedStates(w.ByState, digestWorkerStates) {
		n, p := w.ByState[s], pv.Workers.ByState[s]
		if n > 0 || (has && p > 0) {
			states = append(states, fmt.Sprintf("%d %s%s", n, s, trendInt(n, p, has)))
		}
	}
	fmt.Fprintf(&b, "Workers: %s", nonEmpty(strings.Join(states, ", "), "none registered"))
	if len(w.Names) > 0 {
		fmt.Fprintf(&b, " · containers max %d%s, mean %.1f per worker%s", w.ContainersMax, trendInt(w.ContainersMax, pv.Workers.ContainersMax, has),
			w.ContainersMean, trendInt(int(math.Round(w.ContainersMean)), int(math.Round(pv.Workers.ContainersMean)), has))
	}
	if len(w.Missing) > 0 {
		fmt.Fprintf(&b, " · %d gone since the last digest: %s", len(w.Missing), codeList(w.Missing, 3))
	}

	var counts []string
	for _, s := range []string{statusSucceeded, statusFailed, statusErrored, statusAborted} {
		n, p := bf.Count(s), pv.Builds.Count(s)
		if n == 0 && (!has || p == 0) {
			continue
		}
		c := fmt.Sprintf("%d %s%s", n, s, trendInt(n, p, has))
		if s == statusErrored && bf.ImageFetch > 0 {
			c += fmt.Sprintf(" (%d image fetch)", bf.ImageFetch)
		}
		counts = append(counts, c)
	}
	fmt.Fprintf(&b, "\nBuilds (%s): %s", human.Duration(cur.Window), nonEmpty(strings.Join(counts, ", "), "none finished"))
	if n, p := bf.Count(statusPending), pv.Builds.Count(statusPending); n > 0 || (has && p > 0) {
		fmt.Fprintf(&b, " · %d pending%s", n, trendInt(n, p, has))
		if n > 0 && !bf.PendingSince.IsZero() {
			fmt.Fprintf(&b, ", oldest queued ≥ %s", human.Duration(now.Sub(bf.PendingSince)))
		}
	}
	if n := bf.Count(statusStarted); n > 0 {
		fmt.Fprintf(&b, " · %d running", n)
	}

	var more []string
	if len(cur.Paused) > 0 || (has && len(pv.Paused) > 0) {
		more = append(more, fmt.Sprintf("Paused: %d pipeline%s%s", len(cur.Paused), sPlural(len(cur.Paused)), trendInt(len(cur.Paused), len(pv.Paused), has)))
	}
	if db := cur.DB; db != nil {
		if db.Err != "" {
			more = append(more, "DB: not read ("+db.Err+")")
		} else {
			hasDB := has && pv.DB != nil && pv.DB.Err == ""
			var pdb DBFigures
			if hasDB {
				pdb = *pv.DB
			}
			more = append(more, fmt.Sprintf("DB %s%s, build logs %s%s", humanBytes(db.DatabaseBytes), trendBytes(db.DatabaseBytes, pdb.DatabaseBytes, hasDB),
				humanBytes(db.BuildLogBytes), trendBytes(db.BuildLogBytes, pdb.BuildLogBytes, hasDB)))
		}
	}
	if len(more) > 0 {
		b.WriteString("\n" + strings.Join(more, " · "))
	}
	if len(sugg) > 0 {
		b.WriteString("\nSuggested:")
		for _, s := range sugg {
			if s.Command == "" {
				fmt.Fprintf(&b, "\n• %s", s.Problem)
				continue
			}
			fmt.Fprintf(&b, "\n• %s → `%s`", s.Problem, s.Command)
			if s.Alternative != "" {
				fmt.Fprintf(&b, " (or `%s`, %s)", s.Alternative, s.AltWhy)
			}
		}
	}
	if has {
		fmt.Fprintf(&b, "\nTrends vs the digest of %s · details in the thread.", when(pv.At))
	} else {
		b.WriteString("\nFirst digest: no trends yet · details in the thread.")
	}
	return chatmodel.Message{Text: b.String(), Detail: renderDigestDetail(cur, prev, now)}
}

// teamsOf says which teams a digest covers (" · team `payments`"; ""
// for every team).
func teamsOf(teams []string) string {
	switch len(teams) {
	case 0:
		return ""
	case 1:
		return " · team `" + teams[0] + "`"
	}
	return " · teams " + codeList(teams, len(teams))
}

func isStalled(w WorkerFigures, name string) bool {
	for _, s := range w.Stalled {
		if s.Name == name {
			return true
		}
	}
	return false
}

// renderDigestDetail is the long part of a digest: every list in full.
func renderDigestDetail(cur Data, prev *Data, now time.Time) string {
	when := func(t time.Time) string { return t.In(now.Location()).Format("Mon 02 Jan 15:04 MST") }
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w, bf := cur.Workers, cur.Builds
	line("Workers (%d):", len(w.Names))
	for _, s := range orderedStates(w.ByState, digestWorkerStates) {
		if w.ByState[s] > 0 {
			line("• %s: %d", s, w.ByState[s])
		}
	}
	for _, s := range w.Stalled {
		seen := ""
		if !s.Since.IsZero() {
			seen = "; first seen stalled " + when(s.Since)
		}
		auto := ""
		if s.AutoRemove != "" {
			auto = "; " + s.AutoRemove
		}
		line("• `%s` %s — %d containers%s%s", s.Name, stalledFor(s, cur.At, now), s.Containers, seen, auto)
	}
	if w.MaxWorker != "" {
		if isStalled(w, w.MaxWorker) {
			// a stalled worker runs nothing: its count is from before it stopped
			line("• most containers: `%s` with %d, but it is stalled (the count is from before it stopped; mean %.1f per worker)", w.MaxWorker, w.ContainersMax, w.ContainersMean)
		} else {
			line("• busiest: `%s` with %d containers (mean %.1f per worker)", w.MaxWorker, w.ContainersMax, w.ContainersMean)
		}
	}
	if len(w.Missing) > 0 {
		line("• gone since the last digest: %s", codeList(w.Missing, 50))
	}
	line("Builds since %s (%s):", when(cur.At.Add(-cur.Window)), human.Duration(cur.Window))
	for _, s := range digestStatuses {
		if n := bf.Count(s); n > 0 {
			line("• %s: %d", s, n)
		}
	}
	if bf.OldestPendingID > 0 {
		age := "queue time unknown"
		if !bf.PendingSince.IsZero() {
			age = "queued ≥ " + human.Duration(now.Sub(bf.PendingSince))
		}
		line("• oldest pending: build %d, %s", bf.OldestPendingID, age)
	}
	for _, p := range bf.PendingByPipeline {
		line("• pending in `%s`: %d", p.Ref(), p.Count)
	}
	for _, p := range bf.TopFailing {
		line("• failed or errored in `%s`: %d", p.Ref(), p.Count)
	}
	if n := bf.Count(statusErrored); n > 0 {
		line("• `image fetching failed` in %d of the %d errored builds scanned (of %d) %s", bf.ImageFetch, bf.Scanned, n, codeList(bf.ImageFetchPipelines, 20))
	}
	if len(cur.Paused) > 0 {
		line("Paused pipelines (%d):", len(cur.Paused))
		for _, p := range cur.Paused {
			how := "paused"
			switch {
			case p.Since.IsZero():
			case p.Exact:
				how = "paused for " + human.Duration(now.Sub(p.Since))
			case !p.Since.Before(cur.At):
				how = "paused (first seen now)"
			default:
				how = "paused for ≥ " + human.Duration(now.Sub(p.Since))
			}
			if p.By != "" {
				how += " by " + p.By
			}
			line("• `%s/%s` — %s", p.Team, p.Name, how)
		}
	}
	if db := cur.DB; db != nil && db.Err == "" {
		line("Database: %s; build logs %s", humanBytes(db.DatabaseBytes), humanBytes(db.BuildLogBytes))
		before := map[string]int64{}
		if prev != nil && prev.DB != nil {
			for _, t := range prev.DB.Tables {
				before[t.Table] = t.Bytes
			}
		}
		for _, t := range db.Tables {
			p, ok := before[t.Table]
			line("• `%s` (%s) %s%s", t.Label, t.Table, humanBytes(t.Bytes), trendBytes(t.Bytes, p, ok))
		}
	}
	for _, n := range cur.Notes {
		line("Note: %s", n)
	}
	if prev != nil {
		line("Compared with the digest of %s.", when(prev.At))
	}
	return strings.TrimRight(b.String(), "\n")
}
