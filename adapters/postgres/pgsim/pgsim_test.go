package pgsim_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/postgres"
	"github.com/groundcrew/groundcrew/adapters/postgres/pgsim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

func dbOps(t *testing.T, spec pgsim.DatabaseSpec) (*pgsim.Sim, map[string]opmodel.Op) {
	t.Helper()
	ids := map[string]int{"deploy/caascad-alert-prepare": 12}
	d := pgsim.New("infra-prd", spec, func(team, name string) (int, bool) {
		id, ok := ids[team+"/"+name]
		return id, ok
	})
	ops := map[string]opmodel.Op{}
	for _, op := range d.Ops() {
		ops[op.Name] = op
	}
	return d, ops
}

func TestSim_SizesAndPurge(t *testing.T) {
	ctx := context.Background()
	d, ops := dbOps(t, *pgsim.Demo())
	res, err := ops[postgres.OpTableSizes].Do(ctx, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"top": "2", "kind": "pipeline"}})
	require.NoError(t, err)
	sizes := res.Data.(postgres.TableSizes)
	require.Len(t, sizes.Tables, 2)
	assert.Equal(t, "pipeline_build_events_12", sizes.Tables[0].Table, "the Concourse simulator's pipeline id names the table")
	assert.Equal(t, "main/app", sizes.Tables[1].Team+"/"+sizes.Tables[1].Pipeline)
	assert.Equal(t, 5, sizes.TableCount)
	assert.Contains(t, res.Summary, "largest: deploy/caascad-alert-prepare 38 GB")

	call := opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "deploy", "pipeline": "caascad-alert-prepare"}}
	plan, err := ops[postgres.OpPurge].Plan(ctx, call)
	require.NoError(t, err)
	plan.Target = "infra-prd"
	require.Len(t, plan.Items, 1)
	assert.Equal(t, postgres.PlanItemKind, plan.Items[0].Kind)
	assert.Equal(t, "pipeline_build_events_12", plan.Items[0].ID)
	assert.Contains(t, plan.Summary, "~41,200,000 rows, 38 GB")
	_, err = ops[postgres.OpPurge].Apply(ctx, call, plan)
	require.NoError(t, err)
	tbl, ok := d.Table("deploy/caascad-alert-prepare")
	require.True(t, ok)
	assert.Zero(t, tbl.Rows)
}

func TestSim_Refusals(t *testing.T) {
	ctx := context.Background()
	table := []pgsim.TableSpec{{Team: "main", Pipeline: "app", Size: 1 << 30, Rows: 100}}
	cases := []struct {
		name string
		spec pgsim.DatabaseSpec
		call opmodel.Call
		want string
	}{
		{"replica", pgsim.DatabaseSpec{Replica: true, Tables: table}, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "main", "pipeline": "app"}}, "read-only replica"},
		{"down", pgsim.DatabaseSpec{Down: true, Tables: table}, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "main", "pipeline": "app"}}, "connection refused"},
		{"other target", pgsim.DatabaseSpec{Tables: table}, opmodel.Call{Target: "ocb-example", Args: opmodel.Args{"team": "main", "pipeline": "app"}}, "target ocb-example has no database configured"},
		{"unknown pipeline", pgsim.DatabaseSpec{Tables: table}, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "main", "pipeline": "ghost"}}, `pipeline "ghost" not found`},
		{"older_than without days", pgsim.DatabaseSpec{Tables: table}, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "main", "pipeline": "app", "mode": "older_than"}}, "between 1 and 36500"},
		{"days with truncate", pgsim.DatabaseSpec{Tables: table}, opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "main", "pipeline": "app", "days": "14"}}, "applies only to mode older_than"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ops := dbOps(t, c.spec)
			_, err := ops[postgres.OpPurge].Plan(ctx, c.call)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
