package postgres

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/jackc/pgx/v5"
)

// Table names of Concourse's build logs (API.md §11.1).
const (
	parentEventsTable = "build_events"
	checkEventsTable  = "check_build_events"
)

// Kinds of build-log tables, as reported in results.
const (
	KindPipeline = "pipeline" // pipeline_build_events_<pipeline id>
	KindTeam     = "team"     // team_build_events_<team id>: one-off builds
	KindCheck    = "check"    // check_build_events
)

// estRowsSQL estimates a table's rows the way the planner does: the tuple
// density of the last ANALYZE times the pages the table has now (so a
// truncated table shows 0 at once), or, for a table never analysed, the
// statistics collector's live tuples. It expects pg_class as c and
// pg_stat_user_tables as st.
const estRowsSQL = `CASE WHEN pg_relation_size(c.oid) = 0 THEN 0
	WHEN c.reltuples < 0 OR c.relpages = 0 THEN coalesce(st.n_live_tup, 0)
	ELSE (c.reltuples / c.relpages * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))::bigint END`

// purgeableRE is the only shape of table a purge may touch.
var purgeableRE = regexp.MustCompile(`^(pipeline|team)_build_events_[0-9]+$`)

// eventsTable is the build-log table of a pipeline or a team, built from the
// numeric id alone.
func eventsTable(kind string, id int64) string {
	if kind == KindTeam {
		return "team_build_events_" + strconv.FormatInt(id, 10)
	}
	return "pipeline_build_events_" + strconv.FormatInt(id, 10)
}

// purgeIdent checks that name is a per-pipeline or per-team build-log table
// and returns it quoted for SQL. It refuses the parent build_events (a
// TRUNCATE there empties every child table), check_build_events and anything
// else.
func purgeIdent(name string) (string, error) {
	if name == parentEventsTable {
		return "", newError(ErrRefused, nil,
			"refusing to purge %s: it is the parent of every build-log table, and purging it would empty the logs of all pipelines and teams", name)
	}
	if !purgeableRE.MatchString(name) {
		return "", newError(ErrRefused, nil,
			"refusing to purge %q: only tables named pipeline_build_events_<id> or team_build_events_<id> can be purged", name)
	}
	return pgx.Identifier{name}.Sanitize(), nil
}

// tableKind tells the kind of a build-log table name and the id it carries.
func tableKind(name string) (kind string, id int64, ok bool) {
	if name == checkEventsTable {
		return KindCheck, 0, true
	}
	if !purgeableRE.MatchString(name) {
		return "", 0, false
	}
	kind = KindPipeline
	if strings.HasPrefix(name, "team_") {
		kind = KindTeam
	}
	id, err := strconv.ParseInt(name[strings.LastIndexByte(name, '_')+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return kind, id, true
}

// humanBytes renders a size the way pg_size_pretty does (1024-based).
func humanBytes(n int64) string {
	const unit = 1024
	if n < 0 {
		return "-" + humanBytes(-n)
	}
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
		s := strconv.FormatFloat(v, 'f', 1, 64)
		return strings.TrimSuffix(s, ".0") + " " + units[i]
	}
	return fmt.Sprintf("%.0f %s", v, units[i])
}

// plural returns "1 build" or "3 builds".
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return human.Count(n) + " " + many
}

// owner labels a pipeline for humans: "main/demo", with instance vars when
// the pipeline is instanced ("main/demo/{\"branch\": \"x\"}").
func owner(team, pipeline, instanceVars string) string {
	s := team + "/" + pipeline
	if instanceVars != "" {
		s += "/" + instanceVars
	}
	return s
}
