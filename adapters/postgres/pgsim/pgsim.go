// Package pgsim is a simulated Concourse PostgreSQL database behind the
// postgres.* operations, for scenarios, the demo and training (next to the
// Concourse simulator, concoursesim). It is not a test fake: `groundcrew
// test` and `groundcrew demo` run on it.
package pgsim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/adapters/postgres"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Size is a number of bytes written 123, "800MB" or "38GB" (powers of 1024).
type Size int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (z *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*z = Size(v)
	return nil
}

// ParseSize reads "800MB", "38GB" or a number of bytes.
func ParseSize(s string) (int64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mult   float64
	}{{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10}, {"B", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || f < 0 {
				return 0, fmt.Errorf("%q is not a size (e.g. 800MB, 38GB)", s)
			}
			return int64(f * u.mult), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (e.g. 800MB, 38GB)", s)
	}
	return n, nil
}

// DatabaseSpec declares a simulated Concourse database: its build-log
// tables with their sizes, for the postgres.* operations.
type DatabaseSpec struct {
	Tables []TableSpec `yaml:"tables"`
	// Other is the size of everything that is not a build-log table
	// (default 2GB).
	Other Size `yaml:"other"`
	// Replica makes the database a read-only replica: purges are refused.
	Replica bool `yaml:"replica"`
	// Down makes every database operation fail (connection refused).
	Down bool `yaml:"down"`
}

// TableSpec is one build-log table.
type TableSpec struct {
	// Kind is pipeline (default), team (one-off builds) or check.
	Kind     string `yaml:"kind"`
	Team     string `yaml:"team"`
	Pipeline string `yaml:"pipeline"`
	Size     Size   `yaml:"size"`
	Rows     int64  `yaml:"rows"`
	// OldRows are the rows of builds older than the days of an older_than
	// purge (whatever the days); 0 means such a purge has nothing to do.
	OldRows int64 `yaml:"old_rows"`
	// Running is the number of builds of the pipeline still running.
	Running int `yaml:"running"`
}

// Demo is the database of the demo: the build logs of
// deploy/caascad-alert-prepare (the pipeline with 300 pending builds) fill
// most of it.
func Demo() *DatabaseSpec {
	return &DatabaseSpec{
		Other: 2 << 30,
		Tables: []TableSpec{
			{Team: "deploy", Pipeline: "caascad-alert-prepare", Size: 38 << 30, Rows: 41_200_000, OldRows: 39_000_000, Running: 1},
			{Team: "main", Pipeline: "app", Size: 1288490188, Rows: 1_400_000, OldRows: 600_000},
			{Kind: "check", Size: 640 << 20, Rows: 720_000},
			{Team: "main", Pipeline: "docs", Size: 96 << 20, Rows: 110_000},
			{Kind: "team", Team: "main", Size: 12 << 20, Rows: 9_000},
		},
	}
}

// simTable is a table of the simulated database.
type simTable struct {
	postgres.TableSize
	oldRows int64
	running int
}

// Sim is a simulated Concourse database behind the postgres.*
// operations: the same names, arguments, plan items and result data as
// adapters/postgres, over tables declared in a DatabaseSpec. Safe for
// concurrent use.
type Sim struct {
	target string
	mu     sync.Mutex
	tables []*simTable
	other  int64
	down   bool
	rep    bool
}

var _ opmodel.Provider = (*Sim)(nil)

// New returns the simulated database of target. pipelineID
// (may be nil) gives the id the Concourse simulator uses for a pipeline, so
// table names match the pipelines the Concourse operations show.
func New(target string, spec DatabaseSpec, pipelineID func(team, name string) (int, bool)) *Sim {
	d := &Sim{target: target, other: int64(spec.Other), down: spec.Down, rep: spec.Replica}
	if d.other == 0 {
		d.other = 2 << 30
	}
	teams := map[string]int64{"main": 1}
	teamID := func(name string) int64 {
		if id, ok := teams[name]; ok {
			return id
		}
		teams[name] = int64(len(teams) + 1)
		return teams[name]
	}
	next := int64(1000)
	for _, t := range spec.Tables {
		st := &simTable{oldRows: t.OldRows, running: t.Running}
		st.Kind, st.Bytes, st.Rows = t.Kind, int64(t.Size), t.Rows
		switch t.Kind {
		case "check":
			st.Table = "check_build_events"
		case "team":
			st.Team, st.TeamID = t.Team, teamID(t.Team)
			st.Table = "team_build_events_" + strconv.FormatInt(st.TeamID, 10)
		default:
			st.Kind = "pipeline"
			st.Team, st.Pipeline, st.TeamID = t.Team, t.Pipeline, teamID(t.Team)
			id := int64(0)
			if pipelineID != nil {
				if n, ok := pipelineID(t.Team, t.Pipeline); ok {
					id = int64(n)
				}
			}
			if id == 0 {
				next++
				id = next
			}
			st.PipelineID = id
			st.Table = "pipeline_build_events_" + strconv.FormatInt(id, 10)
		}
		d.tables = append(d.tables, st)
	}
	return d
}

