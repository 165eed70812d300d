package concourse

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// scope is what a call may act on and name: the teams of Call.Teams (the
// run's channel is bound to them), nil for every team. Operations refuse
// a team outside it, list and suggest nothing of another team, and never
// name one in a message.
type scope []string

func scopeOf(c opmodel.Call) scope { return scope(c.Teams) }

// allows reports whether the things of team may be read or changed.
func (s scope) allows(team string) bool { return s == nil || slices.Contains(s, team) }

// worker reports whether a worker may be seen: a global one, or one of
// the scope's teams.
func (s scope) worker(w Worker) bool { return w.Team == "" || s.allows(w.Team) }

// refuse is the error of a call naming (as what: "the pipeline", "team=")
// a team outside the scope. It says what the channel may act on, not the
// team named.
func (s scope) refuse(cl *Client, what string) error {
	return opmodel.Unchanged(fmt.Errorf("%s: the run's channel may act only on %s; %s names another team", cl.Name(), teamList(s), what))
}

func teamList(ts []string) string {
	q := make([]string, len(ts))
	for i, t := range ts {
		q[i] = "`" + t + "`"
	}
	if len(q) == 1 {
		return "team " + q[0]
	}
	return "teams " + strings.Join(q, ", ")
}

// changeOwners says whose things each changing operation can change
// (opmodel.Op.Owner): a build, a pipeline or its caches are always a
// team's; a worker is a team's own or global (no team's).
var changeOwners = map[string]opmodel.Owner{
	"concourse.abort_builds":         opmodel.OwnerTeam,
	"concourse.pause_pipeline":       opmodel.OwnerTeam,
	"concourse.unpause_pipeline":     opmodel.OwnerTeam,
	"concourse.check_resource":       opmodel.OwnerTeam,
	"concourse.check_resource_type":  opmodel.OwnerTeam,
	"concourse.clear_resource_cache": opmodel.OwnerTeam,
	"concourse.clear_task_cache":     opmodel.OwnerTeam,
	"concourse.prune_worker":         opmodel.OwnerWorker,
	"concourse.land_worker":          opmodel.OwnerWorker,
	"concourse.retire_worker":        opmodel.OwnerWorker,
}

// Team is an entry of GET /api/v1/teams (atc.Team): its auth config says,
// per role, which users ("<connector>:<user>", e.g. "local:alice",
// "github:alice") and groups hold it.
type Team struct {
	ID   int                 `json:"id"`
	Name string              `json:"name"`
	Auth map[string]RoleAuth `json:"auth"`
}

// RoleAuth is who holds one role of a team.
type RoleAuth struct {
	Users  []string `json:"users"`
	Groups []string `json:"groups"`
}

// Teams lists the teams the bot's account can see (GET /api/v1/teams):
// every team for an admin, else those where it has a role.
func (c *Client) Teams(ctx context.Context) ([]Team, error) {
	var ts []Team
	if err := c.get(ctx, "/api/v1/teams", "list teams", &ts); err != nil {
		return nil, err
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	return ts, nil
}

// TeamsData is the result of concourse.teams.
type TeamsData struct {
	Count int      `json:"count"`
	Teams []string `json:"teams"`
	// All is true when the list is every team of the target (the bot's
	// account is an admin); otherwise it lists the teams where the account
	// has a role, and others may exist.
	All bool `json:"all"`
}

func (p *Provider) opTeams() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.teams", Class: opmodel.ClassRead,
		Doc: "The teams the bot's account can see (fly teams): every team when it is an admin; result.all says so.",
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			ts, err := cl.Teams(ctx)
			if err != nil {
				return opmodel.Result{}, err
			}
			data := TeamsData{Teams: []string{}}
			if cl.cfg.Username != "" {
				u, err := cl.User(ctx)
				if err != nil {
					return opmodel.Result{}, err
				}
				data.All = u.IsAdmin
			}
			table := &opmodel.Table{Columns: []string{"team"}, Noun: "teams"}
			for _, t := range ts {
				if c.Teams != nil && !slices.Contains(c.Teams, t.Name) {
					continue
				}
				data.Teams = append(data.Teams, t.Name)
				table.Rows = append(table.Rows, []string{t.Name})
			}
			data.Count = len(data.Teams)
			summary := plural(data.Count, "team")
			if data.Count > 0 && data.Count <= 5 {
				summary += ": " + strings.Join(data.Teams, ", ")
			}
			if !data.All && c.Teams == nil {
				summary += fmt.Sprintf(" (those where %s has a role)", or(cl.cfg.Username, "the bot"))
			}
			return opmodel.Result{Summary: summary, Table: table, Data: data}, nil
		},
	}
}

// pipelineTeams is Op.Teams of a write operation on one pipeline
// (team=, pipeline=<name> or <team>/<name>): the pipeline's team, the
// target's team when none is given.
func (p *Provider) pipelineTeams(_ context.Context, c opmodel.Call) ([]string, error) {
	cl, team, _, err := p.pipelineClient(c)
	if err != nil {
		return nil, err
	}
	return []string{cl.team(team)}, nil
}

// refTeams is Op.Teams of a write operation on a list of pipelines
// (pipelines=[team/name, …] and pipeline=): the team of each.
func (p *Provider) refTeams(_ context.Context, c opmodel.Call) ([]string, error) {
	cl, err := p.client(c)
	if err != nil {
		return nil, err
	}
	refs := c.Args.Strings("pipelines")
	if pl := c.Args.String("pipeline"); pl != "" {
		refs = append(refs, pl)
	}
	var out []string
	for _, ref := range refs {
		team, _ := splitRef(ref, c.Args.String("team"), cl.Team())
		if !slices.Contains(out, team) {
			out = append(out, team)
		}
	}
	sort.Strings(out)
	return out, nil
}
