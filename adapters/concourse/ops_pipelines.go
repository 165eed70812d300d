package concourse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/bot"
)

func (p *Provider) pipelineData(pl Pipeline, now time.Time) map[string]any {
	return map[string]any{
		"id": pl.ID, "name": pl.Name, "team": pl.TeamName, "ref": pl.Ref(), "paused": pl.Paused,
		"paused_by": pl.PausedBy, "paused_at": pl.PausedAt, "public": pl.Public, "archived": pl.Archived,
		"last_updated": pl.LastUpdated, "paused_seconds": seconds(since(now, unixTime(pl.PausedAt))),
	}
}

func (p *Provider) opPipelines() bot.Op {
	return bot.Op{
		Name: "concourse.pipelines", Class: bot.ClassRead,
		Doc: "List pipelines of every team (fly pipelines -a) or one team; paused=true lists paused ones (fly paused-pipelines).",
		Args: []bot.ArgSpec{
			{Name: "team", Doc: "only this team (default: every team)"},
			{Name: "name", Doc: "only pipelines whose name matches this anchored regular expression"},
			{Name: "paused", Doc: "true to keep only paused pipelines"},
			{Name: "include_archived", Doc: "true to include archived pipelines"},
		},
		Do: func(ctx context.Context, c bot.Call) (bot.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return bot.Result{}, err
			}
			re, err := pattern(c.Args, "name")
			if err != nil {
				return bot.Result{}, err
			}
			team := c.Args.String("team")
			if team == "" {
				team = AllTeams
			}
			ps, err := cl.Pipelines(ctx, team)
			if err != nil {
				return bot.Result{}, err
			}
			now := p.opts.Now()
			list := []map[string]any{}
			paused := []string{}
			table := &bot.Table{Columns: []string{"team", "name", "paused", "public"}}
			for _, pl := range ps {
				if (pl.Archived && !c.Args.Bool("include_archived")) || !matchRe(re, pl.Name) || (c.Args.Bool("paused") && !pl.Paused) {
					continue
				}
				list = append(list, p.pipelineData(pl, now))
				if pl.Paused {
					paused = append(paused, pl.Ref())
				}
				table.Rows = append(table.Rows, []string{pl.TeamName, pl.Name, yesNo(pl.Paused), yesNo(pl.Public)})
			}
			summary := plural(len(list), "pipeline")
			if len(paused) > 0 && !c.Args.Bool("paused") {
				summary += fmt.Sprintf(", %d paused", len(paused))
			}
			return bot.Result{
				Summary: summary, Table: table,
				Data: map[string]any{"count": len(list), "pipelines": list, "paused": paused, "paused_count": len(paused)},
			}, nil
		},
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (p *Provider) opJobs() bot.Op {
	return bot.Op{
		Name: "concourse.jobs", Class: bot.ClassRead,
		Doc:  "List a pipeline's jobs with their last and next build (fly jobs); paused=true lists paused jobs (fly paused-jobs).",
		Args: []bot.ArgSpec{argTeam, argPipeline, {Name: "paused", Doc: "true to keep only paused jobs"}},
		Do: func(ctx context.Context, c bot.Call) (bot.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return bot.Result{}, err
			}
			js, err := cl.Jobs(ctx, team, pipeline)
			if err != nil {
				return bot.Result{}, err
			}
			list := []map[string]any{}
			paused := []string{}
			lastStatus := map[string]int{}
			table := &bot.Table{Columns: []string{"name", "paused", "status", "next"}}
			for _, j := range js {
				if c.Args.Bool("paused") && !j.Paused {
					continue
				}
				status, next := "n/a", "n/a"
				if j.FinishedBuild != nil {
					status = j.FinishedBuild.Status
					lastStatus[status]++
				}
				if j.NextBuild != nil {
					next = j.NextBuild.Status
				}
				if j.Paused {
					paused = append(paused, j.Name)
				}
				list = append(list, map[string]any{
					"name": j.Name, "paused": j.Paused, "paused_by": j.PausedBy, "status": status, "next": next,
				})
				table.Rows = append(table.Rows, []string{j.Name, yesNo(j.Paused), status, next})
			}
			summary := plural(len(list), "job")
			if len(paused) > 0 {
				summary += fmt.Sprintf(", %d paused", len(paused))
			}
			if s := countsLine(lastStatus, BuildStatuses); s != "" {
				summary += "; last builds: " + s
			}
			return bot.Result{Summary: summary, Table: table, Data: map[string]any{"count": len(list), "jobs": list, "paused": paused}}, nil
		},
	}
}

