package digest

import (
	"context"
	"slices"
	"time"
)

// Source collects the health figures of one Concourse target for a
// digest. Builds are counted over the window ending now. teams, when not
// nil, are the only Concourse teams whose things the figures may cover
// (the digest is posted to a channel bound to them: channels: in
// groundcrew.yaml): their builds, pipelines and database tables, the
// workers they own and the global ones; nothing of another team is
// counted or named. prev is the data of the previous digest of the same
// schedule (nil for the first one); sources may use it to bound their
// work, and the scheduler derives ages, missing workers and trends from
// it itself. An error means the target could not be read at all: the
// digest then says so, with the error.
type Source interface {
	Collect(ctx context.Context, target string, teams []string, window time.Duration, prev *Data) (Data, error)
}

// Data is a digest's figures for one target. Sources fill the facts;
// the scheduler adds what only history can tell (how long a worker has been
// stalled, which workers disappeared). It is stored as JSON.
type Data struct {
	Target string `json:"target"`
	// Teams are the only teams whose things the figures cover (nil: all).
	Teams []string `json:"teams,omitempty"`
	// At is when the figures were collected.
	At     time.Time     `json:"at"`
	Window time.Duration `json:"window"`
	// Err is why the target could not be read; the figures are then empty.
	Err string `json:"error,omitempty"`
	// LoginRefused marks an Err that is a credentials problem (Concourse
	// answered 401), not an outage: no web restart is suggested.
	LoginRefused bool `json:"login_refused,omitempty"`
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
	// Team is the team that owns it ("" for a global worker).
	Team string `json:"team,omitempty"`
	// Ref is what to type after worker= to address exactly this worker (its
	// ID under the target's naming, else its name); empty means the name.
	Ref string `json:"ref,omitempty"`
	// Since is when a digest first saw it stalled. Concourse does not say
	// when a worker stalled, so the age shown is a lower bound.
	Since time.Time `json:"since"`
	// New is set when the previous digest saw the worker in another state.
	New bool `json:"new,omitempty"`
	// AutoRemove says when Concourse removes the worker by itself (the
	// target's stalled_worker_timeout, an ephemeral worker): "Concourse
	// removes worker-1 by itself before 14:32 UTC unless it heartbeats
	// again"; "" when it does not.
	AutoRemove string `json:"auto_remove,omitempty"`
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
func carryHistory(cur *Data, prev *Data) {
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
