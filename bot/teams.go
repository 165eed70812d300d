package bot

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// authority has one concern: whether the person who started a run may
// change the things of the Concourse teams a step touches, as the run's
// policy says (approvals.teams.<team>.runners). It is asked before a gate
// opens, before a write call, and again right before an approved call;
// a refusal fails the step, says what would allow the change, and is
// audited. Nothing is changed.
type authority struct {
	set *settings
	dir *directory
	// concourse are the targets whose authority is Concourse: the
	// person's own role on the team decides too (roles says it).
	concourse map[string]bool
	roles     policy.Roles
	writes    *durableWriter
	now       func() time.Time
	// fail fails a run's step with a cause (the engine's stepFail).
	fail func(ctx context.Context, runID, stepID string, cause error)
}

// mayChange returns why the requester of r may not change the things of
// teams (and, when teamless, things of no team) from the run's channel
// ("" when they may): the channel's binding, then the teams' runners. The
// reason never names a team the channel is not bound to.
func (a *authority) mayChange(ctx context.Context, r *runmodel.Run, op opmodel.Op, teams []string, teamless bool) (string, error) {
	if why := policy.ScopeOfRun(r.Scope).ChangeRefusal(teams, teamless); why != "" {
		return why, nil
	}
	if len(teams) > 0 {
		ref, err := a.set.forRun(r.ID).MayActOn(ctx, r.Target, teams, true, r.Requester.ID, a.dir)
		if err != nil {
			return "", err
		}
		if ref != nil {
			return fmt.Sprintf("%s may not change the things of %s: %s (one of them may run it)", r.Requester.Display(), teamsText(teams), ref.Reason()), nil
		}
	}
	if c := a.roleCheck(r.Target, op, teams, teamless); c != nil {
		return policy.NeedRole(ctx, *c, r.Requester, a.roles)
	}
	return "", nil
}

// roleCheck is the Concourse role a change by op of the things of teams
// (and, when teamless, of things of no team: an admin's) needs on target,
// when its authority is Concourse; nil otherwise.
func (a *authority) roleCheck(target string, op opmodel.Op, teams []string, teamless bool) *runmodel.RoleCheck {
	if !a.concourse[target] || op.TeamRole == "" {
		return nil
	}
	c := &runmodel.RoleCheck{Target: target, Role: op.TeamRole, Teams: append([]string(nil), teams...)}
	if teamless || len(teams) == 0 {
		c.Teams = append(c.Teams, "")
	}
	return c
}

// refuse fails the step whose change of teams' things the requester may
// not make, with why, and audits it.
func (a *authority) refuse(ctx context.Context, r *runmodel.Run, stepID string, teams []string, why string) {
	a.writes.audit(ctx, runmodel.AuditEntry{Time: a.now(), Actor: r.Requester.ID, Action: runmodel.ActionChangeRefused, RunID: r.ID, Step: stepID,
		Target: r.Target, Teams: teams, Detail: why})
	a.fail(ctx, r.ID, stepID, fmt.Errorf("not done: %s; nothing was changed", why))
}

// runCall is the call of an operation for step stepID of r: the run's
// target, and the teams the run's channel may act on.
func runCall(r *runmodel.Run, stepID string, args opmodel.Args) opmodel.Call {
	c := opmodel.Call{Target: r.Target, Args: args, RunID: r.ID, StepID: stepID}
	if r.Scope != nil {
		c.Teams = policy.ScopeOfRun(r.Scope).CallTeams()
	}
	return c
}

// paramTeams returns the Concourse teams a run's parameters name, sorted:
// the value of a parameter of teams (`team=payments`), and the team of a
// pipeline parameter written team/pipeline. A pipeline named without a
// team and an empty team ("every team") name none: what the run touches
// is known when its calls resolve it.
func paramTeams(rb *runbookmodel.Runbook, params map[string]string) []string {
	var out []string
	add := func(t string) {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, p := range rb.Params {
		v := params[p.Name]
		switch p.Choices {
		case runbookmodel.ChoicesTeams:
			add(v)
		case runbookmodel.ChoicesPipelines:
			for _, ref := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				if t, _, ok := strings.Cut(ref, "/"); ok {
					add(t)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// callTeams returns the Concourse teams a write or destructive call
// touches: its plan's items' teams (destructive), or what the operation
// says of its arguments (write operations with Op.Teams); none for the
// others.
func callTeams(ctx context.Context, op opmodel.Op, call opmodel.Call, plan *opmodel.Plan) ([]string, error) {
	if plan != nil && op.Class == opmodel.ClassDestructive {
		return plan.Teams(), nil
	}
	if op.Teams == nil || op.Class == opmodel.ClassRead {
		return nil, nil
	}
	ts, err := op.Teams(ctx, call)
	if err != nil {
		return nil, fmt.Errorf("working out which Concourse teams %s would change: %w", op.Name, err)
	}
	sort.Strings(ts)
	return slices.Compact(ts), nil
}

// showTeams reports whether a gate says which teams its change touches:
// when it touches more than one, a team other than the target's own, or
// when a team's policy decided something. A one-team installation sees
// nothing new.
func showTeams(r *runmodel.Run, g *runmodel.Gate) bool {
	switch {
	case len(g.Teams) > 1, len(g.Policy.Teams) > 0:
		return true
	case len(g.Teams) == 1:
		return r.Team == "" || g.Teams[0] != r.Team
	}
	return false
}

// teamsText names teams for people: "team `payments`", "teams `payments`, `platform`".
func teamsText(teams []string) string {
	if len(teams) == 1 {
		return "team `" + teams[0] + "`"
	}
	return "teams " + strings.Join(quoteAll(teams), ", ")
}
