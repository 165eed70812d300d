package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// TableSizes is the Data of postgres.db_table_sizes.
type TableSizes struct {
	DatabaseBytes int64 `json:"database_bytes"`
	// BuildEventsBytes and TableCount cover every build-log table, not only
	// the top N listed.
	BuildEventsBytes int64 `json:"build_events_bytes"`
	TableCount       int   `json:"table_count"`
	// Tables are the largest build-log tables, largest first.
	Tables []TableSize `json:"tables"`
}

// TableSize is one build-log table.
type TableSize struct {
	Table string `json:"table"`
	Kind  string `json:"kind"` // pipeline, team or check
	// Team and Pipeline are names ("" when not applicable, or when the owner
	// was deleted and Concourse has not dropped the table yet).
	Team         string `json:"team"`
	Pipeline     string `json:"pipeline"`
	PipelineID   int64  `json:"pipeline_id"`
	TeamID       int64  `json:"team_id"`
	InstanceVars string `json:"instance_vars,omitempty"`
	// Bytes is pg_total_relation_size: heap, TOAST and indexes.
	Bytes int64 `json:"bytes"`
	// Rows is PostgreSQL's estimate: the row density of the last ANALYZE
	// times the table's current pages, or the statistics collector's live
	// tuples for a table never analysed.
	Rows int64 `json:"rows"`
	// Orphan is true when the owning pipeline or team no longer exists.
	Orphan bool `json:"orphan,omitempty"`
}

// Label names the owner of the table for humans.
func (t TableSize) Label() string {
	switch {
	case t.Kind == KindCheck:
		return "resource checks"
	case t.Orphan && t.Kind == KindPipeline:
		return fmt.Sprintf("deleted pipeline %d", t.PipelineID)
	case t.Orphan:
		return fmt.Sprintf("deleted team %d", t.TeamID)
	case t.Kind == KindTeam:
		return t.Team + " (one-off builds)"
	}
	return owner(t.Team, t.Pipeline, t.InstanceVars)
}

// sizesQuery lists every build-log table with its owner. The id is cut from
// the table name and cast only when it fits a bigint.
const sizesQuery = `
WITH ev AS (
  SELECT c.oid, c.relname::text AS tbl,
         pg_total_relation_size(c.oid) AS bytes,
         ` + estRowsSQL + ` AS est_rows,
         CASE WHEN c.relname <> 'check_build_events' AND length(substring(c.relname FROM '[0-9]+$')) <= 18
              THEN substring(c.relname FROM '[0-9]+$')::bigint END AS owner_id,
         CASE WHEN c.relname = 'check_build_events' THEN 'check'
              WHEN c.relname LIKE 'pipeline\_%' THEN 'pipeline'
              ELSE 'team' END AS kind
    FROM pg_class c
    LEFT JOIN pg_stat_user_tables st ON st.relid = c.oid
   WHERE c.relkind = 'r' AND pg_table_is_visible(c.oid)
     AND (c.relname ~ '^(pipeline|team)_build_events_[0-9]+$' OR c.relname = 'check_build_events')
)
SELECT ev.tbl, ev.kind, ev.bytes, ev.est_rows,
       coalesce(p.id, 0)::bigint, coalesce(p.name, ''), coalesce(p.instance_vars::text, ''),
       coalesce(t.id, pt.id, 0)::bigint, coalesce(t.name, pt.name, ''),
       (ev.kind = 'pipeline' AND p.id IS NULL) OR (ev.kind = 'team' AND t.id IS NULL),
       coalesce(ev.owner_id, 0)
  FROM ev
  LEFT JOIN pipelines p ON ev.kind = 'pipeline' AND p.id = ev.owner_id
  LEFT JOIN teams pt ON pt.id = p.team_id
  LEFT JOIN teams t ON ev.kind = 'team' AND t.id = ev.owner_id
 ORDER BY ev.bytes DESC, ev.tbl`

