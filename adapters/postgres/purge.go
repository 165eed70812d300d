package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Purge modes.
const (
	ModeTruncate  = "truncate"
	ModeOlderThan = "older_than"
)

// PlanItemKind is the PlanItem.Kind of a purge.
const PlanItemKind = "table"

// reapBatch is how many builds one older_than transaction reaps, as
// Concourse's build reaper does (batch 500, API.md §11.4).
const reapBatch = 500

// countTimeout bounds the exact row count of an older_than plan; past it the
// plan shows an estimate instead.
const countTimeout = 10 * time.Second

// purgeScope is what a purge acts on, resolved to ids. It round-trips
// through PlanItem.Attrs, which the approval binds to.
type purgeScope struct {
	kind         string // KindPipeline or KindTeam
	teamID       int64
	team         string
	pipelineID   int64
	pipeline     string
	instanceVars string
	paused       bool // not in attrs: informational
	mode         string
	days         int
}

func (s purgeScope) ownerID() int64 {
	if s.kind == KindTeam {
		return s.teamID
	}
	return s.pipelineID
}

func (s purgeScope) table() string { return eventsTable(s.kind, s.ownerID()) }

func (s purgeScope) label() string {
	if s.kind == KindTeam {
		return s.team + " one-off builds"
	}
	return owner(s.team, s.pipeline, s.instanceVars)
}

// buildsFilter selects the builds whose events live in the scope's table
// (API.md §11.1: check builds go to check_build_events, pipeline builds to
// the pipeline's table, the rest to the team's). $1 is the owner id. Both
// fragments are constants; nothing from the user is spliced in.
func (s purgeScope) buildsFilter() string {
	if s.kind == KindTeam {
		return `b.team_id = $1 AND b.pipeline_id IS NULL AND b.resource_id IS NULL AND b.resource_type_id IS NULL`
	}
	return `b.pipeline_id = $1 AND b.resource_id IS NULL AND b.resource_type_id IS NULL`
}

func (s purgeScope) attrs() map[string]string {
	a := map[string]string{
		"scope": s.kind,
		"team":  s.team,
		"mode":  s.mode,
	}
	if s.kind == KindTeam {
		a["team_id"] = strconv.FormatInt(s.teamID, 10)
	} else {
		a["pipeline"] = s.pipeline
		a["pipeline_id"] = strconv.FormatInt(s.pipelineID, 10)
		if s.instanceVars != "" {
			a["instance_vars"] = s.instanceVars
		}
	}
	if s.mode == ModeOlderThan {
		a["days"] = strconv.Itoa(s.days)
	}
	return a
}

// purgeRequest is the parsed arguments of a purge.
type purgeRequest struct {
	team, pipeline, instanceVars string
	oneOff                       bool
	mode                         string
	days                         int
}

func (r purgeRequest) describe() string {
	if r.oneOff {
		return r.team + " one-off builds"
	}
	return owner(r.team, r.pipeline, r.instanceVars)
}

