package concourse

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/model/textmodel"
)

// pipelineNotFound turns a 404 on team/name into a sentence that says what
// to do: the pipeline of that name in another team, or the closest name (a
// typo, a prefix), and the fly command that lists them all. Other errors
// are returned as they are; the result still matches ErrNotFound.
// sc limits the pipelines hinted at to what the run's channel may see.
func pipelineNotFound(ctx context.Context, cl *Client, team, name string, err error, sc scope) error {
	if !errors.Is(err, ErrNotFound) {
		return err
	}
	team = cl.team(team)
	msg := fmt.Sprintf("%s: pipeline `%s/%s` not found", cl.Name(), team, name)
	if hint := pipelineHint(ctx, cl, team, name, sc); hint != "" {
		msg += "; " + hint
	}
	return &pipelineNotFoundError{msg: msg + listHint(cl, sc)}
}

// listHint says how to list the pipelines: every one, or (for a channel
// bound to teams) the team's.
func listHint(cl *Client, sc scope) string {
	if len(sc) == 1 {
		return fmt.Sprintf(" (`fly -t '%s' pipelines -n '%s'` lists the team's pipelines)", cl.FlyTarget(), sc[0])
	}
	if sc != nil {
		return ""
	}
	return fmt.Sprintf(" (`fly -t '%s' pipelines -a` lists every pipeline)", cl.FlyTarget())
}

// pipelineNotFoundError is a pipeline lookup that found nothing; it
// matches ErrNotFound without saying "not found" twice.
type pipelineNotFoundError struct{ msg string }

func (e *pipelineNotFoundError) Error() string { return e.msg }
func (e *pipelineNotFoundError) Unwrap() error { return ErrNotFound }

// pipelineHint names the pipeline a mistyped team/name probably meant: the
// same name in another team ("it is in team `deploy`"), else the only
// pipeline of the team whose name starts with it, else the closest name.
// "" when nothing is close or the listing fails.
// Only pipelines of the teams sc allows are named.
func pipelineHint(ctx context.Context, cl *Client, team, name string, sc scope) string {
	ps, err := cl.Pipelines(ctx, AllTeams)
	if err != nil {
		return ""
	}
	var teams, prefixed, names []string
	ref := map[string]string{}
	for _, p := range ps {
		if !sc.allows(p.TeamName) {
			continue
		}
		if p.Name == name && p.TeamName != team {
			teams = append(teams, "`"+p.TeamName+"`")
		}
		if p.TeamName == team && strings.HasPrefix(p.Name, name) {
			prefixed = append(prefixed, p.Ref())
		}
		if _, dup := ref[p.Name]; !dup || p.TeamName == team {
			ref[p.Name] = p.Ref()
		}
		names = append(names, p.Name)
	}
	switch {
	case len(teams) == 1:
		return fmt.Sprintf("it is in team %s: run again with `team=%s`", teams[0], strings.Trim(teams[0], "`"))
	case len(teams) > 1:
		return "it is in teams " + strings.Join(teams, ", ") + ": run again with `team=` one of them"
	case len(prefixed) == 1:
		return fmt.Sprintf("did you mean `%s`?", prefixed[0])
	}
	if s := textmodel.Suggest(name, names); s != "" {
		return fmt.Sprintf("did you mean `%s`?", ref[s])
	}
	return ""
}

// noPipelineMatches says that no pipeline of the target matches a build
// filter's pipeline (a name or an anchored regexp), with the pipeline
// probably meant and how to list them; "" when one matches, when the
// filter names no pipeline, or when the listing fails.
func noPipelineMatches(ctx context.Context, cl *Client, q buildQuery, name string) string {
	sc := q.scope
	if q.pipeline == nil || name == "" {
		return ""
	}
	ps, err := cl.Pipelines(ctx, AllTeams)
	if err != nil {
		return ""
	}
	for _, p := range ps {
		if (q.filter.Team == "" || p.TeamName == q.filter.Team) && sc.allows(p.TeamName) && matchRe(q.pipeline, p.Name) {
			return ""
		}
	}
	msg := fmt.Sprintf("no pipeline matches `%s`", name)
	if q.filter.Team != "" {
		msg += " in team `" + q.filter.Team + "`"
	}
	if hint := pipelineHint(ctx, cl, cl.team(q.filter.Team), name, sc); hint != "" {
		msg += "; " + hint
	}
	return msg + listHint(cl, sc)
}
