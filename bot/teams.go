package bot

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

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
	case len(g.Teams) > 1:
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
