package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// reapTimes returns the reap_time of each build (as text, "" for NULL).
func (db *testDB) reapTimes(t *testing.T, ids ...int64) []string {
	t.Helper()
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		var s string
		require.NoError(t, db.pool.QueryRow(context.Background(),
			`SELECT coalesce(reap_time::text, '') FROM builds WHERE id = $1`, id).Scan(&s))
		out = append(out, s)
	}
	return out
}

func TestPurge_Truncate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.provider(t, DatabaseConfig{})
	op := opByName(t, p, OpPurge)
	ctx := context.Background()
	demoTable := eventsTable(KindPipeline, w.demo)
	reapedBefore := w.reapTimes(t, w.demoReaped)[0]

	plan, err := op.Plan(ctx, call(opmodel.Args{"team": "main", "pipeline": "demo"}))
	require.NoError(t, err)
	assert.Equal(t, OpPurge, plan.Op)
	assert.Equal(t, testTarget, plan.Target)
	require.Len(t, plan.Items, 1)
	item := plan.Items[0]
	assert.Equal(t, "table", item.Kind)
	assert.Equal(t, demoTable, item.ID)
	assert.Equal(t, map[string]string{
		"scope": "pipeline", "team": "main", "pipeline": "demo", "pipeline_id": strconv.FormatInt(w.demo, 10), "mode": "truncate",
	}, item.Attrs)
	assert.Contains(t, item.Detail, "~600 rows")
	assert.Contains(t, plan.Summary, fmt.Sprintf("truncate %s (main/demo): ~600 rows, ", demoTable))
	assert.Contains(t, fmt.Sprint(plan.Notes), "1 build of main/demo still running")
	assert.Contains(t, fmt.Sprint(plan.Notes), "5 completed builds will be marked reaped")

	assert.Equal(t, w.demoRows, w.count(t, demoTable, ""), "planning changes nothing")
	again, err := op.Plan(ctx, call(opmodel.Args{"team": "main", "pipeline": "demo", "mode": "truncate"}))
	require.NoError(t, err)
	assert.Equal(t, plan.Hash(), again.Hash(), "the same call plans the same thing")

	res, err := op.Apply(ctx, call(opmodel.Args{"team": "main", "pipeline": "demo"}), plan)
	require.NoError(t, err)

	assert.Zero(t, w.count(t, demoTable, ""), "demo's logs are gone")
	assert.Equal(t, w.deployRows, w.count(t, eventsTable(KindPipeline, w.deploy), ""), "other pipelines untouched")
	assert.Equal(t, int64(5), w.count(t, eventsTable(KindPipeline, w.small), ""))
	assert.Equal(t, w.offRows, w.count(t, eventsTable(KindTeam, w.main), ""))
	assert.Equal(t, int64(50), w.count(t, checkEventsTable, ""))

	for i, rt := range w.reapTimes(t, append(append([]int64{}, w.demoOld...), w.demoRecent...)...) {
		assert.NotEmpty(t, rt, "completed build %d marked reaped", i)
	}
	assert.Equal(t, []string{""}, w.reapTimes(t, w.demoRunning), "a running build is not reaped")
	assert.Equal(t, []string{reapedBefore}, w.reapTimes(t, w.demoReaped), "an already reaped build keeps its reap_time")
	assert.Equal(t, []string{"", ""}, w.reapTimes(t, w.deployBuilds...), "other pipelines' builds untouched")

	data, ok := res.Data.(PurgeResult)
	require.True(t, ok)
	require.Len(t, data.Tables, 1)
	tb := data.Tables[0]
	assert.Equal(t, demoTable, tb.Table)
	assert.Equal(t, w.demoRows, tb.RowsDeleted)
	assert.True(t, tb.RowsEstimated)
	assert.Equal(t, int64(5), tb.BuildsReaped)
	assert.Greater(t, tb.BytesBefore, int64(600*1000))
	assert.Less(t, tb.BytesAfter, int64(64*1024), "TRUNCATE gives the space back")
	assert.Equal(t, tb.BytesBefore-tb.BytesAfter, tb.BytesFreed)
	assert.Equal(t, tb.BytesFreed, data.BytesFreed)
	assert.Equal(t, []opmodel.ItemResult{{ID: demoTable, Outcome: opmodel.OutcomeSucceeded}}, res.Items)
	assert.Contains(t, res.Summary, fmt.Sprintf("truncated %s (main/demo): freed %s, ~600 rows; 5 builds marked reaped", demoTable, humanBytes(tb.BytesFreed)))
	assert.Contains(t, res.Detail, "build_log_retention")
	assert.Contains(t, res.Detail, "CONCOURSE_DEFAULT_BUILD_LOGS_TO_RETAIN")
	assert.Contains(t, res.Detail, "CONCOURSE_MAX_DAYS_TO_RETAIN_BUILD_LOGS")
	assert.False(t, res.Warn)

	sizes, err := opByName(t, p, OpTableSizes).Do(ctx, call(opmodel.Args{"kind": "pipeline"}))
	require.NoError(t, err)
	for _, tb := range sizes.Data.(TableSizes).Tables {
		if tb.Table == demoTable {
			assert.Zero(t, tb.Rows, "the estimate follows the truncated table before any ANALYZE")
		}
	}
}

