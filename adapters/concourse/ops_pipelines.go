package concourse

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// PipelineData is one pipeline in result data.
type PipelineData struct {
	ID            int    `json:"id"`
	Name          string `json:"name"`
	Team          string `json:"team"`
	Ref           string `json:"ref"` // team/name
	Paused        bool   `json:"paused"`
	PausedBy      string `json:"paused_by"`
	PausedAt      int64  `json:"paused_at"`
	PausedSeconds int64  `json:"paused_seconds"`
	Public        bool   `json:"public"`
	Archived      bool   `json:"archived"`
	LastUpdated   int64  `json:"last_updated"`
}

// PipelinesData is the result of concourse.pipelines.
type PipelinesData struct {
	Count       int            `json:"count"`
	Pipelines   []PipelineData `json:"pipelines"`
	Paused      []string       `json:"paused"` // team/name
	PausedCount int            `json:"paused_count"`
}

// JobData is one job in result data.
type JobData struct {
	Name     string `json:"name"`
	Paused   bool   `json:"paused"`
	PausedBy string `json:"paused_by"`
	Status   string `json:"status"` // of the last finished build, or "n/a"
	Next     string `json:"next"`   // of the next build, or "n/a"
}

// JobsData is the result of concourse.jobs.
type JobsData struct {
	Count  int       `json:"count"`
	Jobs   []JobData `json:"jobs"`
	Paused []string  `json:"paused"`
}

// ResourceData is one resource in result data.
type ResourceData struct {
	Name             string `json:"name"`
	Type             string `json:"type"`
	LastCheckStatus  string `json:"last_check_status"`
	LastCheckBuildID int    `json:"last_check_build_id"`
}

// ResourcesData is the result of concourse.resources.
type ResourcesData struct {
	Count         int            `json:"count"`
	Resources     []ResourceData `json:"resources"`
	Names         []string       `json:"names"`
	FailingChecks int            `json:"failing_checks"`
}

// ResourceTypeData is one custom resource type in result data.
type ResourceTypeData struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// ResourceTypesData is the result of concourse.resource_types.
type ResourceTypesData struct {
	Count         int                `json:"count"`
	ResourceTypes []ResourceTypeData `json:"resource_types"`
	Names         []string           `json:"names"`
}

// UnpauseData is the result of concourse.unpause_pipeline.
type UnpauseData struct {
	Team      string `json:"team"`
	Pipeline  string `json:"pipeline"`
	WasPaused bool   `json:"was_paused"`
	Paused    bool   `json:"paused"`
}

func (p *Provider) pipelineData(pl Pipeline, now time.Time) PipelineData {
	return PipelineData{
		ID: pl.ID, Name: pl.Name, Team: pl.TeamName, Ref: pl.Ref(), Paused: pl.Paused,
		PausedBy: pl.PausedBy, PausedAt: pl.PausedAt, Public: pl.Public, Archived: pl.Archived,
		LastUpdated: pl.LastUpdated, PausedSeconds: seconds(since(now, unixTime(pl.PausedAt))),
	}
}

func (p *Provider) opPipelines() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.pipelines", Class: opmodel.ClassRead,
		Doc: "List pipelines of every team (fly pipelines -a) or one team; paused=true lists paused ones (fly paused-pipelines).",
		Args: []opmodel.ArgSpec{
			{Name: "team", Doc: "only this team (default: every team)"},
			{Name: "name", Doc: "only pipelines whose name matches this anchored regular expression"},
			{Name: "paused", Doc: "true to keep only paused pipelines"},
			{Name: "include_archived", Doc: "true to include archived pipelines"},
		},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			re, err := pattern(c.Args, "name")
			if err != nil {
				return opmodel.Result{}, err
			}
			team := c.Args.String("team")
			sc := scopeOf(c)
			if team != "" && !sc.allows(team) {
				return opmodel.Result{}, sc.refuse(cl, "team=")
			}
			if team == "" {
				team = AllTeams
			}
			ps, err := cl.Pipelines(ctx, team)
			if err != nil {
				return opmodel.Result{}, err
			}
			now := p.opts.Now()
			list := []PipelineData{}
			paused := []string{}
			table := &opmodel.Table{Columns: []string{"team", "name", "paused", "public"}, Noun: "pipelines"}
			for _, pl := range ps {
				if (pl.Archived && !c.Args.Bool("include_archived")) || !matchRe(re, pl.Name) || (c.Args.Bool("paused") && !pl.Paused) || !sc.allows(pl.TeamName) {
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
			return opmodel.Result{
				Summary: summary, Table: table,
				Data: PipelinesData{Count: len(list), Pipelines: list, Paused: paused, PausedCount: len(paused)},
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

func (p *Provider) opJobs() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.jobs", Class: opmodel.ClassRead,
		Doc:  "List a pipeline's jobs with their last and next build (fly jobs); paused=true lists paused jobs (fly paused-jobs).",
		Args: []opmodel.ArgSpec{argTeam, argPipeline, {Name: "paused", Doc: "true to keep only paused jobs"}},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			js, err := cl.Jobs(ctx, team, pipeline)
			if err != nil {
				return opmodel.Result{}, pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c))
			}
			list := []JobData{}
			paused := []string{}
			lastStatus := map[string]int{}
			table := &opmodel.Table{Columns: []string{"name", "paused", "status", "next"}, Noun: "jobs"}
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
				list = append(list, JobData{Name: j.Name, Paused: j.Paused, PausedBy: j.PausedBy, Status: status, Next: next})
				table.Rows = append(table.Rows, []string{j.Name, yesNo(j.Paused), status, next})
			}
			summary := plural(len(list), "job")
			if len(paused) > 0 {
				summary += fmt.Sprintf(", %d paused", len(paused))
			}
			if s := countsLine(lastStatus, BuildStatuses); s != "" {
				summary += "; last builds: " + s
			}
			return opmodel.Result{Summary: summary, Table: table, Data: JobsData{Count: len(list), Jobs: list, Paused: paused}}, nil
		},
	}
}

