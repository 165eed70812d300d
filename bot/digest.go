package bot

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// DigestSource collects the health figures of one Concourse target for a
// digest. Builds are counted over the window ending now. prev is the data
// of the previous digest of the same schedule (nil for the first one);
// sources may use it to bound their work, and the scheduler derives ages,
// missing workers and trends from it itself. An error means the target
// could not be read at all: the digest then says so, with the error.
type DigestSource interface {
	Collect(ctx context.Context, target string, window time.Duration, prev *DigestData) (DigestData, error)
}

// DigestData is a digest's figures for one target. Sources fill the facts;
// the scheduler adds what only history can tell (how long a worker has been
// stalled, which workers disappeared). It is stored as JSON.
type DigestData struct {
	Target string `json:"target"`
	// At is when the figures were collected.
	At     time.Time     `json:"at"`
	Window time.Duration `json:"window"`
	// Err is why the target could not be read; the figures are then empty.
	Err string `json:"error,omitempty"`
	// Notes are parts that could not be read ("pipelines: 503 …").
	Notes   []string         `json:"notes,omitempty"`
	Workers WorkerFigures    `json:"workers"`
	Builds  BuildFigures     `json:"builds"`
	Paused  []PausedPipeline `json:"paused,omitempty"`
	// DB is set when the target has a database configured.
	DB *DBFigures `json:"db,omitempty"`
}

// WorkerFigures describe the workers.
type WorkerFigures struct {
	ByState map[string]int `json:"by_state"`
	// Names lists every registered worker, sorted.
	Names   []string        `json:"names"`
	Stalled []StalledWorker `json:"stalled,omitempty"`
	// ContainersMax is the most containers on one worker (MaxWorker's).
	ContainersMax  int     `json:"containers_max"`
	MaxWorker      string  `json:"max_worker,omitempty"`
	ContainersMean float64 `json:"containers_mean"`
	// Missing lists the workers of the previous digest that are gone.
	Missing []string `json:"missing,omitempty"`
}

// StalledWorker is a worker in state stalled.
type StalledWorker struct {
	Name       string `json:"name"`
	Containers int    `json:"containers"`
	// Since is when a digest first saw it stalled. Concourse does not say
	// when a worker stalled, so the age shown is a lower bound.
	Since time.Time `json:"since"`
	// New is set when the previous digest saw the worker in another state.
	New bool `json:"new,omitempty"`
}

// BuildFigures describe the builds of the window.
type BuildFigures struct {
	ByStatus map[string]int `json:"by_status"`
	// MaxID is the newest build id seen: a later digest knows that a build
	// with a lower id existed at this digest's time.
	MaxID           int `json:"max_id,omitempty"`
	OldestPendingID int `json:"oldest_pending_id,omitempty"`
	// PendingSince bounds when the oldest pending build was queued: it was
	// queued at or before this time (zero when unknown). Concourse shows no
	// creation time; the bound comes from newer builds' start times and
	// from the previous digest.
	PendingSince      time.Time       `json:"pending_since,omitzero"`
	PendingByPipeline []PipelineCount `json:"pending_by_pipeline,omitempty"`
	// ImageFetch counts the scanned errored builds whose output contains
	// "image fetching failed"; Scanned is how many errored builds were read
	// (the scan is capped, newest first).
	ImageFetch          int      `json:"image_fetch"`
	Scanned             int      `json:"scanned"`
	ImageFetchPipelines []string `json:"image_fetch_pipelines,omitempty"`
	// TopFailing are the pipelines with the most failed and errored builds.
	TopFailing []PipelineCount `json:"top_failing,omitempty"`
}

// Count returns the number of builds with the status.
func (b BuildFigures) Count(status string) int { return b.ByStatus[status] }

// PipelineCount is a number of builds of one pipeline.
type PipelineCount struct {
	Team     string `json:"team"`
	Pipeline string `json:"pipeline"`
	Count    int    `json:"count"`
}

// Ref returns "team/pipeline".
func (p PipelineCount) Ref() string { return p.Team + "/" + p.Pipeline }

// PausedPipeline is a paused pipeline.
type PausedPipeline struct {
	Team string `json:"team"`
	Name string `json:"name"`
	By   string `json:"by,omitempty"`
	// Since is when it was paused (Exact) or first seen paused by a digest.
	Since time.Time `json:"since,omitzero"`
	Exact bool      `json:"exact,omitempty"`
}

// DBFigures describe the target's Concourse database.
type DBFigures struct {
	DatabaseBytes int64 `json:"database_bytes"`
	BuildLogBytes int64 `json:"build_log_bytes"`
	// Tables are the largest build-log tables, largest first.
	Tables []DBTable `json:"tables,omitempty"`
	// Err is why the sizes could not be read.
	Err string `json:"error,omitempty"`
}

