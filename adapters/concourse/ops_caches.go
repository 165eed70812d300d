package concourse

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

func (p *Provider) opClearResourceCache() opmodel.Op {
	const op = "concourse.clear_resource_cache"
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc:  "Delete the cached versions of a resource, or of every resource of a pipeline (fly clear-resource-cache); follow with concourse.check_resource.",
		Args: []opmodel.ArgSpec{argTeam, argPipeline, {Name: "resource", Doc: "resource name or list (default: every resource of the pipeline)"}},
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Plan{}, err
			}
			team = cl.team(team)
			rs, err := cl.Resources(ctx, team, pipeline)
			if errors.Is(err, ErrNotFound) && c.Approved != nil {
				return allGone(op, cl.Name(), c, team+"/"+pipeline+" no longer exists (deleted or renamed while the approval was asked)"), nil
			}
			if err != nil {
				return opmodel.Plan{}, pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c))
			}
			byName := map[string]Resource{}
			for _, r := range rs {
				byName[r.Name] = r
			}
			names := c.Args.Strings("resource")
			if len(names) == 0 {
				for _, r := range rs {
					names = append(names, r.Name)
				}
			}
			plan := opmodel.Plan{Op: op, Target: cl.Name()}
			for _, n := range names {
				r, ok := byName[n]
				if id := team + "/" + pipeline + "/" + n; !ok && c.Approves("resource", id) {
					plan.Found = append(plan.Found, opmodel.Found{Kind: "resource", ID: id, Gone: true,
						Text: fmt.Sprintf("resource %s of %s/%s no longer exists (removed from the pipeline while the approval was asked)", n, team, pipeline)})
					continue
				}
				if !ok {
					return opmodel.Plan{}, fmt.Errorf("%s: pipeline %s/%s has no resource %q: check the name with concourse.resources", cl.Name(), team, pipeline, n)
				}
				plan.Items = append(plan.Items, opmodel.PlanItem{
					Kind: "resource", ID: team + "/" + pipeline + "/" + r.Name,
					Attrs:  map[string]string{"team": team, "pipeline": pipeline, "resource": r.Name, "type": r.Type},
					Detail: "type " + r.Type,
				})
			}
			plan.Summary = "no resource to clear"
			if !plan.Empty() {
				plan.Summary = fmt.Sprintf("clear the caches of %s of %s/%s", plural(len(plan.Items), "resource"), team, pipeline)
			}
			return plan, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			var total int64
			byResource := map[string]int64{}
			res, d, err := p.applyEach(cl, pl, "cleared", func(it opmodel.PlanItem) (string, error) {
				n, err := cl.ClearResourceCache(ctx, it.Attrs["team"], it.Attrs["pipeline"], it.Attrs["resource"])
				if err != nil {
					return "", err
				}
				total += n
				byResource[it.Attrs["resource"]] = n
				return fmt.Sprintf("%d caches removed", n), nil
			})
			res.Summary = fmt.Sprintf("%d caches removed from %s", total, plural(len(byResource), "resource"))
			if n := len(res.Failed()); n > 0 {
				res.Summary += fmt.Sprintf("; %d failed", n)
			}
			res.Data = ClearResourceCacheData{BulkData: d, Cleared: d.Done, CachesRemoved: total, ByResource: byResource}
			return res, err
		},
	}
}

// ClearResourceCacheData is the result of concourse.clear_resource_cache.
type ClearResourceCacheData struct {
	BulkData
	Cleared       []string         `json:"cleared"` // team/pipeline/resource
	CachesRemoved int64            `json:"caches_removed"`
	ByResource    map[string]int64 `json:"by_resource"`
}

// ClearTaskCacheData is the result of concourse.clear_task_cache.
type ClearTaskCacheData struct {
	BulkData
	Cleared       []string         `json:"cleared"` // team/pipeline/job/step
	CachesRemoved int64            `json:"caches_removed"`
	ByStep        map[string]int64 `json:"by_step"`
}