// teamPipeline reads team and pipeline ("team/pipeline" is accepted too).
func teamPipeline(a opmodel.Args) (string, string, error) {
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
func (p *Provider) pipelineClient(c opmodel.Call) (*Client, string, string, error) {
	cl, err := p.client(c)
	if err != nil {
		return nil, "", "", err
	}
	team, pipeline, err := teamPipeline(c.Args)
	if err != nil {
		return nil, "", "", err
	}
	if sc := scopeOf(c); !sc.allows(cl.team(team)) {
		return nil, "", "", sc.refuse(cl, "the pipeline")
	}
	return cl, team, pipeline, nil
}

func (p *Provider) opResources() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.resources", Class: opmodel.ClassRead,
		Doc:  "List a pipeline's resources with the status of their last check (fly resources).",
		Args: []opmodel.ArgSpec{argTeam, argPipeline},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			rs, err := cl.Resources(ctx, team, pipeline)
			if err != nil {
				return opmodel.Result{}, pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c))
			}
			list, names := []ResourceData{}, []string{}
			failing := 0
			table := &opmodel.Table{Columns: []string{"name", "type", "last check"}, Noun: "resources"}
			for _, r := range rs {
				status, id := "", 0
				if r.Build != nil {
					status, id = r.Build.Status, r.Build.ID
				}
				if status == StatusErrored || status == StatusFailed {
					failing++
				}
				names = append(names, r.Name)
				list = append(list, ResourceData{Name: r.Name, Type: r.Type, LastCheckStatus: status, LastCheckBuildID: id})
				table.Rows = append(table.Rows, []string{r.Name, r.Type, or(status, "n/a")})
			}
			summary := plural(len(list), "resource")
			if failing > 0 {
				summary += fmt.Sprintf(", %d with a failing check", failing)
			}
			return opmodel.Result{Summary: summary, Table: table, Warn: failing > 0,
				Data: ResourcesData{Count: len(list), Resources: list, Names: names, FailingChecks: failing}}, nil
		},
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (p *Provider) opResourceTypes() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.resource_types", Class: opmodel.ClassRead,
		Doc:  "List a pipeline's custom resource types (e.g. registry-image).",
		Args: []opmodel.ArgSpec{argTeam, argPipeline},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			rts, err := cl.ResourceTypes(ctx, team, pipeline)
			if err != nil {
				return opmodel.Result{}, pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c))
			}
			list, names := []ResourceTypeData{}, []string{}
			table := &opmodel.Table{Columns: []string{"name", "type"}, Noun: "resource types"}
			for _, rt := range rts {
				names = append(names, rt.Name)
				list = append(list, ResourceTypeData{Name: rt.Name, Type: rt.Type})
				table.Rows = append(table.Rows, []string{rt.Name, rt.Type})
			}
			return opmodel.Result{Summary: plural(len(list), "custom resource type"), Table: table,
				Data: ResourceTypesData{Count: len(list), ResourceTypes: list, Names: names}}, nil
		},
	}
}

func (p *Provider) opUnpausePipeline() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.unpause_pipeline", Class: opmodel.ClassWrite,
		Doc:   "Unpause a pipeline (fly unpause-pipeline).",
		Args:  []opmodel.ArgSpec{argTeam, argPipeline},
		Teams: p.pipelineTeams,
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			before, err := cl.Pipeline(ctx, team, pipeline)
			if err != nil {
				return opmodel.Result{}, opmodel.Unchanged(pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c)))
			}
			if err := cl.UnpausePipeline(ctx, team, pipeline); err != nil {
				return opmodel.Result{}, err
			}
			after, err := cl.Pipeline(ctx, team, pipeline)
			if err != nil {
				return opmodel.Result{}, fmt.Errorf("verifying the unpause: %w", err)
			}
			if after.Paused {
				return opmodel.Result{}, fmt.Errorf("%s: pipeline %s is still paused after the unpause; check it in the web UI", cl.Name(), after.Ref())
			}
			summary := "unpaused " + after.Ref()
			var items []opmodel.ItemResult
			if !before.Paused {
				summary = after.Ref() + " was not paused"
				items = []opmodel.ItemResult{itemResult(after.Ref(), opmodel.OutcomeAlreadyDone, "was not paused")}
			}
			return opmodel.Result{Summary: summary, Items: items, Data: UnpauseData{
				Team: after.TeamName, Pipeline: after.Name, WasPaused: before.Paused, Paused: false,
			}}, nil
		},
	}
}