func parsePurgeArgs(a opmodel.Args) (purgeRequest, error) {
	r := purgeRequest{
		team:         a.String("team"),
		pipeline:     a.String("pipeline"),
		instanceVars: strings.TrimSpace(a.String("instance_vars")),
		oneOff:       a.Bool("one_off"),
		mode:         strings.TrimSpace(a.String("mode")),
	}
	for _, f := range []struct{ name, v string }{{"team", r.team}, {"pipeline", r.pipeline}} {
		if !utf8.ValidString(f.v) || strings.ContainsRune(f.v, 0) || len(f.v) > 1024 {
			return r, newError(ErrRefused, nil, "argument %q is not a valid name", f.name)
		}
	}
	if r.team == "" {
		return r, newError(ErrRefused, nil, "argument \"team\" is required")
	}
	switch {
	case r.oneOff && r.pipeline != "":
		return r, newError(ErrRefused, nil, "give either \"pipeline\" or \"one_off: true\", not both")
	case !r.oneOff && r.pipeline == "":
		return r, newError(ErrRefused, nil,
			"argument \"pipeline\" is required (or \"one_off: true\" to purge the team's one-off builds)")
	case r.oneOff && r.instanceVars != "":
		return r, newError(ErrRefused, nil, "\"instance_vars\" applies only to a pipeline")
	}
	if r.instanceVars != "" {
		var obj map[string]any
		if err := json.Unmarshal([]byte(r.instanceVars), &obj); err != nil || obj == nil {
			return r, newError(ErrRefused, nil, "argument \"instance_vars\" must be a JSON object, e.g. {\"branch\": \"main\"}")
		}
	}
	if r.mode == "" {
		r.mode = ModeTruncate
	}
	days, err := a.Int("days", 0)
	if err != nil {
		return r, newError(ErrRefused, err, "%s", err.Error())
	}
	switch r.mode {
	case ModeTruncate:
		if days != 0 {
			return r, newError(ErrRefused, nil, "argument \"days\" applies only to mode %s", ModeOlderThan)
		}
	case ModeOlderThan:
		if days < 1 || days > 36500 {
			return r, newError(ErrRefused, nil, "mode %s needs \"days\" between 1 and 36500, got %d", ModeOlderThan, days)
		}
		r.days = days
	default:
		return r, newError(ErrRefused, nil, "argument \"mode\": %q is not %s or %s", r.mode, ModeTruncate, ModeOlderThan)
	}
	return r, nil
}