// DBTable is one build-log table.
type DBTable struct {
	Table string `json:"table"`
	// Team and Pipeline own the table (empty for check and orphan tables).
	Team     string `json:"team,omitempty"`
	Pipeline string `json:"pipeline,omitempty"`
	// Label names the owner for humans ("main/app", "resource checks").
	Label string `json:"label"`
	Bytes int64  `json:"bytes"`
}

// Build and worker states the digest gives meaning to.
const (
	statusPending   = "pending"
	statusStarted   = "started"
	statusSucceeded = "succeeded"
	statusFailed    = "failed"
	statusErrored   = "errored"
	statusAborted   = "aborted"
	workerRunning   = "running"
	workerStalled   = "stalled"
)

var (
	digestStatuses     = []string{statusSucceeded, statusFailed, statusErrored, statusAborted, statusStarted, statusPending}
	digestWorkerStates = []string{workerRunning, workerStalled, "landing", "landed", "retiring"}
)

// Thresholds above which a figure becomes a problem with a suggestion.
const (
	// PendingAlert pending builds, or one queued PendingAgeAlert, suggest
	// workers-saturated.
	PendingAlert    = 50
	PendingAgeAlert = 30 * time.Minute
	// ContainersAlert containers on one worker suggest workers-saturated
	// (Garden's default limit is 250).
	ContainersAlert = 230
	// A build-log table of TableAlertBytes, or a database that grew by
	// DBGrowthAlert (fraction) since the last digest, suggests
	// postgres-build-logs-full.
	TableAlertBytes = 5 << 30
	DBGrowthAlert   = 0.10
)

// carryHistory completes cur with what the previous digest knew: when
// stalled workers and paused pipelines were first seen, which workers are
// gone, and a bound on the oldest pending build's queue time.
func carryHistory(cur *DigestData, prev *DigestData) {
	if cur.Err != "" {
		return
	}
	if prev == nil || prev.Err != "" {
		for i := range cur.Workers.Stalled {
			if cur.Workers.Stalled[i].Since.IsZero() {
				cur.Workers.Stalled[i].Since = cur.At
			}
		}
		for i := range cur.Paused {
			if cur.Paused[i].Since.IsZero() {
				cur.Paused[i].Since = cur.At
			}
		}
		return
	}
	stalled := map[string]time.Time{}
	for _, w := range prev.Workers.Stalled {
		stalled[w.Name] = nonZeroTime(w.Since, prev.At)
	}
	for i := range cur.Workers.Stalled {
		w := &cur.Workers.Stalled[i]
		since, ok := stalled[w.Name]
		if ok && (w.Since.IsZero() || since.Before(w.Since)) {
			w.Since = since
		}
		if w.Since.IsZero() {
			w.Since = cur.At
		}
		w.New = !ok && slices.Contains(prev.Workers.Names, w.Name)
	}
	now := map[string]bool{}
	for _, n := range cur.Workers.Names {
		now[n] = true
	}
	cur.Workers.Missing = nil
	for _, n := range prev.Workers.Names {
		if !now[n] {
			cur.Workers.Missing = append(cur.Workers.Missing, n)
		}
	}
	paused := map[string]time.Time{}
	for _, p := range prev.Paused {
		paused[p.Team+"/"+p.Name] = nonZeroTime(p.Since, prev.At)
	}
	for i := range cur.Paused {
		p := &cur.Paused[i]
		if since, ok := paused[p.Team+"/"+p.Name]; ok && !p.Exact {
			p.Since = since
		}
		if p.Since.IsZero() {
			p.Since = cur.At
		}
	}
	// Build ids only grow and a build is pending from its creation on: a
	// build that existed at the previous digest and is pending now was
	// already queued then.
	b := &cur.Builds
	if b.OldestPendingID > 0 && b.OldestPendingID <= prev.Builds.MaxID && !prev.At.IsZero() {
		if b.PendingSince.IsZero() || prev.At.Before(b.PendingSince) {
			b.PendingSince = prev.At
		}
	}
}

func nonZeroTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}

// Suggestion is a problem a digest found and the runbook command that
// deals with it.
type Suggestion struct {
	Problem string
	Runbook string
	// Command is the exact command to type: "/runbook run worker-stalled target=infra-prd worker=0".
	Command string
}

var trailingID = regexp.MustCompile(`-([0-9]+)$`)

// runbookCommand renders "/runbook run <name> target=<t> k=v …" with the
// parameters in the order given.
func runbookCommand(name, target string, kv ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "/runbook run %s target=%s", name, target)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			fmt.Fprintf(&b, " %s=%s", kv[i], kv[i+1])
		}
	}
	return b.String()
}

