package concourse

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// teamRoles is the role Concourse itself asks, on the team of the object,
// for the API call behind each operation that changes something
// (accessor.DefaultRoles; API.md §4, §6–§9): aborting builds, pausing,
// unpausing and checking, clearing caches need pipeline-operator; landing,
// retiring and pruning a team's worker need member (a global worker:
// an admin). A target whose authority is Concourse asks the same of the
// person, through groundcrew.
var teamRoles = map[string]string{
	"concourse.abort_builds":         policy.RolePipelineOperator,
	"concourse.pause_pipeline":       policy.RolePipelineOperator,
	"concourse.unpause_pipeline":     policy.RolePipelineOperator,
	"concourse.check_resource":       policy.RolePipelineOperator,
	"concourse.check_resource_type":  policy.RolePipelineOperator,
	"concourse.clear_resource_cache": policy.RolePipelineOperator,
	"concourse.clear_task_cache":     policy.RolePipelineOperator,
	"concourse.prune_worker":         policy.RoleMember,
	"concourse.land_worker":          policy.RoleMember,
	"concourse.retire_worker":        policy.RoleMember,
}

// roleOrder lists the roles of a team's auth config, strongest first.
var roleOrder = []string{policy.RoleOwner, policy.RoleMember, policy.RolePipelineOperator, policy.RoleViewer}

// RoleOf returns the strongest role team's auth config gives a person known
// to Concourse as ids ("<connector>:<user>", e.g. "local:alice",
// "github:alice") or by e-mail (an entry "<connector>:<email>"), "" for
// none — as Concourse's accessor reads it (atc/api/accessor): users are
// compared without case; a role entry with no users and no groups holds
// everyone (legacy allow-all). Entries of groups are not counted: who is
// in an identity provider's group cannot be seen from here.
func RoleOf(t Team, ids []string, email string) string {
	for _, role := range roleOrder {
		a, ok := t.Auth[role]
		if !ok {
			continue
		}
		if len(a.Users) == 0 && len(a.Groups) == 0 {
			return role
		}
		for _, u := range a.Users {
			for _, id := range ids {
				if strings.EqualFold(u, id) {
					return role
				}
			}
			if _, user, ok := strings.Cut(u, ":"); ok && email != "" && strings.EqualFold(user, email) {
				return role
			}
		}
	}
	return ""
}

// adminTeam is the team whose owners are Concourse admins.
const adminTeam = "main"

// RoleBook reads the teams' auth configs of each target (GET
// /api/v1/teams, with the bot's account: an admin sees every team) and
// says the role of a Concourse identity on a team, keeping each target's
// configs at most TTL (a minute by default); under chatmodel.Fresh it
// reads them again. It is safe for concurrent use.
type RoleBook struct {
	clients map[string]*Client
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	teams   map[string]teamsRead
}

type teamsRead struct {
	teams map[string]Team
	at    time.Time
}

// NewRoleBook returns the role book of the targets' clients (ttl <= 0: a
// minute; now nil: time.Now).
func NewRoleBook(clients map[string]*Client, ttl time.Duration, now func() time.Time) *RoleBook {
	if ttl <= 0 || ttl > time.Minute {
		ttl = time.Minute
	}
	if now == nil {
		now = time.Now
	}
	return &RoleBook{clients: clients, ttl: ttl, now: now, teams: map[string]teamsRead{}}
}

// Role returns the strongest role ids or email hold on team of target:
// policy.RoleAdmin for an owner of main; for team "" (things of no team)
// RoleAdmin or "".
func (b *RoleBook) Role(ctx context.Context, target, team string, ids []string, email string) (string, error) {
	teams, err := b.read(ctx, target)
	if err != nil {
		return "", err
	}
	if main, ok := teams[adminTeam]; ok && RoleOf(main, ids, email) == policy.RoleOwner {
		return policy.RoleAdmin, nil
	}
	if team == "" {
		return "", nil
	}
	t, ok := teams[team]
	if !ok {
		return "", nil // a team the bot cannot see: no role can be shown
	}
	return RoleOf(t, ids, email), nil
}

func (b *RoleBook) read(ctx context.Context, target string) (map[string]Team, error) {
	b.mu.Lock()
	r, ok := b.teams[target]
	b.mu.Unlock()
	if ok && !chatmodel.WantsFresh(ctx) && b.now().Sub(r.at) < b.ttl {
		return r.teams, nil
	}
	cl, ok := b.clients[target]
	if !ok {
		return nil, fmt.Errorf("unknown Concourse target %q", target)
	}
	ts, err := cl.Teams(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the teams' auth of %s: %w", target, err)
	}
	r = teamsRead{teams: make(map[string]Team, len(ts)), at: b.now()}
	for _, t := range ts {
		r.teams[t.Name] = t
	}
	b.mu.Lock()
	b.teams[target] = r
	b.mu.Unlock()
	return r.teams, nil
}

// PersonRoles implements policy.Roles for chat users: their Concourse
// identities are those `users:` maps their platform id or name to, and
// the e-mail their chat platform vouches for (kept a minute, like the
// teams' auth; asked afresh under chatmodel.Fresh).
type PersonRoles struct {
	book *RoleBook
	// users maps a chat user's id or name to Concourse identities
	// ("local:alice").
	users  map[string][]string
	emails chatmodel.EmailResolver
	mu     sync.Mutex
	seen   map[string]emailRead
}

type emailRead struct {
	email string
	at    time.Time
}

// NewPersonRoles returns the roles of chat users through book: users maps
// a chat user's id or name to Concourse identities; emails (optional)
// gives a user's verified e-mail.
func NewPersonRoles(book *RoleBook, users map[string][]string, emails chatmodel.EmailResolver) *PersonRoles {
	return &PersonRoles{book: book, users: users, emails: emails, seen: map[string]emailRead{}}
}

var _ policy.Roles = (*PersonRoles)(nil)

// Role implements policy.Roles.
func (p *PersonRoles) Role(ctx context.Context, target, team string, u chatmodel.User) (string, error) {
	ids := append(append([]string(nil), p.users[u.ID]...), p.users[u.Name]...)
	email, err := p.email(ctx, u)
	if err != nil {
		return "", err
	}
	if len(ids) == 0 && email == "" {
		return "", fmt.Errorf("%s: %w", u.Display(), policy.ErrNoIdentity)
	}
	return p.book.Role(ctx, target, team, ids, email)
}

func (p *PersonRoles) email(ctx context.Context, u chatmodel.User) (string, error) {
	if p.emails == nil || u.ID == "" {
		return "", nil
	}
	p.mu.Lock()
	r, ok := p.seen[u.ID]
	p.mu.Unlock()
	if ok && !chatmodel.WantsFresh(ctx) && p.book.now().Sub(r.at) < p.book.ttl {
		return r.email, nil
	}
	email, err := p.emails.VerifiedEmail(ctx, u.ID)
	if err != nil {
		return "", fmt.Errorf("reading %s's e-mail on the chat platform: %w", u.Display(), err)
	}
	p.mu.Lock()
	p.seen[u.ID] = emailRead{email: email, at: p.book.now()}
	p.mu.Unlock()
	return email, nil
}