func (p *Provider) tableSizes(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
	top, err := c.Args.Int("top", 10)
	if err != nil {
		return opmodel.Result{}, err
	}
	if top < 1 {
		return opmodel.Result{}, newError(ErrRefused, nil, "argument \"top\": %d is not a positive number", top)
	}
	kind := strings.TrimSpace(c.Args.String("kind"))
	switch kind {
	case "", KindPipeline, KindTeam, KindCheck:
	default:
		return opmodel.Result{}, newError(ErrRefused, nil, "argument \"kind\": %q is not pipeline, team or check", kind)
	}
	d, err := p.db(c.Target)
	if err != nil {
		return opmodel.Result{}, err
	}
	sizes, err := d.tableSizes(ctx)
	if err != nil {
		return opmodel.Result{}, classify(ctx, err, "reading table sizes", d.where)
	}
	shown := make([]TableSize, 0, top)
	for _, t := range sizes.Tables {
		if kind != "" && t.Kind != kind {
			continue
		}
		if len(shown) == top {
			break
		}
		shown = append(shown, t)
	}
	sizes.Tables = shown
	return sizesResult(sizes), nil
}

// tableSizes reads every build-log table, largest first.
func (d *targetDB) tableSizes(ctx context.Context) (TableSizes, error) {
	tx, err := d.begin(ctx, pgx.ReadOnly)
	if err != nil {
		return TableSizes{}, err
	}
	defer rollback(tx)
	var out TableSizes
	if err := tx.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&out.DatabaseBytes); err != nil {
		return TableSizes{}, err
	}
	rows, err := tx.Query(ctx, sizesQuery)
	if err != nil {
		return TableSizes{}, err
	}
	defer rows.Close()
	out.Tables = []TableSize{}
	for rows.Next() {
		var t TableSize
		var ownerID int64
		if err := rows.Scan(&t.Table, &t.Kind, &t.Bytes, &t.Rows, &t.PipelineID, &t.Pipeline, &t.InstanceVars,
			&t.TeamID, &t.Team, &t.Orphan, &ownerID); err != nil {
			return TableSizes{}, err
		}
		if t.Orphan {
			// Keep the id from the table name so humans can tell which.
			if t.Kind == KindPipeline {
				t.PipelineID = ownerID
			} else {
				t.TeamID = ownerID
			}
		}
		out.BuildEventsBytes += t.Bytes
		out.TableCount++
		out.Tables = append(out.Tables, t)
	}
	return out, rows.Err()
}

func sizesResult(s TableSizes) opmodel.Result {
	summary := fmt.Sprintf("database %s; build logs %s in %s",
		humanBytes(s.DatabaseBytes), humanBytes(s.BuildEventsBytes), plural(int64(s.TableCount), "table", "tables"))
	if len(s.Tables) > 0 {
		summary = fmt.Sprintf("database %s; largest: %s %s; build logs %s in %s",
			humanBytes(s.DatabaseBytes), s.Tables[0].Label(), humanBytes(s.Tables[0].Bytes),
			humanBytes(s.BuildEventsBytes), plural(int64(s.TableCount), "table", "tables"))
	}
	tbl := &opmodel.Table{Columns: []string{"table", "team", "pipeline", "size", "rows"}, Noun: "tables"}
	orphans := 0
	for _, t := range s.Tables {
		team, pipeline := t.Team, t.Pipeline
		switch {
		case t.Kind == KindCheck:
			pipeline = "(resource checks)"
		case t.Orphan:
			orphans++
			team, pipeline = "", t.Label()
		case t.Kind == KindTeam:
			pipeline = "(one-off builds)"
		case t.InstanceVars != "":
			pipeline += " " + t.InstanceVars
		}
		tbl.Rows = append(tbl.Rows, []string{t.Table, team, pipeline, humanBytes(t.Bytes), "~" + human.Count(t.Rows)})
	}
	var detail []string
	if orphans > 0 {
		detail = append(detail, "Tables of deleted pipelines or teams are dropped by Concourse's build-log collector on its next run; nothing to purge there.")
	}
	detail = append(detail, "Sizes include indexes and TOAST; rows are PostgreSQL's estimates.")
	return opmodel.Result{Summary: summary, Table: tbl, Detail: strings.Join(detail, "\n"), Data: s}
}
