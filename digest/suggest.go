package digest

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
)

// Suggestion is a problem a digest found and the runbook command that
// deals with it.
type Suggestion struct {
	Problem string
	Runbook string
	// Command is the exact command to type: "/runbook run worker-stalled target=infra-prd worker=0".
	Command string
	// Alternative is the other runbook that fits, as a command, and
	// AltWhy when to prefer it ("" when there is none).
	Alternative string
	AltWhy      string
}

// Fix is the first runbook for a situation — the quickest that fits —
// and the alternative named with it. The digest and the watch both take
// theirs from here, so one situation gets one first suggestion.
type Fix struct {
	Runbook string
	// Params are name, value pairs in the order shown (empty values are
	// left out).
	Params     []string
	AltRunbook string
	AltParams  []string
	// AltWhy says when the alternative is the better choice.
	AltWhy string
}

// Command renders the fix as a command on target.
func (f Fix) Command(target string) string { return runbookCommand(f.Runbook, target, f.Params...) }

// AltCommand renders the alternative ("" when there is none).
func (f Fix) AltCommand(target string) string {
	if f.AltRunbook == "" {
		return ""
	}
	return runbookCommand(f.AltRunbook, target, f.AltParams...)
}

// ParamMap returns the fix's parameters as a map (empty values left out).
func (f Fix) ParamMap() map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(f.Params); i += 2 {
		if f.Params[i+1] != "" {
			out[f.Params[i]] = f.Params[i+1]
		}
	}
	return out
}

var trailingID = regexp.MustCompile(`-[0-9]+$`)

// StalledWorkerFix is the fix for a stalled worker. ref is what worker=
// takes (its ID under the target's naming, else its name). A worker with
// an ID (a VM of the operations manual: worker-0,
// caascad-ci-workers-infra-prd-3) is brought back with worker-stalled,
// pruning being the alternative; an ephemeral one (a container id, a pod
// name) does not come back and is pruned, worker-stalled being the
// alternative.
func StalledWorkerFix(name, ref string) Fix {
	if ref == "" {
		ref = name
	}
	if ref != name || trailingID.MatchString(name) {
		return Fix{Runbook: "worker-stalled", Params: []string{"worker", ref},
			AltRunbook: "prune-stalled", AltParams: []string{"worker", ref}, AltWhy: "if it will not come back"}
	}
	return Fix{Runbook: "prune-stalled", Params: []string{"worker", ref},
		AltRunbook: "worker-stalled", AltParams: []string{"worker", ref}, AltWhy: "to bring it back instead"}
}

// PendingFix is the fix for a saturated queue over window. When one
// pipeline holds most of the pending builds (team, pipeline), aborting
// them (abort-pending, 2 inputs) is the quickest, the guided
// workers-saturated the alternative; else workers-saturated.
func PendingFix(window, team, pipeline string) Fix {
	guided := []string{"since", window, "team", team, "pipeline", pipeline}
	if pipeline == "" {
		return Fix{Runbook: "workers-saturated", Params: guided}
	}
	return Fix{Runbook: "abort-pending", Params: []string{"pipeline", regexp.QuoteMeta(pipeline), "team", team, "since", window},
		AltRunbook: "workers-saturated", AltParams: guided, AltWhy: "guided: abort a few, pause, land, then everything"}
}

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

// Suggestions lists the problems of cur, most urgent first, each with
// the built-in runbook that handles it (parameter names as in
// runbooks/builtin). now is used for ages.
func Suggestions(target string, cur Data, now time.Time) []Suggestion {
	var out []Suggestion
	add := func(problem, runbook string, kv ...string) {
		out = append(out, Suggestion{Problem: problem, Runbook: runbook, Command: runbookCommand(runbook, target, kv...)})
	}
	addFix := func(problem string, f Fix) {
		out = append(out, Suggestion{Problem: problem, Runbook: f.Runbook, Command: f.Command(target), Alternative: f.AltCommand(target), AltWhy: f.AltWhy})
	}
	if cur.Err != "" && cur.LoginRefused {
		return out // a credentials problem: the error says what to check; no runbook fixes it
	}
	if cur.Err != "" {
		add(fmt.Sprintf("`%s` does not answer", target), "web-restart")
		return out
	}
	for _, w := range cur.Workers.Stalled {
		if len(cur.Teams) > 0 && w.Team == "" {
			// A digest of some teams: a global worker is no team's, and
			// their channel may not change it; said, without a command.
			out = append(out, Suggestion{Problem: fmt.Sprintf("`%s` %s — a global worker: a channel bound to every team acts on it", w.Name, stalledFor(w, cur.At, now))})
			continue
		}
		// the source's ref addresses exactly this worker; without one the
		// full name does (a trailing number may be another worker's ID)
		addFix(fmt.Sprintf("`%s` %s", w.Name, stalledFor(w, cur.At, now)), StalledWorkerFix(w.Name, w.Ref))
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
			problem += ", oldest queued ≥ " + human.Duration(pendingAge)
		}
		team, pipeline := "", ""
		if len(b.PendingByPipeline) > 0 && 2*b.PendingByPipeline[0].Count >= pending {
			top := b.PendingByPipeline[0]
			team, pipeline = top.Team, top.Pipeline
			problem += fmt.Sprintf(", %d in `%s`", top.Count, top.Ref())
		}
		addFix(problem, PendingFix(window, team, pipeline))
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
func dbGrowthSuggestion(target string, cur Data, prev *Data) (Suggestion, bool) {
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
	return "stalled for ≥ " + human.Duration(now.Sub(w.Since))
}
