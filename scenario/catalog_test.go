package scenario_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/adapters/postgres"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/scenario"
)

// realCatalog is the registry the bot builds: core, Concourse and the real
// PostgreSQL provider (not the scenario's simulated database).
func realCatalog(t *testing.T) *opmodel.Registry {
	t.Helper()
	cl, err := concourse.New(concourse.TargetConfig{Name: "infra-prd", URL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	cc, err := concourse.NewProvider(map[string]*concourse.Client{"infra-prd": cl}, concourse.ProviderOptions{})
	require.NoError(t, err)
	pg, err := postgres.New(postgres.Options{})
	require.NoError(t, err)
	t.Cleanup(pg.Close)
	reg, err := opmodel.NewRegistry(core.Provider{}, cc, pg)
	require.NoError(t, err)
	return reg
}

// TestBuiltinRunbooksLintClean lints the built-in library against the
// operations the bot registers, and against the scenarios' catalog.
func TestBuiltinRunbooksLintClean(t *testing.T) {
	sim, err := scenario.Catalog()
	require.NoError(t, err)
	for name, cat := range map[string]runbooks.Catalog{"bot": realCatalog(t), "scenario": sim} {
		t.Run(name, func(t *testing.T) {
			errs := runbooks.Lint(runbooks.Builtin(), cat)
			require.Empty(t, errs, "%v", errs)
		})
	}
}

// TestBuiltinRunbooksListed checks that /runbook list shows every built-in
// runbook, destructive ones with the lock.
func TestBuiltinRunbooksListed(t *testing.T) {
	rbs, err := runbooks.LoadFS(runbooks.Builtin(), nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(rbs), 19)
	var want []string
	for _, rb := range rbs {
		want = append(want, "`"+rb.Name+"`")
	}
	want = append(want, "`worker-stalled` 🔒", "`list-workers` — List the workers")
	sc := &scenario.Scenario{
		Name: "list", Runbook: "hello", File: "catalog_test.go", Target: scenario.DefaultTarget, Tick: scenario.DefaultTick,
		Vars:   map[string]string{"zone": "infra-prd", "target": "infra"},
		World:  scenario.WorldSpec{Preset: "empty"},
		Inputs: []scenario.Input{{As: "alice", Command: "list", Line: 1}},
		Expect: &scenario.Expect{State: "none", Replies: want},
	}
	res := scenario.Run(context.Background(), sc, scenario.Options{})
	assert.True(t, res.Passed(), res.Report())
}