// teamPipeline reads team and pipeline ("team/pipeline" is accepted too).
func teamPipeline(a bot.Args) (string, string, error) {
	team, pipeline := a.String("team"), a.String("pipeline")
	if t, pl, ok := strings.Cut(pipeline, "/"); ok && team == "" {
		team, pipeline = t, pl
	}
	if pipeline == "" {
		return "", "", errors.New("argument \"pipeline\" is required (see concourse.pipelines)")
	}
	return team, pipeline, nil
}

// pipelineClient returns the call's target client and its team/pipeline
// arguments, for the operations on one pipeline.
func (p *Provider) pipelineClient(c bot.Call) (*Client, string, string, error) {
	cl, err := p.client(c)
	if err != nil {
		return nil, "", "", err
	}
	team, pipeline, err := teamPipeline(c.Args)
	if err != nil {
		return nil, "", "", err
	}
	return cl, team, pipeline, nil
}

func (p *Provider) opResources() bot.Op {
	return bot.Op{
		Name: "concourse.resources", Class: bot.ClassRead,
		Doc:  "List a pipeline's resources with the status of their last check (fly resources).",
		Args: []bot.ArgSpec{argTeam, argPipeline},
		Do: func(ctx context.Context, c bot.Call) (bot.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return bot.Result{}, err
			}
			rs, err := cl.Resources(ctx, team, pipeline)
			if err != nil {
				return bot.Result{}, err
			}
			list, names := []map[string]any{}, []string{}
			failing := 0
			table := &bot.Table{Columns: []string{"name", "type", "last check"}}
			for _, r := range rs {
				status, id := "", 0
				if r.Build != nil {
					status, id = r.Build.Status, r.Build.ID
				}
				if status == StatusErrored || status == StatusFailed {
					failing++
				}
				names = append(names, r.Name)
				list = append(list, map[string]any{"name": r.Name, "type": r.Type, "last_check_status": status, "last_check_build_id": id})
				table.Rows = append(table.Rows, []string{r.Name, r.Type, or(status, "n/a")})
			}
			summary := plural(len(list), "resource")
			if failing > 0 {
				summary += fmt.Sprintf(", %d with a failing check", failing)
			}
			return bot.Result{Summary: summary, Table: table, Warn: failing > 0,
				Data: map[string]any{"count": len(list), "resources": list, "names": names, "failing_checks": failing}}, nil
		},
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (p *Provider) opResourceTypes() bot.Op {
	return bot.Op{
		Name: "concourse.resource_types", Class: bot.ClassRead,
		Doc:  "List a pipeline's custom resource types (e.g. registry-image).",
		Args: []bot.ArgSpec{argTeam, argPipeline},
		Do: func(ctx context.Context, c bot.Call) (bot.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return bot.Result{}, err
			}
			rts, err := cl.ResourceTypes(ctx, team, pipeline)
			if err != nil {
				return bot.Result{}, err
			}
			list, names := []map[string]any{}, []string{}
			table := &bot.Table{Columns: []string{"name", "type"}}
			for _, rt := range rts {
				names = append(names, rt.Name)
				list = append(list, map[string]any{"name": rt.Name, "type": rt.Type})
				table.Rows = append(table.Rows, []string{rt.Name, rt.Type})
			}
			return bot.Result{Summary: plural(len(list), "custom resource type"), Table: table,
				Data: map[string]any{"count": len(list), "resource_types": list, "names": names}}, nil
		},
	}
}

func (p *Provider) opUnpausePipeline() bot.Op {
	return bot.Op{
		Name: "concourse.unpause_pipeline", Class: bot.ClassWrite,
		Doc:  "Unpause a pipeline (fly unpause-pipeline).",
		Args: []bot.ArgSpec{argTeam, argPipeline},
		Do: func(ctx context.Context, c bot.Call) (bot.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return bot.Result{}, err
			}
			before, err := cl.Pipeline(ctx, team, pipeline)
			if err != nil {
				return bot.Result{}, err
			}
			if err := cl.UnpausePipeline(ctx, team, pipeline); err != nil {
				return bot.Result{}, err
			}
			after, err := cl.Pipeline(ctx, team, pipeline)
			if err != nil {
				return bot.Result{}, fmt.Errorf("verifying the unpause: %w", err)
			}
			if after.Paused {
				return bot.Result{}, fmt.Errorf("%s: pipeline %s is still paused after the unpause; check it in the web UI", cl.Name(), after.Ref())
			}
			summary := "unpaused " + after.Ref()
			if !before.Paused {
				summary = after.Ref() + " was not paused"
			}
			return bot.Result{Summary: summary, Data: map[string]any{
				"team": after.TeamName, "pipeline": after.Name, "was_paused": before.Paused, "paused": false,
			}}, nil
		},
	}
}