func TestPurge_OlderThan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.provider(t, DatabaseConfig{})
	op := opByName(t, p, OpPurge)
	ctx := context.Background()
	demoTable := eventsTable(KindPipeline, w.demo)
	args := opmodel.Args{"team": "main", "pipeline": "demo", "mode": "older_than", "days": "30"}

	plan, err := op.Plan(ctx, call(args))
	require.NoError(t, err)
	require.Len(t, plan.Items, 1)
	assert.Equal(t, "30", plan.Items[0].Attrs["days"])
	assert.Equal(t, "older_than", plan.Items[0].Attrs["mode"])
	assert.Contains(t, plan.Items[0].Detail, "logs of 3 builds that ended before ")
	assert.Contains(t, plan.Items[0].Detail, ": 300 rows (table ~600 rows, ")
	assert.Equal(t, fmt.Sprintf("delete the logs of 3 builds older than 30 days from %s (main/demo): 300 rows", demoTable), plan.Summary)
	assert.Contains(t, fmt.Sprint(plan.Notes), "3 of these builds are not drained")
	assert.Contains(t, fmt.Sprint(plan.Notes), "DELETE does not shrink the table file")

	res, err := op.Apply(ctx, call(args), plan)
	require.NoError(t, err)
	assert.Zero(t, w.count(t, demoTable, "build_id = ANY($1)", w.demoOld), "old builds' logs gone")
	assert.Equal(t, int64(200), w.count(t, demoTable, "build_id = ANY($1)", w.demoRecent), "recent builds keep theirs")
	assert.Equal(t, int64(100), w.count(t, demoTable, "build_id = $1", w.demoRunning), "a running build keeps its logs, however old")
	for _, rt := range w.reapTimes(t, w.demoOld...) {
		assert.NotEmpty(t, rt)
	}
	assert.Equal(t, []string{"", ""}, w.reapTimes(t, w.demoRecent...))
	assert.Equal(t, []string{""}, w.reapTimes(t, w.demoRunning))
	assert.Equal(t, w.deployRows, w.count(t, eventsTable(KindPipeline, w.deploy), ""), "infra/deploy's 100-day-old build untouched")

	data := res.Data.(PurgeResult)
	assert.Equal(t, int64(300), data.RowsDeleted)
	assert.False(t, data.RowsEstimated)
	assert.Equal(t, int64(3), data.BuildsReaped)
	assert.Equal(t, 1, data.Tables[0].Batches)
	assert.Equal(t, []opmodel.ItemResult{{ID: demoTable, Outcome: opmodel.OutcomeSucceeded}}, res.Items)
	assert.Contains(t, res.Summary, fmt.Sprintf("deleted 300 rows of 3 builds older than 30 days from %s (main/demo)", demoTable))

	t.Run("applying again finds nothing left", func(t *testing.T) {
		res, err := op.Apply(ctx, call(args), plan)
		require.NoError(t, err)
		assert.Equal(t, opmodel.OutcomeAlreadyDone, res.Items[0].Outcome)
		assert.Zero(t, res.Data.(PurgeResult).BuildsReaped)
	})
	t.Run("planning again is empty", func(t *testing.T) {
		plan, err := op.Plan(ctx, call(args))
		require.NoError(t, err)
		assert.True(t, plan.Empty())
		assert.Equal(t, "nothing to purge: no build of main/demo ended more than 30 days ago without being reaped", plan.Summary)
	})
}

