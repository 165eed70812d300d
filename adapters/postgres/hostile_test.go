package postgres

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Names typed by users, or stored in Concourse's tables by them, only ever
// travel to PostgreSQL as query parameters; table names come from ids.

var hostileNames = []string{
	`x; DROP TABLE teams`,
	`a"b`,
	`o'neil`,
	`'; DROP TABLE pipelines; --`,
	`pipé-🚀-流水线`,
	`pipeline_build_events_1`,
	`build_events`,
	`demo" CASCADE; --`,
	"tab\tand\nnewline",
}

func TestHostileNames(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	ctx := context.Background()
	team := db.team(t, `t'; DROP TABLE builds; --`)
	other := db.team(t, "main")
	victim := db.pipeline(t, other, "victim", "")
	victimBuild := db.build(t, buildSpec{teamID: other, pipelineID: victim})
	db.events(t, eventsTable(KindPipeline, victim), victimBuild, 10, 100)

	ids := map[string]int64{}
	for _, name := range hostileNames {
		id := db.pipeline(t, team, name, "")
		ids[name] = id
		b := db.build(t, buildSpec{teamID: team, pipelineID: id})
		db.events(t, eventsTable(KindPipeline, id), b, 3, 100)
	}
	db.analyze(t)
	p := db.provider(t, DatabaseConfig{})

	t.Run("sizes map stored names exactly", func(t *testing.T) {
		res, err := opByName(t, p, OpTableSizes).Do(ctx, call(opmodel.Args{"top": 100, "kind": "pipeline"}))
		require.NoError(t, err)
		byID := map[int64]TableSize{}
		for _, tb := range res.Data.(TableSizes).Tables {
			byID[tb.PipelineID] = tb
		}
		for name, id := range ids {
			assert.Equal(t, name, byID[id].Pipeline)
			assert.Equal(t, `t'; DROP TABLE builds; --`, byID[id].Team)
			assert.Equal(t, eventsTable(KindPipeline, id), byID[id].Table)
		}
	})

	op := opByName(t, p, OpPurge)
	for _, name := range hostileNames {
		t.Run("purge "+strconv.Quote(name), func(t *testing.T) {
			args := opmodel.Args{"team": `t'; DROP TABLE builds; --`, "pipeline": name}
			plan, err := op.Plan(ctx, call(args))
			require.NoError(t, err)
			require.Len(t, plan.Items, 1)
			assert.Equal(t, eventsTable(KindPipeline, ids[name]), plan.Items[0].ID, "the table comes from the id")
			assert.Equal(t, name, plan.Items[0].Attrs["pipeline"])

			before := db.count(t, eventsTable(KindPipeline, victim), "")
			_, err = op.Apply(ctx, call(args), plan)
			require.NoError(t, err)
			assert.Zero(t, db.count(t, eventsTable(KindPipeline, ids[name]), ""))
			assert.Equal(t, before, db.count(t, eventsTable(KindPipeline, victim), ""), "nothing else touched")
			for _, tbl := range []string{"teams", "pipelines", "builds", parentEventsTable} {
				assert.True(t, db.tableExists(t, tbl), tbl)
			}
		})
	}

	t.Run("unknown hostile names are just not found", func(t *testing.T) {
		for _, args := range []opmodel.Args{
			{"team": "main", "pipeline": `victim"; DROP TABLE teams; --`},
			{"team": "main", "pipeline": `' OR '1'='1`},
			{"team": "main", "pipeline": `pipeline_build_events_` + strconv.FormatInt(victim, 10)},
			{"team": `main' OR 'a'='a`, "pipeline": "victim"},
			{"team": "main", "pipeline": "victim", "instance_vars": `{"x": "'; DROP TABLE teams; --"}`},
		} {
			_, err := op.Plan(ctx, call(args))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrNotFound), "%v: %v", args, err)
		}
		assert.Equal(t, int64(10), db.count(t, eventsTable(KindPipeline, victim), ""))
		assert.True(t, db.tableExists(t, "teams"))
	})
}

