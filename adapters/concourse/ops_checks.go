package concourse

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Check is one check build in result data, followed to its end.
type Check struct {
	Team         string `json:"team"`
	Pipeline     string `json:"pipeline"`
	Resource     string `json:"resource,omitempty"`
	ResourceType string `json:"resource_type,omitempty"`
	BuildID      int    `json:"build_id"`
	// Status is the check build's final status (or the last seen, if it
	// did not end within the check timeout).
	Status string `json:"status"`
	// Error is why it did not succeed (its error event).
	Error string `json:"error,omitempty"`
}

// CheckResourceData is the result of concourse.check_resource.
type CheckResourceData struct {
	// Checked lists the resources whose check succeeded (Done too, for
	// runbooks written against the bulk-operation convention).
	Checked []string `json:"checked"`
	Done    []string `json:"done"`
	Failed  []string `json:"failed"`
	Checks  []Check  `json:"checks"`
}

// CheckResourceTypeData is the result of concourse.check_resource_type.
type CheckResourceTypeData struct {
	ResourceType string   `json:"resource_type"`
	Checked      []string `json:"checked"` // team/pipeline whose check succeeded
	Skipped      []string `json:"skipped"` // pipelines without that custom type
	Failed       []string `json:"failed"`
	FailedCount  int      `json:"failed_count"`
	Checks       []Check  `json:"checks"`
}

// runCheck follows the check build b that starting the check returned
// (with err) into chk, adds chk to checks when it has a build, and returns
// item id's result and whether the check succeeded.
func (p *Provider) runCheck(ctx context.Context, cl *Client, id string, chk Check, b Build, err error, checks *[]Check) (opmodel.ItemResult, bool) {
	if err == nil {
		err = p.follow(ctx, cl, &chk, b)
	}
	if chk.BuildID != 0 {
		*checks = append(*checks, chk)
	}
	if err != nil {
		return itemResult(id, opmodel.OutcomeFailed, err.Error()), false
	}
	return itemResult(id, opmodel.OutcomeSucceeded, "check build "+strconv.Itoa(chk.BuildID)+" succeeded"), true
}

// follow waits for a started check build and describes its outcome.
func (p *Provider) follow(ctx context.Context, cl *Client, chk *Check, b Build) error {
	chk.BuildID, chk.Status = b.ID, b.Status
	out, err := cl.WaitCheck(ctx, b, p.opts.CheckTimeout)
	chk.Status = out.Build.Status
	if err != nil {
		return err
	}
	if !out.Succeeded() {
		chk.Error = out.Error
		return fmt.Errorf("check build %d %s: %s", b.ID, out.Build.Status, nonEmptyLine(out.Error, "no error event"))
	}
	return nil
}

func (p *Provider) opCheckResource() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.check_resource", Class: opmodel.ClassWrite,
		Doc: "Check resources (fly check-resource) and follow each check build to its end; without resource, every resource of the pipeline. " +
			"A check that errors fails the step with its error.",
		Args:  []opmodel.ArgSpec{argTeam, argPipeline, {Name: "resource", Doc: "resource name or list (default: all)"}},
		Teams: p.pipelineTeams,
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, team, pipeline, err := p.pipelineClient(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			names := c.Args.Strings("resource")
			if len(names) == 0 {
				rs, err := cl.Resources(ctx, team, pipeline)
				if err != nil {
					return opmodel.Result{}, pipelineNotFound(ctx, cl, team, pipeline, err, scopeOf(c))
				}
				for _, r := range rs {
					names = append(names, r.Name)
				}
			}
			data := CheckResourceData{Checked: []string{}, Done: []string{}, Failed: []string{}, Checks: []Check{}}
			res := opmodel.Result{}
			for i, n := range names {
				c.Report(fmt.Sprintf("checking %s (%d of %d)", n, i+1, len(names)))
				b, err := cl.CheckResource(ctx, team, pipeline, n)
				it, ok := p.runCheck(ctx, cl, n, Check{Team: team, Pipeline: pipeline, Resource: n}, b, err, &data.Checks)
				res.Items = append(res.Items, it)
				if !ok {
					data.Failed = append(data.Failed, n)
					continue
				}
				data.Checked, data.Done = append(data.Checked, n), append(data.Done, n)
			}
			res.Data = data
			res.Summary = fmt.Sprintf("checked %d of %d", len(data.Checked), len(names))
			if n := len(data.Checked); n > 0 && n <= 3 {
				res.Summary += ": " + strings.Join(data.Checked, ", ")
			}
			if len(data.Failed) > 0 {
				res.Warn = true
				res.Summary += fmt.Sprintf("; %d failed", len(data.Failed))
				return res, checkFailure(cl, res)
			}
			return res, nil
		},
	}
}