func (p *Provider) opPausePipeline() bot.Op {
	const op = "concourse.pause_pipeline"
	return bot.Op{
		Name: op, Class: bot.ClassDestructive,
		Doc:  "Pause pipelines (fly pause-pipeline) so they start no new builds.",
		Args: []bot.ArgSpec{argTeam, {Name: "pipeline", Doc: "pipeline name, team/name, or a list of them", Required: true}},
		Plan: func(ctx context.Context, c bot.Call) (bot.Plan, error) {
			cl, err := p.client(c)
			if err != nil {
				return bot.Plan{}, err
			}
			refs := c.Args.Strings("pipeline")
			if len(refs) == 0 {
				return bot.Plan{}, errors.New("argument \"pipeline\" is required (see concourse.pipelines)")
			}
			plan := bot.Plan{Op: op, Target: cl.Name()}
			for _, ref := range refs {
				team, name := splitRef(ref, c.Args.String("team"), cl.Team())
				pl, err := cl.Pipeline(ctx, team, name)
				switch {
				case errors.Is(err, ErrNotFound):
					return bot.Plan{}, fmt.Errorf("%s: pipeline %s/%s not found: check the name and team with concourse.pipelines", cl.Name(), team, name)
				case err != nil:
					return bot.Plan{}, err
				case pl.Paused:
					plan.Notes = append(plan.Notes, fmt.Sprintf("%s is already paused (by %s); skipped", pl.Ref(), or(pl.PausedBy, "someone")))
				case pl.Archived:
					plan.Notes = append(plan.Notes, fmt.Sprintf("%s is archived; skipped", pl.Ref()))
				default:
					plan.Items = append(plan.Items, bot.PlanItem{Kind: "pipeline", ID: pl.Ref(),
						Attrs: map[string]string{"team": pl.TeamName, "pipeline": pl.Name}, Detail: "running, public " + yesNo(pl.Public)})
				}
			}
			plan.Summary = "nothing to pause"
			if !plan.Empty() {
				plan.Summary = fmt.Sprintf("pause %s: %s", plural(len(plan.Items), "pipeline"), strings.Join(planItemNames(plan), ", "))
			}
			return plan, nil
		},
		Apply: func(ctx context.Context, c bot.Call, pl bot.Plan) (bot.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return bot.Result{}, err
			}
			return p.applyEach(cl, pl, "paused", func(it bot.PlanItem) (string, error) {
				if err := cl.PausePipeline(ctx, it.Attrs["team"], it.Attrs["pipeline"]); err != nil {
					return "", err
				}
				after, err := cl.Pipeline(ctx, it.Attrs["team"], it.Attrs["pipeline"])
				if err != nil {
					return "", fmt.Errorf("verifying the pause: %w", err)
				}
				if !after.Paused {
					return "", fmt.Errorf("%s: %s is not paused after the pause request", cl.Name(), it.ID)
				}
				return "paused", nil
			})
		},
	}
}

// splitRef reads "team/pipeline" or "pipeline" (with the given or default team).
func splitRef(ref, team, def string) (string, string) {
	if t, name, ok := strings.Cut(ref, "/"); ok {
		return t, name
	}
	if team == "" {
		team = def
	}
	return team, ref
}

// applyEach runs act on each plan item in turn and builds the result; the
// string act returns is the item's reason on success.
func (p *Provider) applyEach(cl *Client, pl bot.Plan, past string, act func(bot.PlanItem) (string, error)) (bot.Result, error) {
	res := bot.Result{}
	done, failed := []string{}, []string{}
	for _, it := range pl.Items {
		why, err := act(it)
		if err != nil {
			failed = append(failed, it.ID)
			res.Items = append(res.Items, itemResult(it.ID, bot.OutcomeFailed, err.Error()))
			continue
		}
		done = append(done, it.ID)
		res.Items = append(res.Items, itemResult(it.ID, bot.OutcomeSucceeded, why))
	}
	res.Summary = fmt.Sprintf("%s %d of %d", past, len(done), len(pl.Items))
	if len(done) > 0 && len(done) <= 3 {
		res.Summary += ": " + strings.Join(done, ", ")
	}
	res.Data = map[string]any{"done": done, "failed": failed, past: done}
	if len(failed) > 0 {
		res.Warn = true
		res.Summary += fmt.Sprintf("; %d failed", len(failed))
		if len(done) == 0 {
			return res, fmt.Errorf("%s: %s", cl.Name(), res.Failed()[0].Reason)
		}
	}
	return res, nil
}

func hasType(types []ResourceType, name string) bool {
	for _, t := range types {
		if t.Name == name {
			return true
		}
	}
	return false
}