// Apply rebuilds what it touches from the plan and checks it again, so a
// tampered or corrupted plan is refused before any SQL runs.
func TestApply_RefusesBadPlans(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.provider(t, DatabaseConfig{})
	op := opByName(t, p, OpPurge)
	ctx := context.Background()
	demoTable := eventsTable(KindPipeline, w.demo)
	demoID := strconv.FormatInt(w.demo, 10)
	attrs := func(mod func(map[string]string)) map[string]string {
		a := map[string]string{"scope": "pipeline", "team": "main", "pipeline": "demo", "pipeline_id": demoID, "mode": "truncate"}
		if mod != nil {
			mod(a)
		}
		return a
	}
	item := func(kind, id string, a map[string]string) opmodel.Plan {
		return opmodel.Plan{Op: OpPurge, Target: testTarget, Items: []opmodel.PlanItem{{Kind: kind, ID: id, Attrs: a}}}
	}
	cases := []struct {
		name string
		plan opmodel.Plan
		want string
	}{
		{"parent table", item("table", "build_events", attrs(nil)), "refusing to purge build_events: it is the parent"},
		{"check table", item("table", "check_build_events", attrs(nil)), `refusing to purge "check_build_events"`},
		{"other table", item("table", "teams", attrs(nil)), `refusing to purge "teams"`},
		{"injection in id", item("table", demoTable+"; DROP TABLE teams", attrs(nil)), "refusing to purge"},
		{"quoted id", item("table", `"`+demoTable+`"`, attrs(nil)), "refusing to purge"},
		{"leading zero", item("table", "pipeline_build_events_0"+demoID, attrs(nil)), "whose table is " + demoTable},
		{"id does not match table", item("table", "pipeline_build_events_999", attrs(nil)), "its pipeline_id is " + demoID},
		{"id attr not a number", item("table", demoTable, attrs(func(a map[string]string) { a["pipeline_id"] = demoID + " OR 1=1" })), "is not a positive id"},
		{"scope mismatch", item("table", demoTable, attrs(func(a map[string]string) { a["scope"] = "team" })), `its scope is "team"`},
		{"team table with pipeline scope", item("table", "team_build_events_"+demoID, attrs(nil)), `its scope is "pipeline"`},
		{"unknown mode", item("table", demoTable, attrs(func(a map[string]string) { a["mode"] = "drop" })), `unknown mode "drop"`},
		{"bad days", item("table", demoTable, attrs(func(a map[string]string) { a["mode"] = "older_than"; a["days"] = "0" })), `days "0" is not between`},
		{"not a table", item("worker", demoTable, attrs(nil)), `of kind "worker"`},
		{"missing names", item("table", demoTable, attrs(func(a map[string]string) { delete(a, "pipeline") })), "does not name its team and pipeline"},
		{"other op", opmodel.Plan{Op: "concourse.prune_worker", Target: testTarget}, `refusing a plan of "concourse.prune_worker"`},
		{"other target", opmodel.Plan{Op: OpPurge, Target: "infra-dev"}, `made for target "infra-dev" on target "infra-prd"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := op.Apply(ctx, call(nil), tc.plan)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrRefused), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, w.demoRows, w.count(t, demoTable, ""))
			assert.True(t, w.tableExists(t, "teams"))
		})
	}

	t.Run("a good plan in a bad batch is not applied", func(t *testing.T) {
		plan := item("table", demoTable, attrs(nil))
		plan.Items = append(plan.Items, opmodel.PlanItem{Kind: "table", ID: "build_events", Attrs: attrs(nil)})
		_, err := op.Apply(ctx, call(nil), plan)
		require.Error(t, err)
		assert.Equal(t, w.demoRows, w.count(t, demoTable, ""), "items are all checked before any runs")
	})
}
