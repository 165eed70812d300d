package concourse

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/groundcrew/groundcrew/internal/human"
)

// Pipelines lists pipelines: every visible pipeline when team is "*"
// (GET /api/v1/pipelines, like `fly pipelines -a`), else the team's
// ("" = the target's team). Archived pipelines are included.
func (c *Client) Pipelines(ctx context.Context, team string) ([]Pipeline, error) {
	var ps []Pipeline
	var err error
	if team == AllTeams {
		err = c.get(ctx, "/api/v1/pipelines", "list pipelines", &ps)
	} else {
		team = c.team(team)
		err = c.get(ctx, teamPath(team)+"/pipelines", fmt.Sprintf("list pipelines of team %q", team), &ps)
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(ps, func(a, b Pipeline) int { return human.Compare(a.Ref(), b.Ref()) })
	return ps, nil
}

// AllTeams selects every team in Pipelines.
const AllTeams = "*"

// PausedPipelines lists the paused pipelines (`fly paused-pipelines`);
// team as for Pipelines.
func (c *Client) PausedPipelines(ctx context.Context, team string) ([]Pipeline, error) {
	ps, err := c.Pipelines(ctx, team)
	if err != nil {
		return nil, err
	}
	out := ps[:0]
	for _, p := range ps {
		if p.Paused {
			out = append(out, p)
		}
	}
	return out, nil
}

// PausedJobs lists a pipeline's paused jobs (`fly paused-jobs`).
func (c *Client) PausedJobs(ctx context.Context, team, pipeline string) ([]Job, error) {
	js, err := c.Jobs(ctx, team, pipeline)
	if err != nil {
		return nil, err
	}
	out := js[:0]
	for _, j := range js {
		if j.Paused {
			out = append(out, j)
		}
	}
	return out, nil
}

// Pipeline returns one pipeline.
func (c *Client) Pipeline(ctx context.Context, team, name string) (Pipeline, error) {
	team = c.team(team)
	var p Pipeline
	err := c.get(ctx, pipelinePath(team, name), fmt.Sprintf("read pipeline %s/%s", team, name), &p)
	return p, err
}

// PipelineConfig returns the pipeline's configuration (`fly get-pipeline`).
func (c *Client) PipelineConfig(ctx context.Context, team, name string) (PipelineConfig, error) {
	team = c.team(team)
	var resp struct {
		Config json.RawMessage `json:"config"`
	}
	h, err := c.call(ctx, request{
		method: http.MethodGet, path: pipelinePath(team, name) + "/config",
		action: fmt.Sprintf("read the config of pipeline %s/%s", team, name),
	}, &resp)
	if err != nil {
		return PipelineConfig{}, err
	}
	var cfg struct {
		Jobs []JobConfig `json:"jobs"`
	}
	if len(resp.Config) > 0 {
		if err := json.Unmarshal(resp.Config, &cfg); err != nil {
			return PipelineConfig{}, fmt.Errorf("%s: decoding the config of pipeline %s/%s: %w", c.cfg.Name, team, name, err)
		}
	}
	return PipelineConfig{Raw: resp.Config, Version: h.Get("X-Concourse-Config-Version"), Jobs: cfg.Jobs}, nil
}

// PausePipeline pauses a pipeline (idempotent).
func (c *Client) PausePipeline(ctx context.Context, team, name string) error {
	team = c.team(team)
	_, err := c.call(ctx, request{
		method: http.MethodPut, path: pipelinePath(team, name) + "/pause",
		action: fmt.Sprintf("pause pipeline %s/%s", team, name),
	}, nil)
	return err
}

// UnpausePipeline unpauses a pipeline (idempotent).
func (c *Client) UnpausePipeline(ctx context.Context, team, name string) error {
	team = c.team(team)
	_, err := c.call(ctx, request{
		method: http.MethodPut, path: pipelinePath(team, name) + "/unpause",
		action: fmt.Sprintf("unpause pipeline %s/%s", team, name),
	}, nil)
	return err
}

// Jobs lists a pipeline's jobs with their latest builds.
func (c *Client) Jobs(ctx context.Context, team, pipeline string) ([]Job, error) {
	team = c.team(team)
	var js []Job
	err := c.get(ctx, pipelinePath(team, pipeline)+"/jobs", fmt.Sprintf("list jobs of pipeline %s/%s", team, pipeline), &js)
	return js, err
}

// Job returns one job.
func (c *Client) Job(ctx context.Context, team, pipeline, job string) (Job, error) {
	team = c.team(team)
	var j Job
	err := c.get(ctx, pipelinePath(team, pipeline)+"/jobs/"+pathEscape(job),
		fmt.Sprintf("read job %s/%s/%s", team, pipeline, job), &j)
	return j, err
}

// Job returns the job's configuration, if the pipeline has it.
func (pc PipelineConfig) Job(name string) (JobConfig, bool) {
	for _, j := range pc.Jobs {
		if j.Name == name {
			return j, true
		}
	}
	return JobConfig{}, false
}

// TaskSteps returns the names of the job's task steps, in plan order and
// without duplicates. Unlike the manual's `yq '.plan[].task'` it also looks
// inside do, in_parallel, aggregate, try and the on_success, on_failure,
// on_error, on_abort and ensure hooks, where tasks are just as cached.
func (j JobConfig) TaskSteps() []string {
	var out []string
	seen := map[string]bool{}
	var walk func(step map[string]any)
	walk = func(step map[string]any) {
		if name, ok := step["task"].(string); ok && name != "" && !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
		for _, key := range []string{"do", "aggregate"} {
			walkList(step[key], walk)
		}
		switch p := step["in_parallel"].(type) {
		case []any:
			walkList(p, walk)
		case map[string]any:
			walkList(p["steps"], walk)
		}
		for _, key := range []string{"try", "on_success", "on_failure", "on_error", "on_abort", "ensure"} {
			if sub, ok := step[key].(map[string]any); ok {
				walk(sub)
			}
		}
	}
	for _, step := range j.Plan {
		walk(step)
	}
	return out
}

func walkList(v any, walk func(map[string]any)) {
	list, _ := v.([]any)
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			walk(m)
		}
	}
}
