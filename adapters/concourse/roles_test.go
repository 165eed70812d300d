package concourse

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// RoleOf reads a team's auth as Concourse's accessor does.
func TestRoleOf(t *testing.T) {
	team := Team{Name: "payments", Auth: map[string]RoleAuth{
		"owner":             {Users: []string{"local:olga"}, Groups: []string{}},
		"member":            {Users: []string{"github:Pam", "oidc:mia@example.com"}, Groups: []string{"github:acme:payments"}},
		"pipeline-operator": {Users: []string{"local:olive"}},
		"viewer":            {Users: []string{"local:vic", "local:olive"}},
	}}
	cases := []struct {
		ids   []string
		email string
		want  string
	}{
		{[]string{"local:olga"}, "", policy.RoleOwner},
		{[]string{"github:pam"}, "", policy.RoleMember},
		{[]string{"local:olive"}, "", policy.RolePipelineOperator},
		{[]string{"local:vic"}, "", policy.RoleViewer},
		{[]string{"local:nobody"}, "", ""},
		{[]string{"github:olga"}, "", ""}, // another connector is another person
		{nil, "Mia@Example.com", policy.RoleMember},
		{nil, "", ""},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, RoleOf(team, c.ids, c.email), "%v %s", c.ids, c.email)
	}
	// A role entry with no users and no groups holds everyone.
	open := Team{Name: "legacy", Auth: map[string]RoleAuth{"owner": {Users: []string{}, Groups: []string{}}}}
	assert.Equal(t, policy.RoleOwner, RoleOf(open, []string{"local:anyone"}, ""))
}

type emailsStub map[string]string

func (e emailsStub) VerifiedEmail(_ context.Context, id string) (string, error) { return e[id], nil }

// The role book reads the teams' auth of the live target (the simulator),
// keeps it a minute, and reads it again under chatmodel.Fresh.
func TestRoleBook(t *testing.T) {
	w := threeTeams().
		AddUser("pam", "pam", map[string]string{"payments": concoursesim.RoleMember}).
		AddUser("vic", "vic", map[string]string{"payments": concoursesim.RoleViewer}).
		AddUser("boss", "boss", map[string]string{"main": concoursesim.RoleOwner})
	e := newProvEnv(t, w)
	book := NewRoleBook(map[string]*Client{"infra-prd": e.c}, 0, e.clock.Now)
	roles := NewPersonRoles(book, map[string][]string{"UPAM": {"local:pam"}, "vic": {"local:vic"}, "UBOSS": {"local:boss"}}, emailsStub{"UMAIL": "pam"})
	ctx := context.Background()
	role := func(ctx context.Context, team string, u chatmodel.User) string {
		t.Helper()
		r, err := roles.Role(ctx, "infra-prd", team, u)
		require.NoError(t, err)
		return r
	}
	assert.Equal(t, policy.RoleMember, role(ctx, "payments", chatmodel.User{ID: "UPAM"}))
	assert.Equal(t, policy.RoleViewer, role(ctx, "payments", chatmodel.User{ID: "UVIC", Name: "vic"}), "by name")
	assert.Equal(t, "", role(ctx, "platform", chatmodel.User{ID: "UPAM"}))
	assert.Equal(t, policy.RoleAdmin, role(ctx, "platform", chatmodel.User{ID: "UBOSS"}), "an owner of main is an admin of every team")
	assert.Equal(t, policy.RoleAdmin, role(ctx, "", chatmodel.User{ID: "UBOSS"}), "things of no team: admins")
	assert.Equal(t, "", role(ctx, "", chatmodel.User{ID: "UPAM"}))
	// The e-mail matches the user part of an entry: "local:pam" here.
	assert.Equal(t, policy.RoleMember, role(ctx, "payments", chatmodel.User{ID: "UMAIL"}))

	_, err := roles.Role(ctx, "infra-prd", "payments", chatmodel.User{ID: "UNONE", Name: "nobody"})
	assert.True(t, errors.Is(err, policy.ErrNoIdentity), "%v", err)

	// Cached for a minute: pam demoted on the server is still a member…
	require.NoError(t, e.srv.SetRole("pam", "payments", concoursesim.RoleViewer))
	assert.Equal(t, policy.RoleMember, role(ctx, "payments", chatmodel.User{ID: "UPAM"}))
	// …but not when asked afresh (the re-check before a call), nor a
	// minute later.
	assert.Equal(t, policy.RoleViewer, role(chatmodel.Fresh(ctx), "payments", chatmodel.User{ID: "UPAM"}))
	require.NoError(t, e.srv.SetRole("pam", "payments", concoursesim.RoleOwner))
	e.clock.Advance(61 * time.Second)
	assert.Equal(t, policy.RoleOwner, role(ctx, "payments", chatmodel.User{ID: "UPAM"}))
}

// Every operation that changes a team's things asks the role Concourse
// itself asks for its API call.
func TestTeamRoles(t *testing.T) {
	e := newProvEnv(t, concoursesim.NewWorld())
	for _, op := range e.p.Ops() {
		if op.Class == "read" {
			assert.Empty(t, op.TeamRole, op.Name)
			assert.Empty(t, op.Owner, op.Name)
			continue
		}
		assert.NotEmpty(t, op.TeamRole, "%s changes a team's things: which Concourse role does it need?", op.Name)
		assert.NotEmpty(t, op.Owner, "%s changes things: whose can they be (opmodel.Owner)?", op.Name)
	}
}
