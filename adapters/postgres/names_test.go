package postgres

import (
	"errors"
	"testing"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPurgeIdent(t *testing.T) {
	cases := []struct {
		name  string
		table string
		want  string // quoted identifier; "" = refused
	}{
		{"pipeline table", "pipeline_build_events_12", `"pipeline_build_events_12"`},
		{"team table", "team_build_events_3", `"team_build_events_3"`},
		{"parent", "build_events", ""},
		{"check table", "check_build_events", ""},
		{"other table", "teams", ""},
		{"no id", "pipeline_build_events_", ""},
		{"injection", "pipeline_build_events_1; DROP TABLE teams", ""},
		{"quote", `pipeline_build_events_1"`, ""},
		{"schema qualified", "public.pipeline_build_events_1", ""},
		{"upper case", "PIPELINE_BUILD_EVENTS_1", ""},
		{"trailing newline", "pipeline_build_events_1\n", ""},
		{"unicode digit", "pipeline_build_events_١", ""},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := purgeIdent(tc.table)
			if tc.want == "" {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrRefused))
				assert.Empty(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := purgeIdent("build_events")
	assert.Contains(t, err.Error(), "parent of every build-log table")
}

func TestTableKind(t *testing.T) {
	cases := []struct {
		table string
		kind  string
		id    int64
		ok    bool
	}{
		{"pipeline_build_events_12", KindPipeline, 12, true},
		{"team_build_events_7", KindTeam, 7, true},
		{"check_build_events", KindCheck, 0, true},
		{"build_events", "", 0, false},
		{"pipeline_build_events_99999999999999999999999", "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.table, func(t *testing.T) {
			kind, id, ok := tableKind(tc.table)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.kind, kind)
			assert.Equal(t, tc.id, id)
		})
	}
	assert.Equal(t, "pipeline_build_events_5", eventsTable(KindPipeline, 5))
	assert.Equal(t, "team_build_events_5", eventsTable(KindTeam, 5))
}

func TestHumanBytes(t *testing.T) {
	cases := map[int64]string{
		0:                                 "0 bytes",
		1023:                              "1023 bytes",
		1024:                              "1 kB",
		1536:                              "1.5 kB",
		10 * 1024 * 1024:                  "10 MB",
		41 * 1024 * 1024 * 1024:           "41 GB",
		3 * 1024 * 1024 * 1024 * 1024 / 2: "1.5 TB",
	}
	for n, want := range cases {
		assert.Equal(t, want, humanBytes(n), "%d", n)
	}
}

func TestHumanCount(t *testing.T) {
	cases := map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"}
	for n, want := range cases {
		assert.Equal(t, want, human.Count(n))
	}
	assert.Equal(t, "1 build", plural(1, "build", "builds"))
	assert.Equal(t, "1,200 builds", plural(1200, "build", "builds"))
}