// SetDown makes the database unreachable (true) or reachable again.
func (d *Sim) SetDown(down bool) {
	d.mu.Lock()
	d.down = down
	d.mu.Unlock()
}

// Reap deletes the logs old_rows counts from a table (by name or
// "team/pipeline"), as Concourse's build reaper (or someone's own purge)
// does: an older_than purge then has nothing left to do.
func (d *Sim) Reap(key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.find(key)
	if t == nil {
		return fmt.Errorf("simulated database: no build-log table %q", key)
	}
	t.Rows -= t.oldRows
	t.oldRows = 0
	return nil
}

// Table returns a table by name ("pipeline_build_events_12") or owner
// ("team/pipeline").
func (d *Sim) Table(key string) (postgres.TableSize, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t := d.find(key); t != nil {
		return t.TableSize, true
	}
	return postgres.TableSize{}, false
}

func (d *Sim) find(key string) *simTable {
	for _, t := range d.tables {
		if t.Table == key || (t.Kind == "pipeline" && t.Team+"/"+t.Pipeline == key) {
			return t
		}
	}
	return nil
}

// errDatabase marks failures of the simulated database.
var errDatabase = errors.New("simulated database")

func (d *Sim) check(target, action string) error {
	if target != d.target {
		return fmt.Errorf("%w: target %s has no database configured: set targets.%s.database.dsn_file", errDatabase, target, target)
	}
	if d.down {
		return fmt.Errorf("%w: %s on concourse@db.%s:5432/concourse: connection refused: is PostgreSQL up and the DSN right?", errDatabase, action, target)
	}
	return nil
}

func (d *Sim) total() int64 {
	n := d.other
	for _, t := range d.tables {
		n += t.Bytes
	}
	return n
}

// Ops implements opmodel.Provider.
func (d *Sim) Ops() []opmodel.Op {
	return []opmodel.Op{
		{Name: postgres.OpPing, Class: opmodel.ClassRead, Doc: "Simulated: connect to the target's Concourse database.", Do: d.ping},
		{Name: postgres.OpTableSizes, Class: opmodel.ClassRead, Doc: "Simulated: largest build-log tables by team and pipeline.",
			Args: []opmodel.ArgSpec{{Name: "top"}, {Name: "kind"}}, Do: d.sizes},
		{Name: postgres.OpPurge, Class: opmodel.ClassDestructive, TeamRole: "member", Owner: opmodel.OwnerTeam, Doc: "Simulated: purge one pipeline's build logs.",
			Args: []opmodel.ArgSpec{{Name: "team", Required: true}, {Name: "pipeline"}, {Name: "instance_vars"}, {Name: "one_off"}, {Name: "mode"}, {Name: "days"}},
			Plan: d.purgePlan, Apply: d.purgeApply},
	}
}

func (d *Sim) ping(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(c.Target, "database ping"); err != nil {
		return opmodel.Result{}, err
	}
	res := postgres.PingResult{Endpoint: "concourse@db." + d.target + ":5432/concourse", ServerVersion: "15.8", Database: "concourse",
		User: "concourse", InRecovery: d.rep, LatencyMS: 2, ConcourseSchema: true, DatabaseBytes: d.total()}
	sum := fmt.Sprintf("%s: PostgreSQL %s, 2 ms, database %s", res.Endpoint, res.ServerVersion, humanBytes(res.DatabaseBytes))
	if d.rep {
		sum += "; this is a read-only replica: purges will fail here"
	}
	return opmodel.Result{Summary: sum, Data: res, Warn: d.rep}, nil
}