// windowParam renders a window as the runbooks' since parameter ("24h", "2d", "90m").
func windowParam(d time.Duration) string {
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", int64(math.Ceil(d.Seconds())))
}

// DigestSuggestions lists the problems of cur, most urgent first, each with
// the built-in runbook that handles it (parameter names as in
// runbooks/builtin). now is used for ages.
func DigestSuggestions(target string, cur DigestData, now time.Time) []Suggestion {
	var out []Suggestion
	add := func(problem, runbook string, kv ...string) {
		out = append(out, Suggestion{Problem: problem, Runbook: runbook, Command: runbookCommand(runbook, target, kv...)})
	}
	if cur.Err != "" {
		add(fmt.Sprintf("`%s` does not answer", target), "web-restart")
		return out
	}
	for _, w := range cur.Workers.Stalled {
		id := ""
		if m := trailingID.FindStringSubmatch(w.Name); m != nil {
			id = m[1]
		}
		problem := fmt.Sprintf("`%s` %s", w.Name, stalledFor(w, cur.At, now))
		if id == "" {
			problem += " (no worker ID in its name: give worker=<ID>)"
			add(problem, "worker-stalled", "worker", "<ID>")
			continue
		}
		add(problem, "worker-stalled", "worker", id)
	}
	b := cur.Builds
	window := windowParam(cur.Window)
	pending := b.Count(statusPending)
	pendingAge := time.Duration(0)
	if !b.PendingSince.IsZero() {
		pendingAge = now.Sub(b.PendingSince)
	}
	if pending >= PendingAlert || (pending > 0 && pendingAge >= PendingAgeAlert) {
		problem := fmt.Sprintf("%d pending build%s", pending, sPlural(pending))
		if pendingAge > 0 {
			problem += ", oldest queued ≥ " + humanDuration(pendingAge)
		}
		team, pipeline := "", ""
		if len(b.PendingByPipeline) > 0 && 2*b.PendingByPipeline[0].Count >= pending {
			top := b.PendingByPipeline[0]
			team, pipeline = top.Team, top.Pipeline
			problem += fmt.Sprintf(", %d in `%s`", top.Count, top.Ref())
		}
		add(problem, "workers-saturated", "since", window, "team", team, "pipeline", pipeline)
	} else if cur.Workers.ContainersMax >= ContainersAlert {
		add(fmt.Sprintf("`%s` runs %d containers", cur.Workers.MaxWorker, cur.Workers.ContainersMax), "workers-saturated", "since", window)
	}
	if b.ImageFetch > 0 {
		team, pipeline := "", ""
		if len(b.ImageFetchPipelines) == 1 {
			team, pipeline, _ = strings.Cut(b.ImageFetchPipelines[0], "/")
		}
		add(fmt.Sprintf("%d errored build%s with `image fetching failed` in %s", b.ImageFetch, sPlural(b.ImageFetch), codeList(b.ImageFetchPipelines, 3)),
			"image-fetch-failed", "since", window, "team", team, "pipeline", pipeline)
	}
	if db := cur.DB; db != nil && db.Err == "" && len(db.Tables) > 0 {
		top := db.Tables[0]
		if top.Bytes >= TableAlertBytes {
			add(fmt.Sprintf("build logs of `%s` take %s", top.Label, humanBytes(top.Bytes)),
				"postgres-build-logs-full", "team", top.Team, "pipeline", top.Pipeline)
		}
	}
	return out
}

// dbGrowthSuggestion is the postgres suggestion for a database that grows
// fast; it needs the previous digest.
func dbGrowthSuggestion(target string, cur DigestData, prev *DigestData) (Suggestion, bool) {
	if cur.DB == nil || cur.DB.Err != "" || prev == nil || prev.DB == nil || prev.DB.DatabaseBytes <= 0 {
		return Suggestion{}, false
	}
	grew := float64(cur.DB.DatabaseBytes-prev.DB.DatabaseBytes) / float64(prev.DB.DatabaseBytes)
	if grew < DBGrowthAlert {
		return Suggestion{}, false
	}
	team, pipeline := "", ""
	if len(cur.DB.Tables) > 0 {
		team, pipeline = cur.DB.Tables[0].Team, cur.DB.Tables[0].Pipeline
	}
	return Suggestion{
		Problem: fmt.Sprintf("the database grew %.0f%% since the last digest (to %s)", 100*grew, humanBytes(cur.DB.DatabaseBytes)),
		Runbook: "postgres-build-logs-full",
		Command: runbookCommand("postgres-build-logs-full", target, "team", team, "pipeline", pipeline),
	}, true
}

