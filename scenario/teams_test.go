package scenario_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/scenario"
)

// TestTeamScenarios plays the scenarios of a Concourse of three teams:
// the teams' policy levels, channels bound to teams and Concourse roles,
// one scenario per refusal.
func TestTeamScenarios(t *testing.T) {
	scs, err := scenario.LoadFS(os.DirFS("testdata/teams"))
	require.NoError(t, err)
	require.NotEmpty(t, scs)
	for _, sc := range scs {
		t.Run(sc.ID(), func(t *testing.T) {
			t.Parallel()
			res := scenario.Run(context.Background(), sc, scenario.Options{})
			assert.True(t, res.Passed(), "%s", res.Report())
		})
	}
}