func TestPurge_OlderThanBatches(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	team := db.team(t, "main")
	pipe := db.pipeline(t, team, "busy", "")
	table := eventsTable(KindPipeline, pipe)
	db.exec(t, `INSERT INTO builds (name, status, team_id, pipeline_id, completed, start_time, end_time)
		SELECT g::text, 'succeeded', $1, $2, true, now() - interval '20 days', now() - interval '20 days'
		  FROM generate_series(1, 1100) g`, team, pipe)
	db.exec(t, `INSERT INTO `+table+` (build_id, type, payload, event_id, version)
		SELECT id, 'log', 'line', 1, '5.1' FROM builds WHERE pipeline_id = $1`, pipe)
	p := db.provider(t, DatabaseConfig{})
	op := opByName(t, p, OpPurge)
	args := opmodel.Args{"team": "main", "pipeline": "busy", "mode": "older_than", "days": 7}
	ctx := context.Background()

	plan, err := op.Plan(ctx, call(args))
	require.NoError(t, err)

	t.Run("a failing batch keeps the committed ones and says so", func(t *testing.T) {
		// Lock a build of the third batch: batches 1 and 2 commit, 3 times out.
		var third int64
		require.NoError(t, db.pool.QueryRow(ctx, `SELECT id FROM builds WHERE pipeline_id = $1 ORDER BY id OFFSET 1050 LIMIT 1`, pipe).Scan(&third))
		release := db.holdRowLock(t, third)
		p := db.provider(t, DatabaseConfig{LockTimeout: 200 * time.Millisecond})
		res, err := opByName(t, p, OpPurge).Apply(ctx, call(args), plan)
		release()
		require.Error(t, err)
		assert.True(t, errors.Is(err, ErrLockTimeout))
		assert.Contains(t, err.Error(), "; 2 batches were committed before that (1,000 builds reaped, 1,000 rows deleted); run the purge again to go on")
		assert.Equal(t, opmodel.OutcomeFailed, res.Items[0].Outcome)
		assert.Equal(t, int64(100), db.count(t, table, ""))
	})

	var progress []string
	c := call(args)
	c.Progress = func(s string) { progress = append(progress, s) }
	res, err := op.Apply(ctx, c, plan)
	require.NoError(t, err)
	data := res.Data.(PurgeResult)
	assert.Equal(t, int64(100), data.BuildsReaped, "the rest")
	require.NotEmpty(t, progress, "each batch reports progress")
	assert.Contains(t, progress[len(progress)-1], "deleting the logs of main/busy older than 7 days: 100 builds reaped, 100 rows")
	assert.Equal(t, 1, data.Tables[0].Batches)
	assert.Zero(t, db.count(t, table, ""))
	assert.Zero(t, db.int(t, `SELECT count(*) FROM builds WHERE pipeline_id = $1 AND reap_time IS NULL`, pipe))
}

func TestPurge_OneOffBuilds(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	op := opByName(t, w.provider(t, DatabaseConfig{}), OpPurge)
	ctx := context.Background()
	args := opmodel.Args{"team": "main", "one_off": true}
	table := eventsTable(KindTeam, w.main)

	plan, err := op.Plan(ctx, call(args))
	require.NoError(t, err)
	require.Len(t, plan.Items, 1)
	assert.Equal(t, table, plan.Items[0].ID)
	assert.Equal(t, map[string]string{"scope": "team", "team": "main", "team_id": strconv.FormatInt(w.main, 10), "mode": "truncate"},
		plan.Items[0].Attrs)
	assert.Contains(t, plan.Summary, "(main one-off builds)")

	res, err := op.Apply(ctx, call(args), plan)
	require.NoError(t, err)
	assert.Zero(t, w.count(t, table, ""))
	assert.NotEmpty(t, w.reapTimes(t, w.oneOff)[0])
	assert.Equal(t, int64(1), res.Data.(PurgeResult).BuildsReaped, "only the one-off build")
	assert.Equal(t, w.demoRows, w.count(t, eventsTable(KindPipeline, w.demo), ""))
	assert.Equal(t, []string{""}, w.reapTimes(t, w.demoRecent[0]))
}

