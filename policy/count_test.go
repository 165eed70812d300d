package policy

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// refusal is what Count says to the voter with id voterID (an active
// person) on a gate of alice's (U1) run; "" when the approval counts.
func refusal(t *testing.T, p runmodel.Policy, voterID string, breakGlass bool) string {
	t.Helper()
	st, err := Count(context.Background(), p, "U1", Approval{Voter: chatmodel.User{ID: voterID, Kind: chatmodel.UserPerson}, BreakGlass: breakGlass}, testDir)
	require.NoError(t, err)
	require.Equal(t, st.Why.IsZero(), st.Counts())
	return st.Why.ToVoter()
}

func TestCount(t *testing.T) {
	cases := []struct {
		name   string
		policy runmodel.Policy
		voter  string
		want   string // "" = counts
	}{
		{"anyone but the requester", runmodel.Policy{}, "U2", ""},
		{"requester refused", runmodel.Policy{}, "U1", "you started this run"},
		{"requester allowed by policy", runmodel.Policy{SelfApproval: true}, "U1", ""},
		{"group member", runmodel.Policy{Approvers: []string{"group:ci-oncall"}}, "U3", ""},
		{"not in group", runmodel.Policy{Approvers: []string{"group:ci-oncall"}}, "U4", "not an approver for this gate (approvers: @ci-oncall)"},
		{"user by name", runmodel.Policy{Approvers: []string{"@dave"}}, "U4", ""},
		{"user by id", runmodel.Policy{Approvers: []string{"U4"}}, "U4", ""},
		{"requester in the group still refused", runmodel.Policy{Approvers: []string{"group:ci-oncall"}}, "U2", ""},
		{"a name is not an id", runmodel.Policy{Approvers: []string{"dave"}}, "dave", "not an approver"},
		{"empty id never matches", runmodel.Policy{Approvers: []string{"ghost"}}, "", "the platform did not say who you are"},
		{"narrowed: allowed by both", runmodel.Policy{Approvers: []string{"group:ci-oncall"}, AlsoApprovers: [][]string{{"carol"}}}, "U3", ""},
		{"narrowed: allowed by the config only", runmodel.Policy{Approvers: []string{"group:ci-oncall"}, AlsoApprovers: [][]string{{"carol"}}}, "U2", "not an approver for this gate (approvers: @ci-oncall who are also @carol)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := refusal(t, c.policy, c.voter, false)
			if c.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, c.want)
			}
		})
	}
}

// TestCount_OneRuleTwoWordings: what refuses a vote when it is cast is what
// voids it right before the call; only the wording differs (to the voter,
// then of them on the gate).
func TestCount_OneRuleTwoWordings(t *testing.T) {
	ctx := context.Background()
	person := func(id, name string) chatmodel.User {
		return chatmodel.User{ID: id, Name: name, Kind: chatmodel.UserPerson}
	}
	cases := []struct {
		name      string
		policy    runmodel.Policy
		voter     chatmodel.User
		glass     bool
		toVoter   string
		noLonger  string
		wantGroup []string
	}{
		{"deactivated", runmodel.Policy{}, chatmodel.User{ID: "U2", Name: "bob", Kind: chatmodel.UserDeactivated}, false,
			"this account is deactivated", "the account is deactivated", nil},
		{"gone", runmodel.Policy{}, chatmodel.User{ID: "U2", Kind: chatmodel.UserUnknown}, false,
			"the platform does not know this account", "the account no longer exists", nil},
		{"bot", runmodel.Policy{}, chatmodel.User{ID: "U2", Kind: chatmodel.UserBot}, false,
			"bot accounts cannot act on runs", "the account is a bot", nil},
		{"requester", runmodel.Policy{}, person("U1", "alice"), false,
			"you started this run; someone else must approve it", "they started this run", nil},
		{"left the group", runmodel.Policy{Approvers: []string{"group:ci-oncall"}}, person("U4", "dave"), false,
			"you are not an approver for this gate (approvers: @ci-oncall)", "not in @ci-oncall any more", nil},
		{"handle given away", runmodel.Policy{Approvers: []string{"erin"}}, person("U4", "erin"), false,
			"you are not an approver for this gate (approvers: @erin)", "the handle @erin now names another account (or none)", nil},
		{"not among the entries", runmodel.Policy{Approvers: []string{"bob", "group:dba"}}, person("U4", "dave"), false,
			"you are not an approver for this gate (approvers: @bob, @dba)", "no longer one of the approvers (@bob, @dba)", nil},
		{"break glass", runmodel.Policy{BreakGlass: []string{"bob"}}, person("U4", "dave"), true,
			"only @bob may break glass", "no longer one of the break-glass users (@bob)", nil},
		{"break glass counts without being an approver", runmodel.Policy{Approvers: []string{"group:dba"}, BreakGlass: []string{"bob"}}, person("U2", "bob"), true,
			"", "", nil},
		{"counts, with the required groups it covers", runmodel.Policy{Approvers: []string{"group:ci-oncall"}, RequireGroups: []string{"group:dba"}}, person("U3", "carol"), false,
			"", "", []string{"group:dba"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := Count(ctx, c.policy, "U1", Approval{Voter: c.voter, BreakGlass: c.glass}, testDir)
			require.NoError(t, err)
			assert.Equal(t, c.toVoter == "", st.Counts())
			assert.Equal(t, c.toVoter, st.Why.ToVoter())
			assert.Equal(t, c.noLonger, st.Why.NoLonger())
			assert.Equal(t, c.wantGroup, st.Groups)
		})
	}
}