func (p *Provider) opPausePipeline() opmodel.Op {
	const op = "concourse.pause_pipeline"
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc:  "Pause pipelines (fly pause-pipeline) so they start no new builds.",
		Args: []opmodel.ArgSpec{argTeam, {Name: "pipeline", Doc: "pipeline name, team/name, or a list of them", Required: true}},
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Plan{}, err
			}
			refs := c.Args.Strings("pipeline")
			if len(refs) == 0 {
				return opmodel.Plan{}, errors.New("argument \"pipeline\" is required (see concourse.pipelines)")
			}
			plan := opmodel.Plan{Op: op, Target: cl.Name()}
			found := func(id, text string) {
				if c.Approves("pipeline", id) {
					plan.Found = append(plan.Found, opmodel.Found{Kind: "pipeline", ID: id, Text: text, Gone: strings.Contains(text, "no longer exists")})
				}
			}
			for _, ref := range refs {
				team, name := splitRef(ref, c.Args.String("team"), cl.Team())
				if sc := scopeOf(c); !sc.allows(team) {
					return opmodel.Plan{}, sc.refuse(cl, "a pipeline")
				}
				pl, err := cl.Pipeline(ctx, team, name)
				switch {
				case errors.Is(err, ErrNotFound) && c.Approves("pipeline", cl.team(team)+"/"+name):
					// deleted or renamed while the approval was asked
					found(cl.team(team)+"/"+name, cl.team(team)+"/"+name+" no longer exists (deleted or renamed while the approval was asked)")
				case err != nil:
					return opmodel.Plan{}, pipelineNotFound(ctx, cl, team, name, err, scopeOf(c))
				case pl.Paused:
					plan.Notes = append(plan.Notes, fmt.Sprintf("%s is already paused (by %s); skipped", pl.Ref(), or(pl.PausedBy, "someone")))
					found(pl.Ref(), fmt.Sprintf("%s is already paused (by %s)", pl.Ref(), or(pl.PausedBy, "someone")))
				case pl.Archived:
					plan.Notes = append(plan.Notes, fmt.Sprintf("%s is archived; skipped", pl.Ref()))
					found(pl.Ref(), pl.Ref()+" was archived since")
				default:
					plan.Items = append(plan.Items, opmodel.PlanItem{Kind: "pipeline", ID: pl.Ref(),
						Attrs: map[string]string{"team": pl.TeamName, "pipeline": pl.Name}, Detail: "running, public " + yesNo(pl.Public)})
				}
			}
			plan.Summary = "nothing to pause"
			if !plan.Empty() {
				plan.Summary = fmt.Sprintf("pause %s: %s", plural(len(plan.Items), "pipeline"), strings.Join(planItemNames(plan), ", "))
			}
			return plan, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			res, d, err := p.applyEach(cl, pl, "paused", func(it opmodel.PlanItem) (string, error) {
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
			res.Data = PauseData{d, d.Done}
			return res, err
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

// BulkData is the result data common to bulk operations over plan items.
type BulkData struct {
	Done   []string `json:"done"`
	Failed []string `json:"failed"`
}

// PauseData is the result of concourse.pause_pipeline.
type PauseData struct {
	BulkData
	Paused []string `json:"paused"` // team/pipeline
}

// applyEach runs act on each plan item in turn and builds the result; the
// string act returns is the item's reason on success. The caller wraps the
// data in its type.
func (p *Provider) applyEach(cl *Client, pl opmodel.Plan, past string, act func(opmodel.PlanItem) (string, error)) (opmodel.Result, BulkData, error) {
	res := opmodel.Result{}
	done, failed := []string{}, []string{}
	for _, it := range pl.Items {
		why, err := act(it)
		if err != nil {
			failed = append(failed, it.ID)
			res.Items = append(res.Items, itemResult(it.ID, opmodel.OutcomeFailed, err.Error()))
			continue
		}
		done = append(done, it.ID)
		res.Items = append(res.Items, itemResult(it.ID, opmodel.OutcomeSucceeded, why))
	}
	res.Summary = fmt.Sprintf("%s %d of %d", past, len(done), len(pl.Items))
	if len(done) > 0 && len(done) <= 3 {
		res.Summary += ": " + strings.Join(done, ", ")
	}
	data := BulkData{Done: done, Failed: failed}
	if len(failed) > 0 {
		res.Warn = true
		res.Summary += fmt.Sprintf("; %d failed", len(failed))
		if len(done) == 0 {
			return res, data, fmt.Errorf("%s: %s", cl.Name(), res.Failed()[0].Reason)
		}
	}
	return res, data, nil
}

func hasType(types []ResourceType, name string) bool {
	for _, t := range types {
		if t.Name == name {
			return true
		}
	}
	return false
}
