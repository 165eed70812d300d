package policy

import (
	"context"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/stretchr/testify/assert"
)

// dir is a test Directory: names to ids, groups to member ids.
type dir struct {
	users  map[string]string
	groups map[string][]string
}

func (d dir) UserID(_ context.Context, entry string) (string, error) {
	name := entry
	if len(name) > 0 && name[0] == '@' {
		name = name[1:]
	}
	if id, ok := d.users[name]; ok {
		return id, nil
	}
	for _, id := range d.users {
		if id == name {
			return id, nil
		}
	}
	return "", nil
}

func (d dir) Member(_ context.Context, g, userID string) (bool, error) {
	for _, id := range d.groups[g] {
		if id == userID {
			return true, nil
		}
	}
	return false, nil
}

var testDir = dir{
	users:  map[string]string{"alice": "U1", "bob": "U2", "carol": "U3", "dave": "U4"},
	groups: map[string][]string{"ci-oncall": {"U2", "U3"}, "dba": {"U3"}},
}

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	yes := func(groups ...string) Ballot { return Ballot{Approve: true, Groups: groups} }
	no := Ballot{}
	cases := []struct {
		name   string
		policy runmodel.Policy
		votes  []Ballot
		at     time.Time
		want   runmodel.GateDecision
	}{
		{"no votes", runmodel.Policy{}, nil, now, runmodel.GatePending},
		{"one of one", runmodel.Policy{}, []Ballot{yes()}, now, runmodel.GateApproved},
		{"one of two", runmodel.Policy{Required: 2}, []Ballot{yes()}, now, runmodel.GatePending},
		{"two of two", runmodel.Policy{Required: 2}, []Ballot{yes(), yes()}, now, runmodel.GateApproved},
		{"one reject rejects", runmodel.Policy{Required: 2}, []Ballot{yes(), no}, now, runmodel.GateRejected},
		{"quorum reject needs Required rejections", runmodel.Policy{Required: 2, Reject: "quorum"}, []Ballot{yes(), no}, now, runmodel.GatePending},
		{"quorum reject reached", runmodel.Policy{Required: 2, Reject: "quorum"}, []Ballot{no, no}, now, runmodel.GateRejected},
		{"required group missing", runmodel.Policy{Required: 2, RequireGroups: []string{"group:dba"}}, []Ballot{yes(), yes()}, now, runmodel.GatePending},
		{"required group covered", runmodel.Policy{Required: 2, RequireGroups: []string{"group:dba"}}, []Ballot{yes(), yes("group:dba")}, now, runmodel.GateApproved},
		{"expired", runmodel.Policy{Required: 2}, []Ballot{yes()}, now.Add(31 * time.Minute), runmodel.GateExpired},
		{"break-glass approves alone", runmodel.Policy{Required: 3}, []Ballot{{Approve: true, BreakGlass: true}}, now, runmodel.GateApproved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, Decide(c.policy, c.votes, now.Add(30*time.Minute), c.at))
		})
	}
	assert.Equal(t, "1 more approval, one from @dba", Missing(runmodel.Policy{Required: 2, RequireGroups: []string{"group:dba"}}, []Ballot{yes()}))
}

func TestPolicy_DescribeAndNarrow(t *testing.T) {
	p := runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 2, RequireGroups: []string{"group:dba"}}
	assert.Equal(t, "Needs 2 approvals from @ci-oncall (at least one from each of @dba) · not @alice (requester)", Describe(p, "@alice"))
	q := runmodel.Policy{Required: 1, Expires: runmodel.Duration(30 * time.Minute)}.Narrow([]string{"group:x"}, 2, 10*time.Minute)
	assert.Equal(t, 2, q.Required)
	assert.Equal(t, runmodel.Duration(10*time.Minute), q.Expires)
	assert.Equal(t, []string{"group:x"}, q.Approvers)
	r := runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 3, Expires: runmodel.Duration(10 * time.Minute)}.Narrow([]string{"@mallory"}, 1, time.Hour)
	assert.Equal(t, []string{"group:ci-oncall"}, r.Approvers, "a runbook cannot widen the approvers")
	assert.Equal(t, [][]string{{"@mallory"}}, r.AlsoApprovers, "it narrows them: approvers must be in both")
	assert.Equal(t, 3, r.Required, "nor lower the count")
	assert.Equal(t, runmodel.Duration(10*time.Minute), r.Expires, "nor lengthen the expiry")
	assert.Equal(t, "Needs 3 approvals from @ci-oncall who are also @mallory · not @alice (requester)", Describe(r, "@alice"))
}
