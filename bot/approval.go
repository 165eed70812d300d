package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// ballots returns the gate's counted votes as Decide sees them.
func ballots(g *runmodel.Gate) []policy.Ballot {
	out := make([]policy.Ballot, 0, len(g.Votes))
	for _, v := range g.Votes {
		out = append(out, policy.Ballot{Approve: v.Approve, BreakGlass: v.BreakGlass, Groups: v.Groups})
	}
	return out
}

// Decide returns the gate's decision from its counted votes at time now.
func Decide(g *runmodel.Gate, now time.Time) runmodel.GateDecision {
	return policy.Decide(g.Policy, ballots(g), g.ExpiresAt, now)
}

// Missing says what a pending gate still needs ("1 more approval, one from @dba").
func Missing(g *runmodel.Gate) string { return policy.Missing(g.Policy, ballots(g)) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// staleGroupLimit is how long group members may be served from a stale
// entry when the platform cannot be reached.
const staleGroupLimit = 24 * time.Hour

// directory implements policy.Directory over the chat adapter: names in
// policies become platform ids through its IdentityResolver (without one,
// names are ids), group members through its GroupResolver; both cached.
type directory struct {
	// roles says Concourse roles (authority: concourse); nil: none.
	roles   policy.Roles
	log     *slog.Logger
	users   chatmodel.IdentityResolver
	groups  chatmodel.GroupResolver
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	ids     map[string]idEntry
	members map[string]groupEntry
}

type idEntry struct {
	id string
	at time.Time
}

type groupEntry struct {
	members map[string]bool
	at      time.Time
}

var _ policy.Directory = (*directory)(nil)

// UserID implements policy.Directory.
func (d *directory) UserID(ctx context.Context, entry string) (string, error) {
	name := strings.TrimPrefix(strings.TrimSpace(entry), "@")
	if d.users == nil || name == "" {
		return name, nil
	}
	fresh := chatmodel.WantsFresh(ctx)
	d.mu.Lock()
	ent, ok := d.ids[name]
	d.mu.Unlock()
	if ok && !fresh && d.now().Sub(ent.at) <= d.ttl {
		return ent.id, nil
	}
	u, err := d.users.ResolveUser(ctx, name)
	switch {
	case errors.Is(err, chatmodel.ErrNotFound):
		u = chatmodel.User{}
	case err != nil:
		return "", err
	}
	id := u.ID
	if u.NotAPerson() != "" {
		id = "" // a bot or deactivated account named in a policy approves nothing
	}
	d.mu.Lock()
	d.ids[name] = idEntry{id: id, at: d.now()}
	d.mu.Unlock()
	return id, nil
}

// Member implements policy.Directory.
func (d *directory) Member(ctx context.Context, group, userID string) (bool, error) {
	if d.groups == nil {
		return false, nil
	}
	fresh := chatmodel.WantsFresh(ctx)
	d.mu.Lock()
	ent, ok := d.members[group]
	d.mu.Unlock()
	if !ok || fresh || d.now().Sub(ent.at) > d.ttl {
		ids, err := d.groups.GroupMembers(ctx, group)
		switch {
		case errors.Is(err, chatmodel.ErrNotFound):
			ids = nil // a group that does not exist has no members
		case err != nil:
			// The one group cache: when the platform cannot be asked, a
			// list up to staleGroupLimit old still answers (logged) —
			// except for a look-up that must be fresh (the re-check
			// before a destructive call), which fails instead.
			if ok && !fresh && d.now().Sub(ent.at) < staleGroupLimit {
				if d.log != nil {
					d.log.Warn("group members refresh failed; using the cached list", "group", group, "age", d.now().Sub(ent.at).Round(time.Second), "err", err)
				}
				return ent.members[userID], nil
			}
			return false, err
		}
		ent = groupEntry{members: map[string]bool{}, at: d.now()}
		for _, id := range ids {
			ent.members[id] = true
		}
		d.mu.Lock()
		d.members[group] = ent
		d.mu.Unlock()
	}
	return ent.members[userID], nil
}

// resolveNames looks up every user named in the policy and the runbooks'
// approvals once at start (filling the directory's cache), and logs the
// names the platform does not know: they approve nothing.
func (d *directory) resolveNames(ctx context.Context, approvals policy.Config, lib Library) {
	if d.users == nil {
		return
	}
	seen := map[string]bool{}
	check := func(where string, list []string) {
		for _, a := range list {
			if _, ok := policy.Group(a); ok || seen[a] {
				continue
			}
			seen[a] = true
			id, err := d.UserID(ctx, a)
			switch {
			case err != nil:
				d.log.Warn("could not look up a user named in a policy", "where", where, "user", a, "err", err)
			case id == "":
				d.log.Warn("a user named in a policy is unknown or cannot act; it matches nobody", "where", where, "user", a)
			}
		}
	}
	pols := map[string]runmodel.Policy{"approvals.default": approvals.Default}
	for n, p := range approvals.Targets {
		pols["approvals.targets."+n] = p
	}
	for n, p := range approvals.Runbooks {
		pols["approvals.runbooks."+n] = p
	}
	for n, p := range approvals.Operations {
		pols["approvals.operations."+n] = p
	}
	for where, p := range pols {
		for _, l := range [][]string{p.Approvers, p.BreakGlass, p.Runners, p.ReadOnlyRunners} {
			check(where, l)
		}
	}
	for _, rb := range lib.List() {
		for _, st := range rb.Steps {
			if st.Approval != nil {
				check("runbook "+rb.Name+" step "+st.ID, st.Approval.Approvers)
			}
		}
	}
}

// Role implements policy.Roles for the policy's checks (Count): the
// wiring's Roles, which caches for a minute and is asked afresh under
// chatmodel.Fresh (the re-check before a call).
func (d *directory) Role(ctx context.Context, target, team string, u chatmodel.User) (string, error) {
	if d.roles == nil {
		return "", fmt.Errorf("the Concourse roles of %s cannot be looked up: no role source is configured", target)
	}
	return d.roles.Role(ctx, target, team, u)
}