// checkFailure is the step's error when checks failed: the first failure
// with its error, as fly prints it.
func checkFailure(cl *Client, res opmodel.Result) error {
	f := res.Failed()
	msg := fmt.Sprintf("%s: check of %s failed: %s", cl.Name(), f[0].ID, f[0].Reason)
	if len(f) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(f)-1)
	}
	return errors.New(msg)
}

func (p *Provider) opCheckResourceType() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.check_resource_type", Class: opmodel.ClassWrite,
		Doc: "Check a custom resource type (fly check-resource-type), in one pipeline or in each of a list (e.g. steps.scan.result.pipelines), " +
			"following each check build to its end; a check that errors fails the step with its error.",
		Args: []opmodel.ArgSpec{
			argTeam,
			{Name: "pipeline", Doc: "pipeline name (or use pipelines)"},
			{Name: "pipelines", Doc: "list of team/pipeline to check in each"},
			{Name: "resource_type", Doc: "resource type name (default registry-image)"},
		},
		Teams: p.refTeams,
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			rt := or(c.Args.String("resource_type"), "registry-image")
			refs := c.Args.Strings("pipelines")
			if pl := c.Args.String("pipeline"); pl != "" {
				refs = append(refs, pl)
			}
			if len(refs) == 0 {
				return opmodel.Result{}, errors.New("give pipeline=<name> or pipelines=[team/name, …]")
			}
			res := opmodel.Result{}
			data := CheckResourceTypeData{ResourceType: rt, Checked: []string{}, Skipped: []string{}, Failed: []string{}, Checks: []Check{}}
			sc := scopeOf(c)
			for _, ref := range refs {
				if team, _ := splitRef(ref, c.Args.String("team"), cl.Team()); !sc.allows(team) {
					return opmodel.Result{}, sc.refuse(cl, "a pipeline")
				}
			}
			for i, ref := range refs {
				team, name := splitRef(ref, c.Args.String("team"), cl.Team())
				id := team + "/" + name
				c.Report(fmt.Sprintf("checking %s in %s (%d of %d)", rt, id, i+1, len(refs)))
				types, err := cl.ResourceTypes(ctx, team, name)
				if err != nil {
					data.Failed = append(data.Failed, id)
					res.Items = append(res.Items, itemResult(id, opmodel.OutcomeFailed, err.Error()))
					continue
				}
				if !hasType(types, rt) {
					data.Skipped = append(data.Skipped, id)
					res.Items = append(res.Items, itemResult(id, opmodel.OutcomeAlreadyDone,
						fmt.Sprintf("no custom resource type %q in this pipeline (it uses the built-in one); nothing to check", rt)))
					continue
				}
				b, err := cl.CheckResourceType(ctx, team, name, rt)
				it, ok := p.runCheck(ctx, cl, id, Check{Team: team, Pipeline: name, ResourceType: rt}, b, err, &data.Checks)
				res.Items = append(res.Items, it)
				if !ok {
					data.Failed = append(data.Failed, id)
					continue
				}
				data.Checked = append(data.Checked, id)
			}
			data.FailedCount = len(data.Failed)
			res.Data = data
			res.Summary = fmt.Sprintf("checked %s in %s", rt, plural(len(data.Checked), "pipeline"))
			if len(data.Skipped) > 0 {
				res.Summary += fmt.Sprintf("; %d without it", len(data.Skipped))
			}
			if data.FailedCount > 0 {
				res.Warn = true
				res.Summary += fmt.Sprintf("; %d failed", data.FailedCount)
				return res, checkFailure(cl, res)
			}
			return res, nil
		},
	}
}