func TestPurge_Resolution(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	a := w.pipeline(t, w.main, "branches", `{"branch": "a"}`)
	b := w.pipeline(t, w.main, "branches", `{"branch": "b"}`)
	require.NotEqual(t, a, b)
	op := opByName(t, w.provider(t, DatabaseConfig{}), OpPurge)
	ctx := context.Background()

	t.Run("instanced pipeline", func(t *testing.T) {
		plan, err := op.Plan(ctx, call(opmodel.Args{"team": "main", "pipeline": "branches", "instance_vars": `{"branch":"b"}`}))
		require.NoError(t, err)
		assert.Equal(t, eventsTable(KindPipeline, b), plan.Items[0].ID)
		assert.Equal(t, `{"branch": "b"}`, plan.Items[0].Attrs["instance_vars"])
		assert.Contains(t, plan.Summary, `(main/branches/{"branch": "b"})`)
	})
	t.Run("team name is case-insensitive", func(t *testing.T) {
		plan, err := op.Plan(ctx, call(opmodel.Args{"team": "MAIN", "pipeline": "demo"}))
		require.NoError(t, err)
		assert.Equal(t, "main", plan.Items[0].Attrs["team"], "the stored name is what the approval shows")
	})

	cases := []struct {
		name string
		args opmodel.Args
		want string
	}{
		{"unknown team", opmodel.Args{"team": "nope", "pipeline": "demo"}, `team "nope" not found on infra-prd; teams: "infra", "main"`},
		{"unknown pipeline", opmodel.Args{"team": "main", "pipeline": "nope"},
			`team main has no pipeline "nope" on infra-prd; pipelines: "branches", "demo", "small"`},
		{"pipeline of another team", opmodel.Args{"team": "main", "pipeline": "deploy"}, `team main has no pipeline "deploy"`},
		{"deleted pipeline", opmodel.Args{"team": "main", "pipeline": "gone"}, `team main has no pipeline "gone"`},
		{"instanced without vars", opmodel.Args{"team": "main", "pipeline": "branches"},
			`pipeline main/branches has no instance with instance_vars (none); pass instance_vars as one of: {"branch": "a"}, {"branch": "b"}`},
		{"instanced with unknown vars", opmodel.Args{"team": "main", "pipeline": "branches", "instance_vars": `{"branch":"c"}`},
			`has no instance with instance_vars {"branch":"c"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := op.Plan(ctx, call(tc.args))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrNotFound), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPurge_ArgumentErrors(t *testing.T) {
	p, err := New(Options{Databases: map[string]DatabaseConfig{testTarget: {DSN: "postgres://u@127.0.0.1:1/db"}}})
	require.NoError(t, err)
	defer p.Close()
	op := opByName(t, p, OpPurge)
	cases := []struct {
		name string
		args opmodel.Args
		want string
	}{
		{"no team", opmodel.Args{"pipeline": "demo"}, `argument "team" is required`},
		{"no pipeline", opmodel.Args{"team": "main"}, `argument "pipeline" is required (or "one_off: true"`},
		{"both", opmodel.Args{"team": "main", "pipeline": "demo", "one_off": "true"}, `either "pipeline" or "one_off: true"`},
		{"unknown mode", opmodel.Args{"team": "main", "pipeline": "demo", "mode": "drop"}, `"drop" is not truncate or older_than`},
		{"older_than without days", opmodel.Args{"team": "main", "pipeline": "demo", "mode": "older_than"}, `needs "days" between 1 and 36500, got 0`},
		{"negative days", opmodel.Args{"team": "main", "pipeline": "demo", "mode": "older_than", "days": -1}, "got -1"},
		{"days not a number", opmodel.Args{"team": "main", "pipeline": "demo", "mode": "older_than", "days": "7; DROP"}, "is not a whole number"},
		{"days with truncate", opmodel.Args{"team": "main", "pipeline": "demo", "days": 3}, `"days" applies only to mode older_than`},
		{"instance vars not json", opmodel.Args{"team": "main", "pipeline": "demo", "instance_vars": "branch=a"}, "must be a JSON object"},
		{"instance vars array", opmodel.Args{"team": "main", "pipeline": "demo", "instance_vars": `["a"]`}, "must be a JSON object"},
		{"instance vars for one-off", opmodel.Args{"team": "main", "one_off": true, "instance_vars": `{}`}, "applies only to a pipeline"},
		{"nul byte", opmodel.Args{"team": "main", "pipeline": "de\x00mo"}, `argument "pipeline" is not a valid name`},
		{"invalid utf8", opmodel.Args{"team": "ma\xffin", "pipeline": "demo"}, `argument "team" is not a valid name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := op.Plan(context.Background(), call(tc.args))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrRefused), "refused before any connection: %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPurge_StalePlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	op := opByName(t, w.provider(t, DatabaseConfig{}), OpPurge)
	ctx := context.Background()
	demoTable := eventsTable(KindPipeline, w.demo)
	args := opmodel.Args{"team": "main", "pipeline": "demo"}
	plan, err := op.Plan(ctx, call(args))
	require.NoError(t, err)

	w.exec(t, `UPDATE pipelines SET name = 'demo-renamed' WHERE id = $1`, w.demo)
	_, err = op.Apply(ctx, call(args), plan)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrStalePlan))
	assert.Contains(t, err.Error(), fmt.Sprintf("pipeline %d is now main/demo-renamed, not main/demo as approved; plan the purge again", w.demo))
	assert.Equal(t, w.demoRows, w.count(t, demoTable, ""), "nothing purged")

	w.exec(t, `DELETE FROM pipelines WHERE id = $1`, w.demo)
	_, err = op.Apply(ctx, call(args), plan)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrStalePlan))
	assert.Contains(t, err.Error(), fmt.Sprintf("main/demo (id %d) no longer exists", w.demo))
	assert.Equal(t, w.demoRows, w.count(t, demoTable, ""))
}

