package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// PurgeResult is the Data of postgres.purge_build_logs.
type PurgeResult struct {
	RowsDeleted int64 `json:"rows_deleted"`
	// RowsEstimated is true when RowsDeleted is PostgreSQL's estimate
	// (TRUNCATE does not count).
	RowsEstimated bool          `json:"rows_estimated"`
	BytesFreed    int64         `json:"bytes_freed"`
	BuildsReaped  int64         `json:"builds_reaped"`
	Tables        []PurgedTable `json:"tables"`
}

// PurgedTable is the outcome for one table.
type PurgedTable struct {
	Table         string `json:"table"`
	Scope         string `json:"scope"` // pipeline or team
	Team          string `json:"team"`
	Pipeline      string `json:"pipeline,omitempty"`
	PipelineID    int64  `json:"pipeline_id,omitempty"`
	TeamID        int64  `json:"team_id,omitempty"`
	Mode          string `json:"mode"`
	Days          int    `json:"days,omitempty"`
	RowsDeleted   int64  `json:"rows_deleted"`
	RowsEstimated bool   `json:"rows_estimated"`
	BuildsReaped  int64  `json:"builds_reaped"`
	BytesBefore   int64  `json:"bytes_before"`
	BytesAfter    int64  `json:"bytes_after"`
	BytesFreed    int64  `json:"bytes_freed"`
	Batches       int    `json:"batches,omitempty"`
}

// purgeApply purges exactly the tables of the approved plan. Every item is
// checked again before anything runs (defence in depth: the plan could come
// from storage), and each table's owner is checked against the plan's ids
// and names inside the transaction that purges it.
func (p *Provider) purgeApply(ctx context.Context, c opmodel.Call, plan opmodel.Plan) (opmodel.Result, error) {
	if plan.Op != OpPurge {
		return opmodel.Result{}, newError(ErrRefused, nil, "refusing a plan of %q: this is %s", plan.Op, OpPurge)
	}
	if plan.Target != c.Target {
		return opmodel.Result{}, newError(ErrRefused, nil, "refusing a plan made for target %q on target %q", plan.Target, c.Target)
	}
	scopes := make([]purgeScope, 0, len(plan.Items))
	idents := make([]string, 0, len(plan.Items))
	for _, it := range plan.Items {
		s, ident, err := scopeFromItem(it)
		if err != nil {
			return opmodel.Result{}, err
		}
		scopes, idents = append(scopes, s), append(idents, ident)
	}
	if len(scopes) == 0 {
		return opmodel.Result{Summary: "nothing to purge"}, nil
	}
	d, err := p.db(c.Target)
	if err != nil {
		return opmodel.Result{}, err
	}
	var out PurgeResult
	var items []opmodel.ItemResult
	for i, s := range scopes {
		var t PurgedTable
		var err error
		if s.mode == ModeTruncate {
			t, err = d.truncate(ctx, s, idents[i])
		} else {
			t, err = d.deleteOlderThan(ctx, s, idents[i], c.Report)
		}
		if err != nil {
			err = d.explain(ctx, err, "purge of "+s.table(), idents[i])
			if t.Batches > 0 {
				err = withProgress(err, fmt.Sprintf("%s committed before that (%s reaped, %s rows deleted); run the purge again to go on",
					plural(int64(t.Batches), "batch was", "batches were"), plural(t.BuildsReaped, "build", "builds"), human.Count(t.RowsDeleted)))
			}
			items = append(items, opmodel.ItemResult{ID: s.table(), Outcome: opmodel.OutcomeFailed, Reason: err.Error()})
			out.add(t)
			return opmodel.Result{Summary: "purge failed: " + err.Error(), Items: items, Data: out, Warn: true}, err
		}
		out.add(t)
		outcome := opmodel.ItemResult{ID: t.Table, Outcome: opmodel.OutcomeSucceeded}
		if s.mode == ModeOlderThan && t.BuildsReaped == 0 {
			outcome.Outcome = opmodel.OutcomeAlreadyDone
			outcome.Reason = fmt.Sprintf("no build of %s older than %s left to reap", s.label(), plural(int64(s.days), "day", "days"))
		}
		items = append(items, outcome)
	}
	return opmodel.Result{
		Summary: purgeSummary(scopes, out),
		Detail:  retentionAdvice(),
		Data:    out,
		Items:   items,
	}, nil
}

func (r *PurgeResult) add(t PurgedTable) {
	if t.Table == "" {
		return
	}
	r.RowsDeleted += t.RowsDeleted
	r.RowsEstimated = r.RowsEstimated || t.RowsEstimated
	r.BytesFreed += t.BytesFreed
	r.BuildsReaped += t.BuildsReaped
	r.Tables = append(r.Tables, t)
}

