package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// PingResult is the Data of postgres.db_ping.
type PingResult struct {
	Endpoint      string `json:"endpoint"` // user@host:port/db, no password
	ServerVersion string `json:"server_version"`
	Database      string `json:"database"`
	User          string `json:"user"`
	// InRecovery is true on a read-only replica: purges will fail there.
	InRecovery bool  `json:"in_recovery"`
	LatencyMS  int64 `json:"latency_ms"`
	// ConcourseSchema is true when the pipelines, teams, builds and
	// build_events tables are there.
	ConcourseSchema bool  `json:"concourse_schema"`
	DatabaseBytes   int64 `json:"database_bytes"`
}

func (p *Provider) ping(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
	d, err := p.db(c.Target)
	if err != nil {
		return opmodel.Result{}, err
	}
	const action = "database ping"

	tx, err := d.begin(ctx, pgx.ReadOnly)
	if err != nil {
		return opmodel.Result{}, classify(ctx, err, action, d.where)
	}
	defer rollback(tx)

	res := PingResult{Endpoint: d.where.endpoint}
	var one int
	start := time.Now()
	if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		return opmodel.Result{}, classify(ctx, err, action, d.where)
	}
	latency := time.Since(start)
	err = tx.QueryRow(ctx, `
		SELECT current_setting('server_version'), current_database(), current_user,
		       pg_is_in_recovery(), pg_database_size(current_database()),
		       to_regclass('pipelines') IS NOT NULL AND to_regclass('teams') IS NOT NULL
		       AND to_regclass('builds') IS NOT NULL AND to_regclass('build_events') IS NOT NULL`,
	).Scan(&res.ServerVersion, &res.Database, &res.User, &res.InRecovery, &res.DatabaseBytes, &res.ConcourseSchema)
	if err != nil {
		return opmodel.Result{}, classify(ctx, err, action, d.where)
	}
	res.LatencyMS = latency.Milliseconds()

	summary := fmt.Sprintf("connected to %s (PostgreSQL %s); round trip %.1f ms; database %s",
		d.where.endpoint, res.ServerVersion, float64(latency.Microseconds())/1000, humanBytes(res.DatabaseBytes))
	var warns []string
	if res.InRecovery {
		warns = append(warns, "this server is a read-only replica: purges will fail; point the DSN at the leader (the pod labelled spilo-role=master)")
	}
	if !res.ConcourseSchema {
		warns = append(warns, fmt.Sprintf("database %q has no Concourse tables (pipelines, teams, builds, build_events): is the DSN pointing at Concourse's database?", res.Database))
	}
	r := opmodel.Result{Summary: summary, Data: res, Warn: len(warns) > 0}
	if len(warns) > 0 {
		r.Summary += "; " + warns[0]
		r.Detail = strings.Join(warns, "\n")
	}
	return r, nil
}
