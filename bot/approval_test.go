package bot

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	tAlice = User{ID: "U1", Name: "alice"}
	tBob   = User{ID: "U2", Name: "bob"}
	tCarol = User{ID: "U3", Name: "carol"}
	tDave  = User{ID: "U4", Name: "dave"}
)

func members(groups map[string][]string) MemberFunc {
	return func(_ context.Context, g string, u User) (bool, error) {
		for _, id := range groups[g] {
			if id == u.ID {
				return true, nil
			}
		}
		return false, nil
	}
}

func TestCheckVoter(t *testing.T) {
	m := members(map[string][]string{"ci-oncall": {"U2", "U3"}})
	cases := []struct {
		name   string
		policy Policy
		voter  User
		want   string // "" = counts
	}{
		{"anyone but the requester", Policy{}, tBob, ""},
		{"requester refused", Policy{}, tAlice, "you started this run"},
		{"requester allowed by policy", Policy{SelfApproval: true}, tAlice, ""},
		{"group member", Policy{Approvers: []string{"group:ci-oncall"}}, tCarol, ""},
		{"not in group", Policy{Approvers: []string{"group:ci-oncall"}}, tDave, "not an approver for this gate (approvers: @ci-oncall)"},
		{"user by name", Policy{Approvers: []string{"@dave"}}, tDave, ""},
		{"user by id", Policy{Approvers: []string{"U4"}}, tDave, ""},
		{"requester in the group still refused", Policy{Approvers: []string{"group:ci-oncall"}}, User{ID: "U2", Name: "bob"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := CheckVoter(context.Background(), c.policy, tAlice, c.voter, m)
			require.NoError(t, err)
			if c.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, c.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	yes := func(u User, groups ...string) Vote { return Vote{User: u, Approve: true, Groups: groups} }
	no := func(u User) Vote { return Vote{User: u} }
	cases := []struct {
		name   string
		policy Policy
		votes  []Vote
		at     time.Time
		want   GateDecision
	}{
		{"no votes", Policy{}, nil, now, GatePending},
		{"one of one", Policy{}, []Vote{yes(tBob)}, now, GateApproved},
		{"one of two", Policy{Required: 2}, []Vote{yes(tBob)}, now, GatePending},
		{"two of two", Policy{Required: 2}, []Vote{yes(tBob), yes(tCarol)}, now, GateApproved},
		{"one reject rejects", Policy{Required: 2}, []Vote{yes(tBob), no(tCarol)}, now, GateRejected},
		{"quorum reject needs Required rejections", Policy{Required: 2, Reject: "quorum"}, []Vote{yes(tBob), no(tCarol)}, now, GatePending},
		{"quorum reject reached", Policy{Required: 2, Reject: "quorum"}, []Vote{no(tBob), no(tCarol)}, now, GateRejected},
		{"required group missing", Policy{Required: 2, RequireGroups: []string{"group:dba"}}, []Vote{yes(tBob), yes(tCarol)}, now, GatePending},
		{"required group covered", Policy{Required: 2, RequireGroups: []string{"group:dba"}}, []Vote{yes(tBob), yes(tCarol, "group:dba")}, now, GateApproved},
		{"expired", Policy{Required: 2}, []Vote{yes(tBob)}, now.Add(31 * time.Minute), GateExpired},
		{"break-glass approves alone", Policy{Required: 3}, []Vote{{User: tBob, Approve: true, BreakGlass: true}}, now, GateApproved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &Gate{Policy: c.policy, Votes: c.votes, ExpiresAt: now.Add(30 * time.Minute)}
			assert.Equal(t, c.want, Decide(g, c.at))
		})
	}
}

func TestGate_OneVotePerPerson(t *testing.T) {
	g := &Gate{Policy: Policy{Required: 2}}
	g.castVote(Vote{User: tBob, Approve: true})
	g.castVote(Vote{User: tBob, Approve: true, Via: "button"})
	assert.Len(t, g.Votes, 1)
	assert.Equal(t, GatePending, Decide(g, time.Now()))
	assert.Equal(t, "1 more approval", Missing(g))
	g.castVote(Vote{User: tBob, Approve: false})
	assert.Equal(t, GateRejected, Decide(g, time.Now()), "changing one's mind replaces the vote")
	assert.True(t, g.withdraw("U2", false))
	assert.Empty(t, g.Votes)
}

func TestPolicy_DescribeAndTighten(t *testing.T) {
	p := Policy{Approvers: []string{"group:ci-oncall"}, Required: 2, RequireGroups: []string{"group:dba"}}
	assert.Equal(t, "Needs 2 approvals from @ci-oncall (at least one from each of @dba) · not @alice (requester)", p.Describe(tAlice))
	q := Policy{Required: 1, Expires: Duration(30 * time.Minute)}.Tighten([]string{"group:x"}, 2, 10*time.Minute)
	assert.Equal(t, 2, q.Required)
	assert.Equal(t, Duration(10*time.Minute), q.Expires)
	assert.Equal(t, []string{"group:x"}, q.Approvers)
	r := Policy{Approvers: []string{"group:ci-oncall"}, Required: 3}.Tighten([]string{"@mallory"}, 1, time.Hour)
	assert.Equal(t, []string{"group:ci-oncall"}, r.Approvers, "a runbook cannot widen the approvers")
	assert.Equal(t, 3, r.Required, "nor lower the count")
}

func TestPlanHash_BindsIdentityNotDetail(t *testing.T) {
	a := Plan{Op: "concourse.prune_worker", Target: "infra-prd", Items: []PlanItem{{Kind: "worker", ID: "w-0", Attrs: map[string]string{"state": "stalled"}, Detail: "41 min ago"}}}
	b := a
	b.Items = []PlanItem{{Kind: "worker", ID: "w-0", Attrs: map[string]string{"state": "stalled"}, Detail: "43 min ago"}}
	b.Summary = "different words"
	assert.Equal(t, a.Hash(), b.Hash())
	c := a
	c.Items = []PlanItem{{Kind: "worker", ID: "w-0", Attrs: map[string]string{"state": "running"}}}
	assert.NotEqual(t, a.Hash(), c.Hash())
	d := a
	d.Target = "infra-stg"
	assert.NotEqual(t, a.Hash(), d.Hash())
	assert.Contains(t, PlanDiff(&a, &c), "state stalled→running")
}