// scopeFromItem rebuilds a purge scope from a plan item and checks it: the
// table name must have the purgeable shape and be exactly the name built
// from the item's own id.
func scopeFromItem(it opmodel.PlanItem) (purgeScope, string, error) {
	var s purgeScope
	if it.Kind != PlanItemKind {
		return s, "", newError(ErrRefused, nil, "refusing plan item %q of kind %q: a purge touches tables only", it.ID, it.Kind)
	}
	ident, err := purgeIdent(it.ID)
	if err != nil {
		return s, "", err
	}
	kind, nameID, _ := tableKind(it.ID)
	a := it.Attrs
	s = purgeScope{kind: a["scope"], team: a["team"], pipeline: a["pipeline"], instanceVars: a["instance_vars"], mode: a["mode"]}
	if s.kind != kind {
		return s, "", newError(ErrRefused, nil, "refusing plan item %s: its scope is %q", it.ID, s.kind)
	}
	idAttr := "pipeline_id"
	if kind == KindTeam {
		idAttr = "team_id"
	}
	id, err := strconv.ParseInt(a[idAttr], 10, 64)
	if err != nil || id <= 0 {
		return s, "", newError(ErrRefused, nil, "refusing plan item %s: %s %q is not a positive id", it.ID, idAttr, a[idAttr])
	}
	if kind == KindTeam {
		s.teamID = id
	} else {
		s.pipelineID = id
	}
	if s.table() != it.ID || id != nameID {
		return s, "", newError(ErrRefused, nil, "refusing plan item %s: its %s is %d, whose table is %s", it.ID, idAttr, id, s.table())
	}
	switch s.mode {
	case ModeTruncate:
	case ModeOlderThan:
		s.days, err = strconv.Atoi(a["days"])
		if err != nil || s.days < 1 || s.days > 36500 {
			return s, "", newError(ErrRefused, nil, "refusing plan item %s: days %q is not between 1 and 36500", it.ID, a["days"])
		}
	default:
		return s, "", newError(ErrRefused, nil, "refusing plan item %s: unknown mode %q", it.ID, s.mode)
	}
	if s.team == "" || (kind == KindPipeline && s.pipeline == "") {
		return s, "", newError(ErrRefused, nil, "refusing plan item %s: it does not name its team and pipeline", it.ID)
	}
	return s, ident, nil
}

// verifyOwner checks, inside the purging transaction, that the table's
// owner still exists under the names the approval showed.
func verifyOwner(ctx context.Context, tx pgx.Tx, s purgeScope) error {
	var team, pipeline, iv string
	var err error
	if s.kind == KindTeam {
		err = tx.QueryRow(ctx, `SELECT name FROM teams WHERE id = $1`, s.teamID).Scan(&team)
	} else {
		err = tx.QueryRow(ctx, `
			SELECT t.name, p.name, coalesce(p.instance_vars::text, '')
			  FROM pipelines p JOIN teams t ON t.id = p.team_id WHERE p.id = $1`, s.pipelineID).Scan(&team, &pipeline, &iv)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return newError(ErrStalePlan, nil, "%s (id %d) no longer exists: Concourse drops its logs with it, nothing to purge",
			s.label(), s.ownerID())
	}
	if err != nil {
		return err
	}
	if team != s.team || pipeline != s.pipeline || iv != s.instanceVars {
		now := purgeScope{kind: s.kind, team: team, pipeline: pipeline, instanceVars: iv}
		return newError(ErrStalePlan, nil, "%s %d is now %s, not %s as approved; plan the purge again",
			s.kind, s.ownerID(), now.label(), s.label())
	}
	return nil
}