func TestPurge_Permission(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	role := w.name + "_ro"
	ctx := context.Background()
	w.exec(t, `CREATE ROLE `+role+` LOGIN`)
	t.Cleanup(func() {
		_, _ = w.pool.Exec(context.Background(), `DROP OWNED BY `+role)
		_, _ = w.pool.Exec(context.Background(), `DROP ROLE `+role)
	})
	w.exec(t, `GRANT SELECT ON ALL TABLES IN SCHEMA public TO `+role)
	u := testServerURL(t)
	u.Path = "/" + w.name
	u.User = nil
	dsn := u.String()
	dsn = dsn[:len("postgres://")] + role + "@" + dsn[len("postgres://"):]
	op := opByName(t, mustProvider(t, DatabaseConfig{DSN: dsn}), OpPurge)

	_, err := op.Plan(ctx, call(opmodel.Args{"team": "main", "pipeline": "demo"}))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrPermission))
	assert.Contains(t, err.Error(), fmt.Sprintf(`user %q may not TRUNCATE %s; use the database user Concourse itself connects as`,
		role, eventsTable(KindPipeline, w.demo)))
}

// lapsedLease is a leader lease that lapsed 5 s ago (a leader woken from
// a pause past it).
type lapsedLease struct{}

func (lapsedLease) HeldUntil() time.Time       { return time.Now().Add(-5 * time.Second) }
func (lapsedLease) CallTimeout() time.Duration { return 4 * time.Second }

// TestPurge_FencedRollsBack (#35.3): a purge made under a lease that
// lapsed is rolled back, not committed: nothing is deleted, and the
// result says why.
func TestPurge_FencedRollsBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.provider(t, DatabaseConfig{})
	op := opByName(t, p, OpPurge)
	ctx := context.Background()
	demoTable := eventsTable(KindPipeline, w.demo)
	plan, err := op.Plan(ctx, call(opmodel.Args{"team": "main", "pipeline": "demo"}))
	require.NoError(t, err)
	res, err := op.Apply(opmodel.WithLease(ctx, lapsedLease{}), call(opmodel.Args{"team": "main", "pipeline": "demo"}), plan)
	if err == nil {
		require.Len(t, res.Items, 1)
		assert.Equal(t, opmodel.OutcomeFailed, res.Items[0].Outcome)
		assert.Contains(t, res.Items[0].Reason, "the leader lease lapsed")
	} else {
		assert.ErrorIs(t, err, opmodel.ErrLeaseLapsed)
	}
	assert.Equal(t, w.demoRows, w.count(t, demoTable, ""), "nothing deleted")
	assert.Equal(t, []string{"", ""}, w.reapTimes(t, w.demoOld[:2]...), "no build marked reaped")
}