// resolveScope maps names to ids. Names only ever travel as query
// parameters.
func resolveScope(ctx context.Context, tx pgx.Tx, r purgeRequest, target string) (purgeScope, error) {
	s := purgeScope{kind: KindPipeline, mode: r.mode, days: r.days}
	if r.oneOff {
		s.kind = KindTeam
	}
	// Team names are unique case-insensitively (index on lower(name)).
	err := tx.QueryRow(ctx, `SELECT id, name FROM teams WHERE lower(name) = lower($1) ORDER BY name = $1 DESC LIMIT 1`,
		r.team).Scan(&s.teamID, &s.team)
	if errors.Is(err, pgx.ErrNoRows) {
		names, lerr := listNames(ctx, tx, `SELECT name FROM teams ORDER BY name LIMIT 11`)
		if lerr != nil {
			return s, lerr
		}
		return s, newError(ErrNotFound, nil, "team %q not found on %s%s", r.team, target, nameHint("teams", names))
	}
	if err != nil {
		return s, err
	}
	if s.kind == KindTeam {
		return s, nil
	}
	var iv *string
	if r.instanceVars != "" {
		iv = &r.instanceVars
	}
	err = tx.QueryRow(ctx, `
		SELECT id, name, coalesce(instance_vars::text, ''), coalesce(paused, false)
		  FROM pipelines
		 WHERE team_id = $1 AND name = $2 AND instance_vars IS NOT DISTINCT FROM $3::text::jsonb`,
		s.teamID, r.pipeline, iv).Scan(&s.pipelineID, &s.pipeline, &s.instanceVars, &s.paused)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return s, err
	}
	instances, err := listNames(ctx, tx,
		`SELECT instance_vars::text FROM pipelines WHERE team_id = $1 AND name = $2 AND instance_vars IS NOT NULL ORDER BY id LIMIT 11`,
		s.teamID, r.pipeline)
	if err != nil {
		return s, err
	}
	if len(instances) > 0 {
		return s, newError(ErrNotFound, nil, "pipeline %s/%s has no instance with instance_vars %s; pass instance_vars as one of: %s",
			s.team, r.pipeline, orNone(r.instanceVars), strings.Join(instances, ", "))
	}
	names, err := listNames(ctx, tx, `SELECT DISTINCT name FROM pipelines WHERE team_id = $1 ORDER BY name LIMIT 11`, s.teamID)
	if err != nil {
		return s, err
	}
	return s, newError(ErrNotFound, nil, "team %s has no pipeline %q on %s%s", s.team, r.pipeline, target, nameHint("pipelines", names))
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func listNames(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// nameHint is `; pipelines: "a", "b", …` for a not-found message.
func nameHint(what string, names []string) string {
	if len(names) == 0 {
		return "; there are no " + what
	}
	more := ""
	if len(names) > 10 {
		names, more = names[:10], ", …"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "; " + what + ": " + strings.Join(q, ", ") + more
}

// tableStats are the facts a plan shows about the scope's table and builds.
type tableStats struct {
	bytes, estRows   int64
	canTruncate      bool
	canDelete        bool
	canUpdateBuilds  bool
	running          int64 // builds not completed
	unreaped         int64 // completed builds not reaped
	matched          int64 // older_than: builds to reap
	undrained        int64 // older_than: matched builds not drained to syslog
	rowsToDelete     int64 // older_than: rows of the matched builds
	rowsAreEstimated bool
	cutoff           time.Time
}

// readStats reads the plan's facts; found is false when the table does not
// exist. stmt is the statement timeout to restore after the row count.
func readStats(ctx context.Context, tx pgx.Tx, s purgeScope, ident string, stmt time.Duration) (st tableStats, found bool, err error) {
	err = tx.QueryRow(ctx, `
		SELECT pg_total_relation_size(c.oid),
		       `+estRowsSQL+`,
		       has_table_privilege(c.oid, 'TRUNCATE'), has_table_privilege(c.oid, 'DELETE'),
		       has_table_privilege('builds', 'UPDATE')
		  FROM pg_class c LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
		 WHERE c.oid = to_regclass($1)`, ident,
	).Scan(&st.bytes, &st.estRows, &st.canTruncate, &st.canDelete, &st.canUpdateBuilds)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, err
	}
	days := s.days
	if s.mode != ModeOlderThan {
		days = 0
	}
	if err := tx.QueryRow(ctx, `SELECT now() - make_interval(days => $1)`, days).Scan(&st.cutoff); err != nil {
		return st, true, err
	}
	err = tx.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE NOT b.completed),
		       count(*) FILTER (WHERE b.completed AND b.reap_time IS NULL),
		       count(*) FILTER (WHERE b.completed AND b.reap_time IS NULL AND coalesce(b.end_time, b.start_time, b.create_time) < $2),
		       count(*) FILTER (WHERE b.completed AND b.reap_time IS NULL AND coalesce(b.end_time, b.start_time, b.create_time) < $2 AND NOT b.drained)
		  FROM builds b WHERE `+s.buildsFilter(), s.ownerID(), st.cutoff,
	).Scan(&st.running, &st.unreaped, &st.matched, &st.undrained)
	if err != nil || s.mode != ModeOlderThan || st.matched == 0 {
		return st, true, err
	}
	st.rowsToDelete, st.rowsAreEstimated, err = countMatchedRows(ctx, tx, s, ident, st, stmt)
	return st, true, err
}

// countMatchedRows counts the log rows of the builds an older_than purge
// would reap, inside a savepoint with a short statement timeout; on a table
// too large to count in time it falls back to a proportional estimate.
func countMatchedRows(ctx context.Context, tx pgx.Tx, s purgeScope, ident string, st tableStats, stmt time.Duration) (int64, bool, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, false, err
	}
	defer func() { _ = sp.Rollback(context.Background()) }()
	if _, err := sp.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, ms(countTimeout)); err != nil {
		return 0, false, err
	}
	var n int64
	err = sp.QueryRow(ctx, `
		SELECT count(*) FROM `+ident+` e
		 WHERE e.build_id IN (SELECT b.id FROM builds b
		                       WHERE `+s.buildsFilter()+`
		                         AND b.completed AND b.reap_time IS NULL
		                         AND coalesce(b.end_time, b.start_time, b.create_time) < $2)`,
		s.ownerID(), st.cutoff).Scan(&n)
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == codeQueryCanceled && ctx.Err() == nil {
		if st.unreaped+st.running == 0 {
			return 0, true, nil
		}
		return st.estRows * st.matched / (st.unreaped + st.running), true, nil
	}
	if err != nil {
		return 0, false, err
	}
	// Releasing the savepoint would keep the short timeout: restore it first.
	if _, err := sp.Exec(ctx, `SELECT set_config('statement_timeout', $1, true)`, ms(stmt)); err != nil {
		return 0, false, err
	}
	if err := sp.Commit(ctx); err != nil {
		return 0, false, err
	}
	return n, false, nil
}