func stalledFor(w StalledWorker, at, now time.Time) string {
	switch {
	case w.New:
		return "stalled since the last digest"
	case w.Since.IsZero() || !w.Since.Before(at):
		return "is stalled"
	}
	return "stalled for ≥ " + humanDuration(now.Sub(w.Since))
}

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

// RenderDigest renders a digest: a short message (health line, figures
// with their ▲▼ trend against prev, suggested runbook commands) and the
// details in Detail. prev is the previous digest (nil for the first); now
// gives the time zone of the times shown.
func RenderDigest(target string, cur DigestData, prev *DigestData, now time.Time) Message {
	when := func(t time.Time) string { return t.In(now.Location()).Format("Mon 15:04 MST") }
	if prev != nil && prev.Err != "" {
		prev = nil // an unreachable digest has no figures to compare with
	}
	has := prev != nil
	var pv DigestData
	if has {
		pv = *prev
	}
	var b strings.Builder
	if cur.Err != "" {
		fmt.Fprintf(&b, "🔴 *Health digest* `%s` · %s — unreachable\n%s", target, when(now), cur.Err)
		for _, s := range DigestSuggestions(target, cur, now) {
			fmt.Fprintf(&b, "\nIf Concourse web is down → `%s`", s.Command)
		}
		if has {
			fmt.Fprintf(&b, "\nLast figures (%s): %d workers, %d stalled, %d pending builds.", when(pv.At),
				len(pv.Workers.Names), len(pv.Workers.Stalled), pv.Builds.Count(statusPending))
		}
		return Message{Text: b.String()}
	}
	sugg := DigestSuggestions(target, cur, now)
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
	fmt.Fprintf(&b, "%s *Health digest* `%s` · %s — %s\n", icon, target, when(now), verdict)

	var states []string
	for _, s := range orderedStates(w.ByState, digestWorkerStates) {
		n, p := w.ByState[s], pv.Workers.ByState[s]
		if n > 0 || (has && p > 0) {
			states = append(states, fmt.Sprintf("%d %s%s", n, s, trendInt(n, p, has)))
		}
	}
	fmt.Fprintf(&b, "Workers: %s", nonEmpty(strings.Join(states, ", "), "none registered"))
	if len(w.Names) > 0 {
		fmt.Fprintf(&b, " · containers max %d%s, mean %.0f%s", w.ContainersMax, trendInt(w.ContainersMax, pv.Workers.ContainersMax, has),
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
	fmt.Fprintf(&b, "\nBuilds (%s): %s", humanDuration(cur.Window), nonEmpty(strings.Join(counts, ", "), "none finished"))
	if n, p := bf.Count(statusPending), pv.Builds.Count(statusPending); n > 0 || (has && p > 0) {
		fmt.Fprintf(&b, " · %d pending%s", n, trendInt(n, p, has))
		if n > 0 && !bf.PendingSince.IsZero() {
			fmt.Fprintf(&b, ", oldest queued ≥ %s", humanDuration(now.Sub(bf.PendingSince)))
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
			fmt.Fprintf(&b, "\n• %s → `%s`", s.Problem, s.Command)
		}
	}
	if has {
		fmt.Fprintf(&b, "\nTrends vs the digest of %s · details in the thread.", when(pv.At))
	} else {
		b.WriteString("\nFirst digest: no trends yet · details in the thread.")
	}
	return Message{Text: b.String(), Detail: renderDigestDetail(cur, prev, now)}
}

// renderDigestDetail is the long part of a digest: every list in full.
func renderDigestDetail(cur DigestData, prev *DigestData, now time.Time) string {
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
		line("• `%s` %s — %d containers%s", s.Name, stalledFor(s, cur.At, now), s.Containers, seen)
	}
	if w.MaxWorker != "" {
		line("• busiest: `%s` with %d containers (mean %.1f per worker)", w.MaxWorker, w.ContainersMax, w.ContainersMean)
	}
	if len(w.Missing) > 0 {
		line("• gone since the last digest: %s", codeList(w.Missing, 50))
	}
	line("Builds since %s (%s):", when(cur.At.Add(-cur.Window)), humanDuration(cur.Window))
	for _, s := range digestStatuses {
		if n := bf.Count(s); n > 0 {
			line("• %s: %d", s, n)
		}
	}
	if bf.OldestPendingID > 0 {
		age := "queue time unknown"
		if !bf.PendingSince.IsZero() {
			age = "queued ≥ " + humanDuration(now.Sub(bf.PendingSince))
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
				how = "paused for " + humanDuration(now.Sub(p.Since))
			case !p.Since.Before(cur.At):
				how = "paused (first seen now)"
			default:
				how = "paused for ≥ " + humanDuration(now.Sub(p.Since))
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
