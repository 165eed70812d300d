package policy

import (
	"context"
	"fmt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Start describes a run someone asks to start.
type Start struct {
	Target  string
	Runbook string
	// Ops are the operations the runbook calls; an operation's `runners`
	// (or `read_only_runners`) apply to every runbook that calls it.
	Ops []string
	// Changing is true when the runbook has write or destructive steps:
	// then `runners` decide, otherwise `read_only_runners`.
	Changing bool
	// Teams are the Concourse teams the run names or touches: the runners
	// of each one's level (approvals.teams.<team>) must allow the user too.
	Teams []string
}

// StartRefusal says why someone may not start a run.
type StartRefusal struct {
	// Source is the configuration key that refused ("approvals.targets.infra-prd.runners").
	Source string
	// Allowed is that key's list.
	Allowed []string
	// Changing is Start.Changing.
	Changing bool
	// Team is the Concourse team whose level refused ("" for the others).
	Team string
}

// Message is the refusal for the person, naming the refused action.
func (r *StartRefusal) Message(runbook, target string) string {
	if r.Team != "" {
		return fmt.Sprintf("You may not run `%s` on `%s` for team `%s`: policy `%s` allows only %s to start %s.", runbook, target, r.Team, r.Source, DisplayList(r.Allowed), r.teamKind("that team's"))
	}
	return fmt.Sprintf("You may not run `%s` on `%s`: policy `%s` allows only %s to start %s there.", runbook, target, r.Source, DisplayList(r.Allowed), r.kind())
}

// Reason says the refusal of a change of a team's things during a run, to
// the person who started it ("team `payments`'s things may be changed only
// by runs that … start").
func (r *StartRefusal) Reason() string {
	return fmt.Sprintf("policy `%s` allows only %s to start %s", r.Source, DisplayList(r.Allowed), r.teamKind("team `"+r.Team+"`'s"))
}

// teamKind names the runs a team's runners may start: "runbooks that
// change <whose> things", "read-only runbooks on <whose> things".
func (r *StartRefusal) teamKind(whose string) string {
	if r.Changing {
		return "runbooks that change " + whose + " things"
	}
	return "read-only runbooks on " + whose + " things"
}

func (r *StartRefusal) kind() string {
	if r.Changing {
		return "runbooks that change things"
	}
	return "read-only runbooks"
}

// MayStart decides whether the user with id userID may start s. It returns
// nil when they may, or the refusal. Every level that sets the deciding
// field (runners or read_only_runners) must allow the user: the resolved
// policy of the run and of each operation it calls.
func (c Config) MayStart(ctx context.Context, s Start, userID string, dir Directory) (*StartRefusal, error) {
	field, get := "read_only_runners", func(p runmodel.Policy) []string { return p.ReadOnlyRunners }
	if s.Changing {
		field, get = "runners", func(p runmodel.Policy) []string { return p.Runners }
	}
	checked := map[string]bool{}
	for _, op := range append([]string{""}, s.Ops...) {
		src, list := c.source(s.Target, s.Runbook, op, field, get)
		if len(list) == 0 || checked[src] {
			continue
		}
		checked[src] = true
		ok, err := InList(ctx, list, userID, dir)
		if err != nil {
			return nil, fmt.Errorf("checking who may run %s: %w", s.Runbook, err)
		}
		if !ok {
			return &StartRefusal{Source: src, Allowed: list, Changing: s.Changing}, nil
		}
	}
	return c.MayActOn(ctx, s.Target, s.Teams, s.Changing, userID, dir)
}

// MayActOn decides whether the user with id userID may start a run on
// target that touches the things of teams (one that changes things when
// changing): every team whose level on target (TeamLevel) sets runners
// (read_only_runners for a read-only run) must list them. It returns nil
// when they may, or the refusal of the first team (in order) that does
// not.
func (c Config) MayActOn(ctx context.Context, target string, teams []string, changing bool, userID string, dir Directory) (*StartRefusal, error) {
	field, get := "read_only_runners", func(p runmodel.Policy) []string { return p.ReadOnlyRunners }
	if changing {
		field, get = "runners", func(p runmodel.Policy) []string { return p.Runners }
	}
	for _, t := range sortedSet(teams) {
		src, list := c.teamKeySetting(target, t, get)
		if len(list) == 0 {
			continue
		}
		in, err := InList(ctx, list, userID, dir)
		if err != nil {
			return nil, fmt.Errorf("checking who may act on team %s: %w", t, err)
		}
		if !in {
			return &StartRefusal{Source: src + "." + field, Allowed: list, Changing: changing, Team: t}, nil
		}
	}
	return nil, nil
}

// source returns the most specific configuration key that sets field for
// (target, runbook, op), and its list.
func (c Config) source(target, runbook, op, field string, get func(runmodel.Policy) []string) (string, []string) {
	if p, ok := c.Operations[op]; ok && op != "" && len(get(p)) > 0 {
		return "approvals.operations." + op + "." + field, get(p)
	}
	if p, ok := c.Runbooks[runbook]; ok && len(get(p)) > 0 {
		return "approvals.runbooks." + runbook + "." + field, get(p)
	}
	if p, ok := c.Targets[target]; ok && len(get(p)) > 0 {
		return "approvals.targets." + target + "." + field, get(p)
	}
	return "approvals.default." + field, get(c.Default)
}
