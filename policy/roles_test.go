package policy

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// rolesDir is a Directory that says Concourse roles: user id → team → role.
type rolesDir struct {
	dir
	roles map[string]map[string]string
}

func (d rolesDir) Role(_ context.Context, _, team string, u chatmodel.User) (string, error) {
	r, ok := d.roles[u.ID]
	if !ok {
		return "", fmt.Errorf("%s: %w", u.Display(), ErrNoIdentity)
	}
	return r[team], nil
}

func TestNeedRole(t *testing.T) {
	ctx := context.Background()
	d := rolesDir{dir: teamDir, roles: map[string]map[string]string{
		"U1": {"payments": RoleMember},
		"U2": {"payments": RoleViewer, "platform": RoleOwner},
		"U3": {"": RoleAdmin, "payments": RoleAdmin, "platform": RoleAdmin},
	}}
	check := runmodel.RoleCheck{Target: "infra-prd", Role: RolePipelineOperator, Teams: []string{"payments"}}
	why := func(c runmodel.RoleCheck, id string) string {
		w, err := NeedRole(ctx, c, chatmodel.User{ID: id, Name: id}, d)
		require.NoError(t, err)
		return w
	}
	assert.Empty(t, why(check, "U1"), "a member is more than a pipeline-operator")
	assert.Equal(t, "@U2 is a viewer of team `payments` on `infra-prd`, and this change needs pipeline-operator or more there (authority: concourse)", why(check, "U2"))
	assert.Empty(t, why(check, "U3"), "admins hold every role")
	assert.Contains(t, why(check, "U4"), "@U4 has no Concourse identity groundcrew can look up on `infra-prd` (authority: concourse): add it under `users:` in groundcrew.yaml (`U4: local:U4`")

	global := runmodel.RoleCheck{Target: "infra-prd", Role: RoleMember, Teams: []string{"payments", ""}}
	assert.Contains(t, why(global, "U1"), "only a Concourse admin (an owner of team `main`) of `infra-prd` may change things of no team")
	assert.Empty(t, why(global, "U3"))

	// Count asks it of every approval, break-glass too.
	p := runmodel.Policy{Required: 1, BreakGlass: []string{"bob"}, Roles: &check}
	s, err := Count(ctx, p, "U9", Approval{Voter: chatmodel.User{ID: "U2", Name: "bob"}}, d)
	require.NoError(t, err)
	assert.False(t, s.Counts())
	assert.Contains(t, s.Why.ToVoter(), "is a viewer of team `payments`")
	assert.Equal(t, s.Why.ToVoter(), s.Why.NoLonger())
	s, err = Count(ctx, p, "U9", Approval{Voter: chatmodel.User{ID: "U2", Name: "bob"}, BreakGlass: true}, d)
	require.NoError(t, err)
	assert.False(t, s.Counts(), "breaking glass does not make a viewer an operator")
	s, err = Count(ctx, p, "U9", Approval{Voter: chatmodel.User{ID: "U1", Name: "alice"}}, d)
	require.NoError(t, err)
	assert.True(t, s.Counts())

	assert.Equal(t, "Concourse roles decide too (authority: concourse): each approver needs member or more on `payments`; a Concourse admin for things of no team, on `infra-prd`", RoleLine(runmodel.Policy{Roles: &global}))
}
