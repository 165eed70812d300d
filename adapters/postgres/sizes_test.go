package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

func TestTableSizes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.provider(t, DatabaseConfig{})
	op := opByName(t, p, OpTableSizes)
	ctx := context.Background()

	res, err := op.Do(ctx, call(nil))
	require.NoError(t, err)
	data, ok := res.Data.(TableSizes)
	require.True(t, ok)

	// Every build-log table: 4 pipeline tables, 2 team tables, the check table.
	assert.Equal(t, 7, data.TableCount)
	require.Len(t, data.Tables, 7)
	var sum int64
	for _, tb := range data.Tables {
		sum += tb.Bytes
	}
	assert.Equal(t, sum, data.BuildEventsBytes)
	assert.Greater(t, data.DatabaseBytes, data.BuildEventsBytes)

	got := make([]string, 0, 5)
	for _, tb := range data.Tables[:5] {
		got = append(got, tb.Table)
	}
	assert.Equal(t, []string{
		eventsTable(KindPipeline, w.demo),
		eventsTable(KindPipeline, w.deploy),
		eventsTable(KindPipeline, w.gone),
		checkEventsTable,
		eventsTable(KindTeam, w.main),
	}, got, "largest first")

	assert.Equal(t, TableSize{
		Table: eventsTable(KindPipeline, w.demo), Kind: KindPipeline, Team: "main", Pipeline: "demo",
		PipelineID: w.demo, TeamID: w.main, Bytes: data.Tables[0].Bytes, Rows: w.demoRows,
	}, data.Tables[0])
	assert.Greater(t, data.Tables[0].Bytes, int64(600*1000), "600 rows of 1 kB")
	assert.Equal(t, "infra", data.Tables[1].Team)
	assert.Equal(t, "deploy", data.Tables[1].Pipeline)

	gone := data.Tables[2]
	assert.True(t, gone.Orphan)
	assert.Equal(t, w.gone, gone.PipelineID)
	assert.Empty(t, gone.Team)
	assert.Equal(t, fmt.Sprintf("deleted pipeline %d", w.gone), gone.Label())

	check := data.Tables[3]
	assert.Equal(t, KindCheck, check.Kind)
	assert.Equal(t, int64(50), check.Rows)

	team := data.Tables[4]
	assert.Equal(t, TableSize{Table: eventsTable(KindTeam, w.main), Kind: KindTeam, Team: "main", TeamID: w.main,
		Bytes: team.Bytes, Rows: w.offRows}, team)

	assert.Equal(t, fmt.Sprintf("database %s; largest: main/demo %s; build logs %s in 7 tables",
		humanBytes(data.DatabaseBytes), humanBytes(data.Tables[0].Bytes), humanBytes(data.BuildEventsBytes)), res.Summary)
	require.NotNil(t, res.Table)
	assert.Equal(t, []string{"table", "team", "pipeline", "size", "rows"}, res.Table.Columns)
	assert.Equal(t, []string{eventsTable(KindPipeline, w.demo), "main", "demo", humanBytes(data.Tables[0].Bytes), "~600"}, res.Table.Rows[0])
	assert.Equal(t, "(resource checks)", res.Table.Rows[3][2])
	assert.Equal(t, "(one-off builds)", res.Table.Rows[4][2])
	assert.Contains(t, res.Detail, "dropped by Concourse's build-log collector")

	t.Run("data marshals for later steps", func(t *testing.T) {
		b, err := json.Marshal(res.Data)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		assert.EqualValues(t, data.DatabaseBytes, m["database_bytes"])
		first := m["tables"].([]any)[0].(map[string]any)
		for _, k := range []string{"table", "kind", "team", "pipeline", "pipeline_id", "bytes", "rows"} {
			assert.Contains(t, first, k)
		}
		assert.Equal(t, "demo", first["pipeline"])
		assert.EqualValues(t, w.demo, first["pipeline_id"])
	})

	t.Run("top and kind", func(t *testing.T) {
		cases := []struct {
			args opmodel.Args
			want []string
		}{
			{opmodel.Args{"top": 2}, []string{eventsTable(KindPipeline, w.demo), eventsTable(KindPipeline, w.deploy)}},
			{opmodel.Args{"top": "1"}, []string{eventsTable(KindPipeline, w.demo)}},
			{opmodel.Args{"kind": "team"}, []string{eventsTable(KindTeam, w.main), eventsTable(KindTeam, w.infra)}},
			{opmodel.Args{"kind": "check"}, []string{checkEventsTable}},
			{opmodel.Args{"kind": "pipeline", "top": 1}, []string{eventsTable(KindPipeline, w.demo)}},
		}
		for _, tc := range cases {
			t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
				res, err := op.Do(ctx, call(tc.args))
				require.NoError(t, err)
				d := res.Data.(TableSizes)
				var got []string
				for _, tb := range d.Tables {
					got = append(got, tb.Table)
				}
				assert.Equal(t, tc.want, got)
				assert.Equal(t, 7, d.TableCount, "totals cover every table")
			})
		}
	})

	t.Run("bad arguments", func(t *testing.T) {
		for _, args := range []opmodel.Args{{"top": 0}, {"top": "ten"}, {"top": -3}, {"kind": "pipelines"}} {
			_, err := op.Do(ctx, call(args))
			require.Error(t, err, "%v", args)
		}
		_, err := op.Do(ctx, call(opmodel.Args{"kind": "x"}))
		assert.True(t, errors.Is(err, ErrRefused))
	})
}