func (p *Provider) opClearTaskCache() opmodel.Op {
	const op = "concourse.clear_task_cache"
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc: "Delete the caches of a job's task steps (fly clear-task-cache for each task of the job, nested plans included).",
		Args: []opmodel.ArgSpec{
			argTeam, argPipeline,
			{Name: "job", Doc: "job name", Required: true},
			{Name: "step", Doc: "only this task step (default: every task step of the job)"},
			{Name: "cache_path", Doc: "only this cache path"},
		},
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Plan{}, err
			}
			team = cl.team(team)
			job := c.Args.String("job")
			if job == "" {
				return opmodel.Plan{}, errors.New("argument \"job\" is required (see concourse.jobs)")
			}
			cfg, err := cl.PipelineConfig(ctx, team, pipeline)
			if errors.Is(err, ErrNotFound) && c.Approved != nil {
				return allGone(op, cl.Name(), c, team+"/"+pipeline+" no longer exists (deleted or renamed while the approval was asked)"), nil
			}
			if err != nil {
				return opmodel.Plan{}, pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c))
			}
			jc, ok := cfg.Job(job)
			if !ok && c.Approved != nil {
				return allGone(op, cl.Name(), c, fmt.Sprintf("job %s of %s/%s no longer exists (removed from the pipeline while the approval was asked)", job, team, pipeline)), nil
			}
			if !ok {
				names := make([]string, 0, len(cfg.Jobs))
				for _, j := range cfg.Jobs {
					names = append(names, j.Name)
				}
				return opmodel.Plan{}, fmt.Errorf("%s: pipeline %s/%s has no job %q; its jobs are: %s", cl.Name(), team, pipeline, job, strings.Join(names, ", "))
			}
			steps := jc.TaskSteps()
			if step := c.Args.String("step"); step != "" {
				if !contains(steps, step) && c.Approved != nil {
					return allGone(op, cl.Name(), c, fmt.Sprintf("task step %s of %s/%s/%s no longer exists (the job changed while the approval was asked)", step, team, pipeline, job)), nil
				}
				if !contains(steps, step) {
					return opmodel.Plan{}, fmt.Errorf("%s: job %s/%s/%s has no task step %q; its task steps are: %s", cl.Name(), team, pipeline, job, step, strings.Join(steps, ", "))
				}
				steps = []string{step}
			}
			plan := opmodel.Plan{Op: op, Target: cl.Name()}
			cachePath := c.Args.String("cache_path")
			for _, s := range steps {
				plan.Items = append(plan.Items, opmodel.PlanItem{
					Kind: "task_cache", ID: team + "/" + pipeline + "/" + job + "/" + s,
					Attrs:  map[string]string{"team": team, "pipeline": pipeline, "job": job, "step": s, "cache_path": cachePath},
					Detail: "task " + s,
				})
			}
			for _, it := range c.Gone(plan) {
				plan.Found = append(plan.Found, opmodel.Found{Kind: it.Kind, ID: it.ID, Gone: true,
					Text: fmt.Sprintf("task step %s of %s/%s/%s no longer exists (the job changed while the approval was asked)", it.Attrs["step"], team, pipeline, job)})
			}
			plan.Summary = fmt.Sprintf("job %s has no task step: nothing to clear", job)
			if !plan.Empty() {
				plan.Summary = fmt.Sprintf("clear the task caches of %s/%s/%s: %s", team, pipeline, job, strings.Join(steps, ", "))
			}
			return plan, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			var total int64
			byStep := map[string]int64{}
			res, d, err := p.applyEach(cl, pl, "cleared", func(it opmodel.PlanItem) (string, error) {
				a := it.Attrs
				n, err := cl.ClearTaskCache(ctx, a["team"], a["pipeline"], a["job"], a["step"], a["cache_path"])
				if err != nil {
					return "", err
				}
				total += n
				byStep[a["step"]] = n
				return fmt.Sprintf("%d caches removed", n), nil
			})
			res.Summary = fmt.Sprintf("%d caches removed from %s", total, plural(len(byStep), "task step"))
			if n := len(res.Failed()); n > 0 {
				res.Summary += fmt.Sprintf("; %d failed", n)
			}
			res.Data = ClearTaskCacheData{BulkData: d, Cleared: d.Done, CachesRemoved: total, ByStep: byStep}
			return res, err
		},
	}
}

// allGone is the plan of a re-check that found the container of every
// approved object gone (the pipeline, the job): an empty plan saying so of
// each object.
func allGone(op, target string, c opmodel.Call, text string) opmodel.Plan {
	plan := opmodel.Plan{Op: op, Target: target, Summary: "nothing to clear"}
	for _, it := range c.Gone(plan) {
		plan.Found = append(plan.Found, opmodel.Found{Kind: it.Kind, ID: it.ID, Text: text, Gone: true})
	}
	return plan
}
