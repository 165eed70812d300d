package scenario_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/scenario"
)

// TestBuiltinScenarios runs every built-in scenario against the built-in
// runbook library.
func TestBuiltinScenarios(t *testing.T) {
	scs, err := scenario.LoadFS(scenario.Builtin())
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

// TestBuiltinScenarios_CoverEveryRunbook checks that every built-in
// runbook has a main-path and a failure-path scenario.
func TestBuiltinScenarios_CoverEveryRunbook(t *testing.T) {
	rbs, err := runbooks.LoadFS(runbooks.Builtin(), nil)
	require.NoError(t, err)
	scs, err := scenario.LoadFS(scenario.Builtin())
	require.NoError(t, err)
	for _, rb := range rbs {
		t.Run(rb.Name, func(t *testing.T) {
			var main, failure int
			for _, sc := range scs {
				if sc.Runbook != rb.Name {
					continue
				}
				if sc.HasTag("main") {
					main++
				}
				if sc.HasTag("failure") {
					failure++
				}
			}
			assert.Positive(t, main, "no scenario tagged main")
			assert.Positive(t, failure, "no scenario tagged failure")
		})
	}
	for _, sc := range scs {
		found := false
		for _, rb := range rbs {
			found = found || rb.Name == sc.Runbook
		}
		assert.True(t, found, "scenario %s is about runbook %q, which is not built in", sc.ID(), sc.Runbook)
	}
}

// TestQuickRunbooks_AtMostThreeInputs keeps the effort table of
// runbooks/LIBRARY.md true: a quick runbook's main path takes at most three
// chat inputs (the command, an approval, a confirmation).
func TestQuickRunbooks_AtMostThreeInputs(t *testing.T) {
	rbs, err := runbooks.LoadFS(runbooks.Builtin(), nil)
	require.NoError(t, err)
	scs, err := scenario.LoadFS(scenario.Builtin())
	require.NoError(t, err)
	quick := map[string]bool{}
	for _, rb := range rbs {
		for _, tag := range rb.Tags {
			if tag == "quick" {
				quick[rb.Name] = true
			}
		}
	}
	require.Contains(t, quick, "abort-pending")
	require.Contains(t, quick, "prune-stalled")
	for _, sc := range scs {
		if !quick[sc.Runbook] || !slices.Contains(sc.Tags, "main") {
			continue
		}
		n := 0
		for _, in := range sc.Inputs {
			if in.As != "" {
				n++
			}
		}
		assert.LessOrEqual(t, n, 3, "%s: %d chat inputs", sc.ID(), n)
	}
}