func (d *Sim) sizes(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
	top, err := c.Args.Int("top", 10)
	if err != nil {
		return opmodel.Result{}, err
	}
	kind := c.Args.String("kind")
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(c.Target, "reading table sizes"); err != nil {
		return opmodel.Result{}, err
	}
	all := make([]postgres.TableSize, 0, len(d.tables))
	var s postgres.TableSizes
	for _, t := range d.tables {
		all = append(all, t.TableSize)
		s.BuildEventsBytes += t.Bytes
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Bytes > all[j].Bytes })
	s.DatabaseBytes, s.TableCount, s.Tables = d.total(), len(all), []postgres.TableSize{}
	for _, t := range all {
		if (kind == "" || t.Kind == kind) && len(s.Tables) < top {
			s.Tables = append(s.Tables, t)
		}
	}
	summary := fmt.Sprintf("database %s; build logs %s in %d tables", humanBytes(s.DatabaseBytes), humanBytes(s.BuildEventsBytes), s.TableCount)
	if len(s.Tables) > 0 {
		summary = fmt.Sprintf("database %s; largest: %s %s; build logs %s in %d tables", humanBytes(s.DatabaseBytes),
			s.Tables[0].Label(), humanBytes(s.Tables[0].Bytes), humanBytes(s.BuildEventsBytes), s.TableCount)
	}
	tbl := &opmodel.Table{Columns: []string{"table", "team", "pipeline", "size", "rows"}, Noun: "tables"}
	for _, t := range s.Tables {
		pipeline := t.Pipeline
		switch t.Kind {
		case "check":
			pipeline = "(resource checks)"
		case "team":
			pipeline = "(one-off builds)"
		}
		tbl.Rows = append(tbl.Rows, []string{t.Table, t.Team, pipeline, humanBytes(t.Bytes), "~" + human.Count(t.Rows)})
	}
	return opmodel.Result{Summary: summary, Table: tbl, Detail: "Sizes include indexes and TOAST; rows are PostgreSQL's estimates.", Data: s}, nil
}