// truncate empties the table and marks the scope's completed builds reaped,
// in one transaction that first takes the table's lock (bounded by
// lock_timeout).
func (d *targetDB) truncate(ctx context.Context, s purgeScope, ident string) (PurgedTable, error) {
	t := s.result()
	tx, err := d.begin(ctx, pgx.ReadWrite)
	if err != nil {
		return t, err
	}
	defer rollback(tx)
	if err := verifyOwner(ctx, tx, s); err != nil {
		return t, err
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE ONLY `+ident+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		return t, err
	}
	if err := tx.QueryRow(ctx, `
		SELECT pg_total_relation_size(c.oid),
		       `+estRowsSQL+`
		  FROM pg_class c LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
		 WHERE c.oid = to_regclass($1)`, ident).Scan(&t.BytesBefore, &t.RowsDeleted); err != nil {
		return t, err
	}
	if _, err := tx.Exec(ctx, `TRUNCATE ONLY `+ident); err != nil {
		return t, err
	}
	tag, err := tx.Exec(ctx, `UPDATE builds b SET reap_time = now()
		 WHERE `+s.buildsFilter()+` AND b.completed AND b.reap_time IS NULL`, s.ownerID())
	if err != nil {
		return t, err
	}
	t.BuildsReaped = tag.RowsAffected()
	if err := tx.QueryRow(ctx, `SELECT pg_total_relation_size(to_regclass($1))`, ident).Scan(&t.BytesAfter); err != nil {
		return t, err
	}
	if err := d.commit(ctx, tx); err != nil {
		return t, err
	}
	t.RowsEstimated = true
	t.BytesFreed = max(t.BytesBefore-t.BytesAfter, 0)
	return t, nil
}

// deleteOlderThan reaps the builds of the scope that ended before now - days,
// the way Concourse's reaper does (DeleteBuildEventsByBuildIDs): per batch of
// build ids, DELETE their events and set builds.reap_time, in one
// transaction. Committed batches stay committed if a later one fails.
// report receives a progress line after each batch ("deleting the logs of
// main/app older than 14 days: 12,000 builds reaped, 3,400,000 rows · 52,000
// rows/s").
func (d *targetDB) deleteOlderThan(ctx context.Context, s purgeScope, ident string, report func(string)) (PurgedTable, error) {
	t := s.result()
	cutoff, before, err := d.cutoffAndSize(ctx, s.days, ident)
	if err != nil {
		return t, err
	}
	t.BytesBefore = before
	var last int64
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		n, rows, lastID, err := d.reapBatch(ctx, s, ident, cutoff, last)
		if err != nil {
			return t, err
		}
		if n == 0 {
			break
		}
		t.Batches++
		t.BuildsReaped += n
		t.RowsDeleted += rows
		last = lastID
		if report != nil {
			line := fmt.Sprintf("deleting the logs of %s older than %s: %s reaped, %s rows",
				s.label(), plural(int64(s.days), "day", "days"), plural(t.BuildsReaped, "build", "builds"), human.Count(t.RowsDeleted))
			if secs := time.Since(start).Seconds(); secs >= 0.5 {
				line += fmt.Sprintf(" · %s rows/s", human.Count(int64(float64(t.RowsDeleted)/secs)))
			}
			report(line)
		}
	}
	_, after, err := d.cutoffAndSize(ctx, s.days, ident)
	if err != nil {
		return t, err
	}
	t.BytesAfter = after
	t.BytesFreed = max(t.BytesBefore-t.BytesAfter, 0)
	return t, nil
}

// cutoffAndSize reads now() - days and the table's size, under the
// transaction timeouts (the size needs a lock a TRUNCATE elsewhere would
// hold).
func (d *targetDB) cutoffAndSize(ctx context.Context, days int, ident string) (time.Time, int64, error) {
	tx, err := d.begin(ctx, pgx.ReadOnly)
	if err != nil {
		return time.Time{}, 0, err
	}
	defer rollback(tx)
	var cutoff time.Time
	var size int64
	err = tx.QueryRow(ctx, `SELECT now() - make_interval(days => $1), pg_total_relation_size(to_regclass($2))`,
		days, ident).Scan(&cutoff, &size)
	return cutoff, size, err
}

// reapBatch reaps up to reapBatch builds with ids above after. It returns how
// many builds were marked reaped, how many event rows went and the highest
// id seen (0 builds: nothing left).
func (d *targetDB) reapBatch(ctx context.Context, s purgeScope, ident string, cutoff time.Time, after int64) (reaped, rows, lastID int64, err error) {
	tx, err := d.begin(ctx, pgx.ReadWrite)
	if err != nil {
		return 0, 0, 0, err
	}
	defer rollback(tx)
	if err := verifyOwner(ctx, tx, s); err != nil {
		return 0, 0, 0, err
	}
	r, err := tx.Query(ctx, `
		SELECT b.id FROM builds b
		 WHERE `+s.buildsFilter()+`
		   AND b.completed AND b.reap_time IS NULL
		   AND coalesce(b.end_time, b.start_time, b.create_time) < $2
		   AND b.id > $3
		 ORDER BY b.id LIMIT $4`, s.ownerID(), cutoff, after, reapBatch)
	if err != nil {
		return 0, 0, 0, err
	}
	ids, err := pgx.CollectRows(r, pgx.RowTo[int64])
	if err != nil || len(ids) == 0 {
		return 0, 0, 0, err
	}
	del, err := tx.Exec(ctx, `DELETE FROM `+ident+` WHERE build_id = ANY($1::bigint[])`, ids)
	if err != nil {
		return 0, 0, 0, err
	}
	upd, err := tx.Exec(ctx, `UPDATE builds SET reap_time = now() WHERE id = ANY($1::bigint[]) AND reap_time IS NULL`, ids)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := d.commit(ctx, tx); err != nil {
		return 0, 0, 0, err
	}
	return upd.RowsAffected(), del.RowsAffected(), ids[len(ids)-1], nil
}

func (s purgeScope) result() PurgedTable {
	return PurgedTable{
		Table: s.table(), Scope: s.kind, Team: s.team, Pipeline: s.pipeline,
		PipelineID: s.pipelineID, TeamID: s.teamID, Mode: s.mode, Days: s.days,
	}
}

// explain classifies a purge failure and, for a lock or statement timeout,
// names the sessions holding a lock on the table.
func (d *targetDB) explain(ctx context.Context, err error, action, ident string) error {
	err = classify(ctx, err, action, d.where)
	var e *Error
	timedOut := errors.Is(err, ErrLockTimeout) || errors.Is(err, ErrStatementTimeout)
	if !timedOut || !errors.As(err, &e) || ctx.Err() != nil {
		return err
	}
	if holders := d.lockHolders(ctx, ident); holders != "" {
		return &Error{Kind: e.Kind, Err: e.Err, Msg: e.Msg + "; lock held by " + holders}
	}
	return err
}

// lockHolders describes, best effort, the sessions holding a lock on the
// table ("pid 4242 (concourse, idle in transaction for 3m12s)").
func (d *targetDB) lockHolders(ctx context.Context, ident string) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	rows, err := d.pool.Query(ctx, `
		SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''),
		       coalesce(extract(epoch FROM now() - coalesce(a.xact_start, a.query_start))::bigint, 0)
		  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		 WHERE l.relation = to_regclass($1) AND l.granted AND a.pid <> pg_backend_pid()
		 ORDER BY a.xact_start NULLS LAST LIMIT 3`, ident)
	if err != nil {
		return ""
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var pid int32
		var app, state string
		var secs int64
		if rows.Scan(&pid, &app, &state, &secs) != nil {
			return ""
		}
		if app == "" {
			app = "no application_name"
		}
		out = append(out, fmt.Sprintf("pid %d (%s, %s for %s)", pid, app, orNone(state), time.Duration(secs)*time.Second))
	}
	return strings.Join(out, ", ")
}

// withProgress appends what already happened to a failure.
func withProgress(err error, progress string) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Kind: e.Kind, Err: e.Err, Msg: e.Msg + "; " + progress}
	}
	return fmt.Errorf("%w; %s", err, progress)
}

func purgeSummary(scopes []purgeScope, r PurgeResult) string {
	parts := make([]string, 0, len(r.Tables))
	for i, t := range r.Tables {
		s := scopes[i]
		switch t.Mode {
		case ModeTruncate:
			parts = append(parts, fmt.Sprintf("truncated %s (%s): freed %s, ~%s rows; %s marked reaped",
				t.Table, s.label(), humanBytes(t.BytesFreed), human.Count(t.RowsDeleted), plural(t.BuildsReaped, "build", "builds")))
		default:
			parts = append(parts, fmt.Sprintf("deleted %s rows of %s older than %s from %s (%s); the table stays %s on disk until vacuum reuses the space",
				human.Count(t.RowsDeleted), plural(t.BuildsReaped, "build", "builds"), plural(int64(t.Days), "day", "days"),
				t.Table, s.label(), humanBytes(t.BytesAfter)))
		}
	}
	return strings.Join(parts, "; ")
}

// retentionAdvice is what to set so the table does not fill up again
// (API.md §11.4).
func retentionAdvice() string {
	return "To keep build logs from filling the database again, let Concourse reap them instead of purging by hand:\n" +
		"• per job, in the pipeline: build_log_retention: {builds: 50, days: 14, minimum_succeeded_builds: 1}\n" +
		"• on concourse-web, defaults for jobs without a setting: CONCOURSE_DEFAULT_BUILD_LOGS_TO_RETAIN and " +
		"CONCOURSE_DEFAULT_DAYS_TO_RETAIN_BUILD_LOGS (--default-build-logs-to-retain, --default-days-to-retain-build-logs; 0 keeps all)\n" +
		"• on concourse-web, caps over every job: CONCOURSE_MAX_BUILD_LOGS_TO_RETAIN and CONCOURSE_MAX_DAYS_TO_RETAIN_BUILD_LOGS\n" +
		"Retention does nothing for paused pipelines or paused jobs, and never reaps one-off builds (team_build_events_<id>, fly execute)."
}
