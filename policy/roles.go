package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Concourse roles, strongest first (atc/api/accessor/roles.go): a
// stronger role satisfies a weaker requirement.
const (
	RoleOwner            = "owner"
	RoleMember           = "member"
	RolePipelineOperator = "pipeline-operator"
	RoleViewer           = "viewer"
	// RoleAdmin is a Concourse admin: the owner of the admin team (main).
	// It holds every role on every team, and alone may change things of
	// no team (global workers).
	RoleAdmin = "admin"
)

var roleRank = map[string]int{RoleViewer: 1, RolePipelineOperator: 2, RoleMember: 3, RoleOwner: 4, RoleAdmin: 5}

// Satisfies reports whether holding role got meets the requirement need.
func Satisfies(got, need string) bool { return roleRank[got] >= roleRank[need] && roleRank[got] > 0 }

// Roles says which Concourse role a chat user holds on a team of a target
// (a target's authority: concourse), as Concourse's own auth config says:
// through the user's mapped Concourse identity (`users:`) or verified
// e-mail. The answer may be cached for a minute; under chatmodel.Fresh it
// is asked afresh.
type Roles interface {
	// Role returns the user's strongest role on team ("" for none; team ""
	// asks for admin: RoleAdmin or ""), or an error wrapping
	// ErrNoIdentity when the user has no Concourse identity to look up.
	Role(ctx context.Context, target, team string, u chatmodel.User) (string, error)
}

// ErrNoIdentity is what Roles wraps when a chat user has no Concourse
// identity groundcrew can look up.
var ErrNoIdentity = errors.New("no Concourse identity")

// RoleDirectory is a Directory that can also say Concourse roles (the
// engine's); Count needs it for a gate with Roles.
type RoleDirectory interface {
	Directory
	Roles
}

// NeedRole decides whether u holds c.Role on every team of c: "" when
// they do, else why not, said to them ("you are a viewer of team
// `payments` on infra-prd; pausing its pipelines needs pipeline-operator
// or more"). Of no team, only an admin.
func NeedRole(ctx context.Context, c runmodel.RoleCheck, u chatmodel.User, roles Roles) (string, error) {
	if roles == nil {
		return "Concourse roles cannot be looked up here", nil
	}
	for _, team := range c.Teams {
		got, err := roles.Role(ctx, c.Target, team, u)
		if errors.Is(err, ErrNoIdentity) {
			return NoIdentity(c.Target, u), nil
		}
		if err != nil {
			return "", fmt.Errorf("looking up %s's Concourse role on %s: %w", u.Display(), c.Target, err)
		}
		if team == "" {
			if got != RoleAdmin {
				return fmt.Sprintf("only a Concourse admin (an owner of team `main`) of `%s` may change things of no team (a global worker), and %s is not one", c.Target, who(u)), nil
			}
			continue
		}
		if !Satisfies(got, c.Role) {
			held := "has no role on"
			if got != "" {
				held = "is " + article(got) + " " + got + " of"
			}
			return fmt.Sprintf("%s %s team `%s` on `%s`, and this change needs %s or more there (authority: concourse)", who(u), held, team, c.Target, c.Role), nil
		}
	}
	return "", nil
}

// NoIdentity says that u has no Concourse identity on target, and what
// to configure.
func NoIdentity(target string, u chatmodel.User) string {
	name := strings.TrimPrefix(u.Display(), "@")
	return fmt.Sprintf("%s has no Concourse identity groundcrew can look up on `%s` (authority: concourse): add it under `users:` in groundcrew.yaml (`%s: local:%s`, as the team's auth names users), or give the chat account a verified e-mail the team's auth lists",
		who(u), target, name, name)
}

func who(u chatmodel.User) string { return u.Display() }

func article(role string) string {
	if strings.HasPrefix(role, "owner") || strings.HasPrefix(role, "admin") {
		return "an"
	}
	return "a"
}

// RoleLine says, on a gate, what Concourse role its approvers need
// (authority: concourse), "" when none is asked.
func RoleLine(p runmodel.Policy) string {
	c := p.Roles
	if c == nil {
		return ""
	}
	var teams []string
	admin := false
	for _, t := range c.Teams {
		if t == "" {
			admin = true
			continue
		}
		teams = append(teams, "`"+t+"`")
	}
	var parts []string
	if len(teams) > 0 {
		parts = append(parts, fmt.Sprintf("%s or more on %s", c.Role, strings.Join(teams, ", ")))
	}
	if admin {
		parts = append(parts, "a Concourse admin for things of no team")
	}
	return fmt.Sprintf("Concourse roles decide too (authority: concourse): each approver needs %s, on `%s`", strings.Join(parts, "; "), c.Target)
}
