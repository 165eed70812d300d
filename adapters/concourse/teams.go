package concourse

import (
	"context"
	"slices"
	"sort"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

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
