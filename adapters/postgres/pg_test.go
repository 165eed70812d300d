package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// These tests run against a real PostgreSQL server: GROUNDCREW_TEST_PG (a
// postgres:// URL for a superuser, trust auth is fine), by default the one
// on 127.0.0.1:5432. Each test gets a throwaway database loaded with
// Concourse's schema and drops it at the end.

const defaultTestPG = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

const testTarget = "infra-prd"

func testServerURL(t *testing.T) *url.URL {
	t.Helper()
	dsn := os.Getenv("GROUNDCREW_TEST_PG")
	if dsn == "" {
		dsn = defaultTestPG
	}
	u, err := url.Parse(dsn)
	require.NoError(t, err, "GROUNDCREW_TEST_PG must be a postgres:// URL")
	require.Contains(t, []string{"postgres", "postgresql"}, u.Scheme, "GROUNDCREW_TEST_PG must be a postgres:// URL")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		msg := "no PostgreSQL at " + redactDSN(dsn) + " (" + err.Error() + "); start it (pg_ctlcluster --skip-systemctl-redirect 15 main start) or point GROUNDCREW_TEST_PG at one"
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set, so the PostgreSQL tests must run: %s", msg)
		}
		t.Skip("skipping: " + msg)
	}
	_ = conn.Close(ctx)
	return u
}

// testDB is a throwaway database holding Concourse's schema.
type testDB struct {
	name string
	dsn  string
	pool *pgxpool.Pool // for seeding and inspecting
}

func newTestDB(t *testing.T) *testDB {
	t.Helper()
	server := testServerURL(t)
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "groundcrew_pgtest_" + hex.EncodeToString(b)

	admin, err := pgx.Connect(ctx, server.String())
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	_ = admin.Close(ctx)

	u := *server
	u.Path = "/" + name
	db := &testDB{name: name, dsn: u.String()}
	t.Cleanup(func() {
		if db.pool != nil {
			db.pool.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, server.String())
		if err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
			return
		}
		defer func() { _ = admin.Close(ctx) }()
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping test database %s: %v", name, err)
		}
	})
	loadSchema(t, db.dsn)
	db.pool, err = pgxpool.New(ctx, db.dsn)
	require.NoError(t, err)
	return db
}

var psqlMeta = regexp.MustCompile(`(?m)^\\.*$`)

var extensionStmt = regexp.MustCompile(`(?m)^(?:CREATE EXTENSION IF NOT EXISTS|COMMENT ON EXTENSION) (\w+)[^;]*;`)

