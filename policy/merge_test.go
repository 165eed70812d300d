package policy

import (
	"context"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each field set alone, at each level, still applies: nothing is replaced
// by the built-in default because the other fields are unset.
func TestResolve_EachFieldAloneApplies(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	fields := []struct {
		name  string
		set   runmodel.Policy
		check func(t *testing.T, p runmodel.Policy)
	}{
		{"approvers", runmodel.Policy{Approvers: []string{"carol"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Contains(t, refusal(t, p, "U2", false), "not an approver")
		}},
		{"required", runmodel.Policy{Required: 3}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, runmodel.GatePending, Decide(p, []Ballot{{Approve: true}, {Approve: true}}, now.Add(time.Hour), now))
		}},
		{"expires", runmodel.Policy{Expires: runmodel.Duration(5 * time.Minute)}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, runmodel.Duration(5*time.Minute), p.Expires)
			assert.Equal(t, 1, p.Required, "the built-in default fills the rest")
		}},
		{"require_groups", runmodel.Policy{RequireGroups: []string{"group:dba"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, runmodel.GatePending, Decide(p, []Ballot{{Approve: true}}, now.Add(time.Hour), now))
			assert.Equal(t, runmodel.GateApproved, Decide(p, []Ballot{{Approve: true, Groups: []string{"group:dba"}}}, now.Add(time.Hour), now))
		}},
		{"self_approval", runmodel.Policy{SelfApproval: true}, func(t *testing.T, p runmodel.Policy) {
			assert.Empty(t, refusal(t, p, "U1", false))
		}},
		{"reject", runmodel.Policy{Reject: "quorum"}, func(t *testing.T, p runmodel.Policy) {
			p.Required = 2
			assert.Equal(t, runmodel.GatePending, Decide(p, []Ballot{{}}, now.Add(time.Hour), now))
		}},
		{"break_glass", runmodel.Policy{BreakGlass: []string{"alice"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, []string{"alice"}, p.BreakGlass)
		}},
		{"runners", runmodel.Policy{Runners: []string{"alice"}}, func(t *testing.T, p runmodel.Policy) {
			c := Config{Default: p}
			r, err := c.MayStart(ctx, Start{Target: "t", Runbook: "rb", Changing: true}, "U2", testDir)
			require.NoError(t, err)
			require.NotNil(t, r)
			r, err = c.MayStart(ctx, Start{Target: "t", Runbook: "rb", Changing: true}, "U1", testDir)
			require.NoError(t, err)
			assert.Nil(t, r)
		}},
		{"read_only_runners", runmodel.Policy{ReadOnlyRunners: []string{"alice"}}, func(t *testing.T, p runmodel.Policy) {
			c := Config{Default: p}
			r, err := c.MayStart(ctx, Start{Target: "t", Runbook: "rb"}, "U2", testDir)
			require.NoError(t, err)
			require.NotNil(t, r)
		}},
	}
	for _, f := range fields {
		levels := map[string]Config{
			"default":   {Default: f.set},
			"target":    {Targets: map[string]runmodel.Policy{"t": f.set}},
			"runbook":   {Runbooks: map[string]runmodel.Policy{"rb": f.set}},
			"operation": {Operations: map[string]runmodel.Policy{"x.op": f.set}},
		}
		for lvl, c := range levels {
			t.Run(f.name+"/"+lvl, func(t *testing.T) {
				p := c.Resolve("t", "rb", "x.op")
				if f.name == "runners" || f.name == "read_only_runners" {
					// Who may start is decided by MayStart over every level.
					r, err := c.MayStart(ctx, Start{Target: "t", Runbook: "rb", Ops: []string{"x.op"}, Changing: f.name == "runners"}, "U2", testDir)
					require.NoError(t, err)
					require.NotNil(t, r, "%s set alone at the %s level applies", f.name, lvl)
					return
				}
				f.check(t, p)
			})
		}
		t.Run(f.name+"/default-alone", func(t *testing.T) { f.check(t, Config{Default: f.set}.Resolve("t", "rb", "")) })
	}
}

func TestResolve_MoreSpecificLevelsWinFieldByField(t *testing.T) {
	c := Config{
		Default:    runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Runners: []string{"alice"}},
		Targets:    map[string]runmodel.Policy{"prd": {Required: 2}},
		Runbooks:   map[string]runmodel.Policy{"rb": {Expires: runmodel.Duration(10 * time.Minute)}},
		Operations: map[string]runmodel.Policy{"x.prune": {Approvers: []string{"group:dba"}}},
	}
	p := c.Resolve("prd", "rb", "x.prune")
	assert.Equal(t, []string{"group:dba"}, p.Approvers)
	assert.Equal(t, 2, p.Required)
	assert.Equal(t, runmodel.Duration(10*time.Minute), p.Expires)
	assert.Equal(t, []string{"alice"}, p.Runners)
	q := c.Resolve("stg", "other", "")
	assert.Equal(t, []string{"group:ci-oncall"}, q.Approvers)
	assert.Equal(t, 1, q.Required)
	assert.Equal(t, runmodel.DefaultPolicy.Expires, q.Expires)
}

func TestMayStart_OperationRunners(t *testing.T) {
	ctx := context.Background()
	c := Config{Operations: map[string]runmodel.Policy{"x.prune": {Runners: []string{"carol"}}}}
	s := Start{Target: "t", Runbook: "rb", Ops: []string{"x.list", "x.prune"}, Changing: true}
	r, err := c.MayStart(ctx, s, "U2", testDir)
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.Equal(t, "approvals.operations.x.prune.runners", r.Source)
	assert.Contains(t, r.Message("rb", "t"), "You may not run `rb` on `t`: policy `approvals.operations.x.prune.runners` allows only @carol to start runbooks that change things there.")
	r, err = c.MayStart(ctx, s, "U3", testDir)
	require.NoError(t, err)
	assert.Nil(t, r)
	r, err = c.MayStart(ctx, Start{Target: "t", Runbook: "other", Ops: []string{"x.list"}, Changing: true}, "U2", testDir)
	require.NoError(t, err)
	assert.Nil(t, r, "a runbook that does not call the operation is not restricted by it")
}