func (d *Sim) purgePlan(_ context.Context, c opmodel.Call) (opmodel.Plan, error) {
	team, pipeline, mode := c.Args.String("team"), c.Args.String("pipeline"), strings.TrimSpace(c.Args.String("mode"))
	oneOff := c.Args.Bool("one_off")
	if mode == "" {
		mode = postgres.ModeTruncate
	}
	days, err := c.Args.Int("days", 0)
	if err != nil {
		return opmodel.Plan{}, err
	}
	switch {
	case mode != postgres.ModeTruncate && mode != postgres.ModeOlderThan:
		return opmodel.Plan{}, fmt.Errorf("%w: argument \"mode\": %q is not truncate or older_than", errDatabase, mode)
	case mode == postgres.ModeOlderThan && (days < 1 || days > 36500):
		return opmodel.Plan{}, fmt.Errorf("%w: mode older_than needs \"days\" between 1 and 36500, got %d", errDatabase, days)
	case mode == postgres.ModeTruncate && days != 0:
		return opmodel.Plan{}, fmt.Errorf("%w: argument \"days\" applies only to mode older_than", errDatabase)
	case team == "" || (pipeline == "" && !oneOff):
		return opmodel.Plan{}, fmt.Errorf("%w: name the team and the pipeline whose logs to purge", errDatabase)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(c.Target, "planning the purge of "+team+"/"+pipeline); err != nil {
		return opmodel.Plan{}, err
	}
	if d.rep {
		return opmodel.Plan{}, fmt.Errorf("%w: cannot purge on %s: db.%s:5432 is a read-only replica; point the DSN at the leader (the pod labelled spilo-role=master)", errDatabase, d.target, d.target)
	}
	var t *simTable
	for _, x := range d.tables {
		if (oneOff && x.Kind == "team" && x.Team == team) || (!oneOff && x.Kind == "pipeline" && x.Team == team && x.Pipeline == pipeline) {
			t = x
		}
	}
	if t == nil {
		err := fmt.Errorf("%w: %s: pipeline %q not found in team %q on %s", errDatabase, postgres.OpPurge, pipeline, team, d.target)
		if c.Approved != nil {
			return postgres.PurgeFound(opmodel.Plan{Op: postgres.OpPurge, Target: d.target, Summary: "nothing to purge"}, c, fmt.Sprintf("pipeline %q not found in team %q", pipeline, team)), nil
		}
		return opmodel.Plan{}, err
	}
	label := t.Team + "/" + t.Pipeline
	attrs := map[string]string{"scope": t.Kind, "team": t.Team, "mode": mode}
	if t.Kind == "team" {
		label = t.Team + " one-off builds"
		attrs["team_id"] = strconv.FormatInt(t.TeamID, 10)
	} else {
		attrs["pipeline"], attrs["pipeline_id"] = t.Pipeline, strconv.FormatInt(t.PipelineID, 10)
	}
	plan := opmodel.Plan{Op: postgres.OpPurge, Target: d.target}
	item := opmodel.PlanItem{Kind: postgres.PlanItemKind, ID: t.Table, Attrs: attrs}
	if mode == postgres.ModeOlderThan {
		attrs["days"] = strconv.Itoa(days)
		if t.oldRows == 0 {
			plan.Summary = fmt.Sprintf("nothing to purge: no build of %s ended more than %d days ago without being reaped", label, days)
			return postgres.PurgeFound(plan, c, ""), nil
		}
		item.Detail = fmt.Sprintf("logs of builds older than %d days: ~%s rows (table ~%s rows, %s)", days, human.Count(t.oldRows), human.Count(t.Rows), humanBytes(t.Bytes))
		plan.Summary = fmt.Sprintf("delete the logs of builds older than %d days from %s (%s): ~%s rows", days, t.Table, label, human.Count(t.oldRows))
		plan.Notes = append(plan.Notes, "DELETE does not shrink the table file: the space is reused by new logs after (auto)vacuum. If the disk is full now, mode truncate is what frees space at once.")
	} else {
		item.Detail = fmt.Sprintf("~%s rows, %s", human.Count(t.Rows), humanBytes(t.Bytes))
		plan.Summary = fmt.Sprintf("truncate %s (%s): ~%s rows, %s", t.Table, label, human.Count(t.Rows), humanBytes(t.Bytes))
		plan.Notes = append(plan.Notes, fmt.Sprintf("TRUNCATE removes the logs of every build of %s and frees %s on disk at once.", label, humanBytes(t.Bytes)))
		if t.running > 0 {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%d build(s) of %s still running: the output logged so far is lost. Consider waiting, or pausing the pipeline first.", t.running, label))
		}
	}
	plan.Items = []opmodel.PlanItem{item}
	return plan, nil
}

func (d *Sim) purgeApply(_ context.Context, c opmodel.Call, plan opmodel.Plan) (opmodel.Result, error) {
	if plan.Op != postgres.OpPurge || plan.Target != c.Target {
		return opmodel.Result{}, fmt.Errorf("%w: refusing a plan of %s on %s", errDatabase, plan.Op, plan.Target)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.check(c.Target, "purge"); err != nil {
		return opmodel.Result{}, err
	}
	var out postgres.PurgeResult
	var items []opmodel.ItemResult
	var parts []string
	for _, it := range plan.Items {
		t := d.find(it.ID)
		if t == nil || t.Team != it.Attrs["team"] || (t.Kind == "pipeline" && strconv.FormatInt(t.PipelineID, 10) != it.Attrs["pipeline_id"]) {
			items = append(items, opmodel.ItemResult{ID: it.ID, Outcome: opmodel.OutcomeFailed, Reason: "the table no longer belongs to the planned owner"})
			continue
		}
		pt := postgres.PurgedTable{Table: t.Table, Scope: t.Kind, Team: t.Team, Pipeline: t.Pipeline, PipelineID: t.PipelineID,
			TeamID: t.TeamID, Mode: it.Attrs["mode"], BytesBefore: t.Bytes}
		if pt.Mode == postgres.ModeOlderThan {
			pt.Days, _ = strconv.Atoi(it.Attrs["days"])
			pt.RowsDeleted, pt.RowsEstimated = t.oldRows, false
			t.Rows -= t.oldRows
			t.oldRows = 0
			pt.BytesAfter = t.Bytes
			parts = append(parts, fmt.Sprintf("deleted %s rows older than %d days from %s; the table stays %s on disk until vacuum reuses the space",
				human.Count(pt.RowsDeleted), pt.Days, t.Table, humanBytes(t.Bytes)))
		} else {
			pt.RowsDeleted, pt.RowsEstimated = t.Rows, true
			t.Rows, t.oldRows, t.Bytes = 0, 0, 16<<10
			pt.BytesAfter = t.Bytes
			parts = append(parts, fmt.Sprintf("truncated %s (%s/%s): freed %s, ~%s rows", t.Table, t.Team, t.Pipeline,
				humanBytes(pt.BytesBefore-pt.BytesAfter), human.Count(pt.RowsDeleted)))
		}
		pt.BytesFreed = pt.BytesBefore - pt.BytesAfter
		out.RowsDeleted += pt.RowsDeleted
		out.RowsEstimated = out.RowsEstimated || pt.RowsEstimated
		out.BytesFreed += pt.BytesFreed
		out.Tables = append(out.Tables, pt)
		items = append(items, opmodel.ItemResult{ID: t.Table, Outcome: opmodel.OutcomeSucceeded})
	}
	return opmodel.Result{Summary: strings.Join(parts, "; "), Data: out, Items: items}, nil
}

// humanBytes renders a size the way pg_size_pretty does (1024-based).
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	units := []string{"kB", "MB", "GB", "TB", "PB"}
	v := float64(n) / unit
	i := 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	if v < 10 {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " " + units[i]
	}
	return fmt.Sprintf("%.0f %s", v, units[i])
}
