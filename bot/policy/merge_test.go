package policy

import (
	"context"
	"testing"
	"time"

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
		set   Policy
		check func(t *testing.T, p Policy)
	}{
		{"approvers", Policy{Approvers: []string{"carol"}}, func(t *testing.T, p Policy) {
			why, err := CheckVoter(ctx, p, "U1", "U2", testDir)
			require.NoError(t, err)
			assert.Contains(t, why, "not an approver")
		}},
		{"required", Policy{Required: 3}, func(t *testing.T, p Policy) {
			assert.Equal(t, Pending, Decide(p, []Ballot{{Approve: true}, {Approve: true}}, now.Add(time.Hour), now))
		}},
		{"expires", Policy{Expires: Duration(5 * time.Minute)}, func(t *testing.T, p Policy) {
			assert.Equal(t, Duration(5*time.Minute), p.Expires)
			assert.Equal(t, 1, p.Required, "the built-in default fills the rest")
		}},
		{"require_groups", Policy{RequireGroups: []string{"group:dba"}}, func(t *testing.T, p Policy) {
			assert.Equal(t, Pending, Decide(p, []Ballot{{Approve: true}}, now.Add(time.Hour), now))
			assert.Equal(t, Approved, Decide(p, []Ballot{{Approve: true, Groups: []string{"group:dba"}}}, now.Add(time.Hour), now))
		}},
		{"self_approval", Policy{SelfApproval: true}, func(t *testing.T, p Policy) {
			why, err := CheckVoter(ctx, p, "U1", "U1", testDir)
			require.NoError(t, err)
			assert.Empty(t, why)
		}},
		{"reject", Policy{Reject: "quorum"}, func(t *testing.T, p Policy) {
			p.Required = 2
			assert.Equal(t, Pending, Decide(p, []Ballot{{}}, now.Add(time.Hour), now))
		}},
		{"break_glass", Policy{BreakGlass: []string{"alice"}}, func(t *testing.T, p Policy) {
			assert.Equal(t, []string{"alice"}, p.BreakGlass)
		}},
		{"runners", Policy{Runners: []string{"alice"}}, func(t *testing.T, p Policy) {
			c := Config{Default: p}
			r, err := c.MayStart(ctx, Start{Target: "t", Runbook: "rb", Changing: true}, "U2", testDir)
			require.NoError(t, err)
			require.NotNil(t, r)
			r, err = c.MayStart(ctx, Start{Target: "t", Runbook: "rb", Changing: true}, "U1", testDir)
			require.NoError(t, err)
			assert.Nil(t, r)
		}},
		{"read_only_runners", Policy{ReadOnlyRunners: []string{"alice"}}, func(t *testing.T, p Policy) {
			c := Config{Default: p}
			r, err := c.MayStart(ctx, Start{Target: "t", Runbook: "rb"}, "U2", testDir)
			require.NoError(t, err)
			require.NotNil(t, r)
		}},
	}
	for _, f := range fields {
		levels := map[string]Config{
			"default":   {Default: f.set},
			"target":    {Targets: map[string]Policy{"t": f.set}},
			"runbook":   {Runbooks: map[string]Policy{"rb": f.set}},
			"operation": {Operations: map[string]Policy{"x.op": f.set}},
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
		Default:    Policy{Approvers: []string{"group:ci-oncall"}, Runners: []string{"alice"}},
		Targets:    map[string]Policy{"prd": {Required: 2}},
		Runbooks:   map[string]Policy{"rb": {Expires: Duration(10 * time.Minute)}},
		Operations: map[string]Policy{"x.prune": {Approvers: []string{"group:dba"}}},
	}
	p := c.Resolve("prd", "rb", "x.prune")
	assert.Equal(t, []string{"group:dba"}, p.Approvers)
	assert.Equal(t, 2, p.Required)
	assert.Equal(t, Duration(10*time.Minute), p.Expires)
	assert.Equal(t, []string{"alice"}, p.Runners)
	q := c.Resolve("stg", "other", "")
	assert.Equal(t, []string{"group:ci-oncall"}, q.Approvers)
	assert.Equal(t, 1, q.Required)
	assert.Equal(t, Default.Expires, q.Expires)
}

func TestMayStart_OperationRunners(t *testing.T) {
	ctx := context.Background()
	c := Config{Operations: map[string]Policy{"x.prune": {Runners: []string{"carol"}}}}
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