// loadSchema loads testdata/postgres/schema.sql (pg_dump --schema-only of a
// Concourse v8.2 database) the way psql -f would. Adjustments:
//   - psql meta-commands (\restrict, \unrestrict from recent pg_dump) are
//     dropped: they are not SQL;
//   - CREATE/COMMENT ON EXTENSION statements are dropped when the server
//     lacks the extension (nothing in the schema uses pgcrypto);
//   - the dump carries the child tables pipeline_build_events_1 and
//     team_build_events_1 of the recorded server but not the teams and
//     pipelines rows they belong to; they are dropped so that inserting team
//     1 and pipeline 1 can create them again through Concourse's triggers.
func loadSchema(t *testing.T, dsn string) {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "postgres", "schema.sql"))
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()

	schema := psqlMeta.ReplaceAllString(string(raw), "-- (psql meta-command)")
	schema = extensionStmt.ReplaceAllStringFunc(schema, func(stmt string) string {
		m := extensionStmt.FindStringSubmatch(stmt)
		var ok bool
		err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = $1)`, m[1]).Scan(&ok)
		require.NoError(t, err)
		if ok {
			return stmt
		}
		return "-- extension " + m[1] + " not available on this server"
	})
	_, err = conn.Exec(ctx, schema) // no arguments: simple protocol, many statements
	require.NoError(t, err, "loading schema.sql")
	_, err = conn.Exec(ctx, `SET search_path = public; DROP TABLE pipeline_build_events_1, team_build_events_1`)
	require.NoError(t, err)
}

func (db *testDB) exec(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	tag, err := db.pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err, sql)
	return tag.RowsAffected()
}

func (db *testDB) int(t *testing.T, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, db.pool.QueryRow(context.Background(), sql, args...).Scan(&n), sql)
	return n
}

func (db *testDB) team(t *testing.T, name string) int64 {
	t.Helper()
	return db.int(t, `INSERT INTO teams (name, auth) VALUES ($1, '{}') RETURNING id`, name)
}

// pipeline inserts a pipeline; Concourse's trigger creates its
// pipeline_build_events_<id> table. instanceVars is JSON or "".
func (db *testDB) pipeline(t *testing.T, teamID int64, name, instanceVars string) int64 {
	t.Helper()
	var iv *string
	if instanceVars != "" {
		iv = &instanceVars
	}
	return db.int(t, `INSERT INTO pipelines (name, team_id, secondary_ordering, instance_vars)
		VALUES ($1, $2, 1, $3::text::jsonb) RETURNING id`, name, teamID, iv)
}

func (db *testDB) job(t *testing.T, pipelineID int64, name string) int64 {
	t.Helper()
	return db.int(t, `INSERT INTO jobs (name, pipeline_id) VALUES ($1, $2) RETURNING id`, name, pipelineID)
}

// buildSpec is a build to insert; zero ids become NULL.
type buildSpec struct {
	teamID, pipelineID, jobID int64
	status                    string // default succeeded
	age                       time.Duration
	reaped                    bool
}

func nullID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

func (db *testDB) build(t *testing.T, b buildSpec) int64 {
	t.Helper()
	if b.status == "" {
		b.status = "succeeded"
	}
	completed := b.status != "pending" && b.status != "started"
	return db.int(t, `
		INSERT INTO builds (name, status, team_id, pipeline_id, job_id, completed, create_time, start_time, end_time, reap_time)
		VALUES (nextval('builds_id_seq')::text, $1::build_status, $2, $3, $4, $5,
		        now() - $6::interval - interval '10 minutes', now() - $6::interval - interval '5 minutes',
		        CASE WHEN $5 THEN now() - $6::interval END,
		        CASE WHEN $7 THEN now() END)
		RETURNING id`,
		b.status, b.teamID, nullID(b.pipelineID), nullID(b.jobID), completed, b.age, b.reaped)
}

// events inserts n log events of about size bytes each (incompressible) for
// a build into table.
func (db *testDB) events(t *testing.T, table string, buildID int64, n, size int) {
	t.Helper()
	db.exec(t, `INSERT INTO `+pgx.Identifier{table}.Sanitize()+` (build_id, type, payload, event_id, version)
		SELECT $1, 'log', (SELECT string_agg(md5(random()::text), '') FROM generate_series(1, $3::int / 32 + 1) x WHERE g > 0), g, '5.1'
		  FROM generate_series(1, $2::int) g`, buildID, n, size)
}

func (db *testDB) count(t *testing.T, table string, where string, args ...any) int64 {
	t.Helper()
	q := `SELECT count(*) FROM ` + pgx.Identifier{table}.Sanitize()
	if where != "" {
		q += " WHERE " + where
	}
	return db.int(t, q, args...)
}

func (db *testDB) analyze(t *testing.T) {
	t.Helper()
	db.exec(t, `ANALYZE`)
}

// provider returns a provider whose target testTarget is db, with cfg's
// timeouts.
func (db *testDB) provider(t *testing.T, cfg DatabaseConfig) *Provider {
	t.Helper()
	cfg.DSN = db.dsn
	p, err := New(Options{Databases: map[string]DatabaseConfig{testTarget: cfg}})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func opByName(t *testing.T, p *Provider, name string) opmodel.Op {
	t.Helper()
	for _, op := range p.Ops() {
		if op.Name == name {
			return op
		}
	}
	t.Fatalf("operation %s not registered", name)
	return opmodel.Op{}
}

func call(args opmodel.Args) opmodel.Call {
	return opmodel.Call{Target: testTarget, Args: args, RunID: "run-1", StepID: "step-1"}
}

// tableExists reports whether a table exists in db.
func (db *testDB) tableExists(t *testing.T, name string) bool {
	t.Helper()
	var ok bool
	require.NoError(t, db.pool.QueryRow(context.Background(), `SELECT to_regclass($1) IS NOT NULL`,
		pgx.Identifier{name}.Sanitize()).Scan(&ok))
	return ok
}

// holdRowLock locks one builds row FOR UPDATE from a separate connection,
// as a busy Concourse would, and returns a function that releases it.
func (db *testDB) holdRowLock(t *testing.T, buildID int64) func() {
	t.Helper()
	return db.hold(t, `SELECT 1 FROM builds WHERE id = $1 FOR UPDATE`, buildID)
}

// holdLock opens a transaction on a separate connection holding a lock on
// table in the given mode, and returns a function that releases it.
func (db *testDB) holdLock(t *testing.T, table, mode string) func() {
	t.Helper()
	return db.hold(t, `LOCK TABLE `+pgx.Identifier{table}.Sanitize()+` IN `+mode+` MODE`)
}

// hold runs sql in a transaction on its own connection and keeps the
// transaction open until the returned function (or the test's end).
func (db *testDB) hold(t *testing.T, sql string, args ...any) func() {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db.dsn)
	require.NoError(t, err)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, sql, args...)
	require.NoError(t, err)
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		_ = tx.Rollback(ctx)
		_ = conn.Close(ctx)
	}
	t.Cleanup(release)
	return release
}
