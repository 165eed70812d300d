package concourse

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// buildQuery is the filter shared by builds, abort_builds and
// build_events_scan: server-side scope and window, client-side regexps.
type buildQuery struct {
	filter        BuildFilter
	pipeline, job *regexp.Regexp
	// scope is what the run's channel may see (nil: every team).
	scope scope
}

func (q buildQuery) keep(b Build) bool {
	return matchRe(q.pipeline, b.PipelineName) && matchRe(q.job, b.JobName) && q.scope.allows(b.TeamName)
}

func (q buildQuery) hasScope() bool {
	return q.filter.Team != "" || q.pipeline != nil || q.job != nil
}

var buildFilterArgs = []opmodel.ArgSpec{
	{Name: "team", Doc: "only builds of this team (default: every team the bot can see)"},
	{Name: "pipeline", Doc: "pipeline name or anchored regular expression (caascad-.*)"},
	{Name: "job", Doc: "job name or anchored regular expression"},
	{Name: "status", Doc: "statuses to keep: pending, started, succeeded, failed, errored, aborted"},
	{Name: "since", Doc: "only builds that started within this duration (24h, 90m, 7d); pending builds always count"},
	{Name: "until", Doc: "only builds that started before now minus this duration"},
	{Name: "limit", Doc: "stop after this many matching builds (default 50000, like fly builds -c 50000)"},
}

func (p *Provider) buildQuery(c opmodel.Call, defStatus []string, defSince time.Duration) (buildQuery, error) {
	q := buildQuery{scope: scopeOf(c)}
	a := c.Args
	var err error
	if q.pipeline, err = pattern(a, "pipeline"); err != nil {
		return q, err
	}
	if q.job, err = pattern(a, "job"); err != nil {
		return q, err
	}
	if q.filter.Statuses, err = statuses(a, "status", defStatus); err != nil {
		return q, err
	}
	if q.filter.Since, q.filter.Until, err = p.window(a, defSince); err != nil {
		return q, err
	}
	if q.filter.Limit, err = a.Int("limit", MaxWindowBuilds); err != nil {
		return q, err
	}
	q.filter.Team = a.String("team")
	if q.filter.Team != "" && !q.scope.allows(q.filter.Team) {
		cl, err := p.client(c)
		if err != nil {
			return q, err
		}
		return q, q.scope.refuse(cl, "team=")
	}
	if q.filter.Team == "" && len(q.scope) == 1 {
		q.filter.Team = q.scope[0] // the channel's one team: its own listing
	}
	// a literal pipeline name within an explicit team can use the
	// pipeline's own (smaller) listing
	if name := a.String("pipeline"); q.filter.Team != "" && name != "" && regexp.QuoteMeta(name) == name {
		q.filter.Pipeline = name
	}
	return q, nil
}

// pipelineGroup aggregates builds of one pipeline (by_pipeline entries of
// concourse.builds).
type pipelineGroup struct {
	Team     string         `json:"team"`
	Pipeline string         `json:"pipeline"`
	Count    int            `json:"count"`
	ByStatus map[string]int `json:"by_status"`
}

type groups map[string]*pipelineGroup

func (g groups) add(b Build) {
	key := b.TeamName + "/" + b.PipelineName
	pg := g[key]
	if pg == nil {
		pg = &pipelineGroup{Team: b.TeamName, Pipeline: b.PipelineName, ByStatus: map[string]int{}}
		g[key] = pg
	}
	pg.Count++
	pg.ByStatus[b.Status]++
}

// sorted returns the groups by descending count, then name.
func (g groups) sorted() []*pipelineGroup {
	out := make([]*pipelineGroup, 0, len(g))
	for _, pg := range g {
		out = append(out, pg)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return human.Compare(out[i].Team+"/"+out[i].Pipeline, out[j].Team+"/"+out[j].Pipeline) < 0
	})
	return out
}

func (g groups) data() []*pipelineGroup {
	return listOrEmpty(g.sorted())
}

// BuildData is one build in result data.
type BuildData struct {
	ID         int    `json:"id"`
	Team       string `json:"team"`
	Pipeline   string `json:"pipeline"`
	Job        string `json:"job"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	StartTime  int64  `json:"start_time"`
	EndTime    int64  `json:"end_time"`
	AgeSeconds int64  `json:"age_seconds"`
	Ref        string `json:"ref"` // pipeline/job #name
}

// BuildsData is the result of concourse.builds.
type BuildsData struct {
	Count      int              `json:"count"`
	Truncated  bool             `json:"truncated"` // builds lists fewer than count
	ByStatus   map[string]int   `json:"by_status"`
	ByPipeline []*pipelineGroup `json:"by_pipeline"`
	Pipelines  []string         `json:"pipelines"` // team/pipeline, largest first
	Builds     []BuildData      `json:"builds"`
}

// AbortData is the result of concourse.abort_builds.
type AbortData struct {
	Requested       int   `json:"requested"`
	Aborted         int   `json:"aborted"`
	AlreadyFinished int   `json:"already_finished"`
	NotStopped      []int `json:"not_stopped"`
	NotStoppedCount int   `json:"not_stopped_count"`
	Failed          []int `json:"failed"`
	FailedCount     int   `json:"failed_count"`
}

func (p *Provider) buildData(b Build, now time.Time) BuildData {
	return BuildData{
		ID: b.ID, Team: b.TeamName, Pipeline: b.PipelineName, Job: b.JobName, Name: b.Name,
		Status: b.Status, StartTime: b.StartTime, EndTime: b.EndTime,
		AgeSeconds: seconds(since(now, b.Started())), Ref: b.Ref(),
	}
}

func (p *Provider) opBuilds() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.builds", Class: opmodel.ClassRead,
		Doc:  "Count and list builds by team, pipeline, job, status and time window (fly builds -a -c 50000 --since …), grouped by pipeline.",
		Args: buildFilterArgs,
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			q, err := p.buildQuery(c, nil, 0)
			if err != nil {
				return opmodel.Result{}, err
			}
			now := p.opts.Now()
			byStatus := map[string]int{}
			g := groups{}
			list := []BuildData{}
			count := 0
			err = cl.EachBuild(ctx, q.filter, func(b Build) error {
				if !q.keep(b) {
					return nil
				}
				count++
				byStatus[b.Status]++
				g.add(b)
				if len(list) < p.opts.MaxItems {
					list = append(list, p.buildData(b, now))
				}
				return nil
			})
			if err != nil {
				return opmodel.Result{}, err
			}
			for _, s := range BuildStatuses {
				byStatus[s] += 0
			}
			table := &opmodel.Table{Columns: []string{"team", "pipeline", "builds", "statuses"}, Noun: "pipelines"}
			for _, pg := range g.sorted() {
				table.Rows = append(table.Rows, []string{pg.Team, pg.Pipeline, strconv.Itoa(pg.Count), countsLine(pg.ByStatus, BuildStatuses)})
			}
			summary := plural(count, "build")
			if count > 0 {
				summary += fmt.Sprintf(" (%s) in %s", countsLine(byStatus, BuildStatuses), plural(len(g), "pipeline"))
			}
			// The window is the step's to say (its title: "Builds of the
			// last 4h"), not again here.
			return opmodel.Result{
				Summary: summary, Table: table,
				Data: BuildsData{
					Count: count, ByStatus: byStatus, ByPipeline: g.data(), Builds: list,
					Truncated: count > len(list), Pipelines: pipelineRefs(g),
				},
			}, nil
		},
	}
}

func pipelineRefs(g groups) []string {
	out := []string{}
	for _, pg := range g.sorted() {
		out = append(out, pg.Team+"/"+pg.Pipeline)
	}
	return out
}

func (p *Provider) opAbortBuilds() opmodel.Op {
	const op = "concourse.abort_builds"
	args := append([]opmodel.ArgSpec{
		{Name: "ids", Doc: "build ids to abort (instead of, or narrowed by, the filter)"},
		{Name: "force", Doc: "true to mark builds aborted at once (for builds stuck on a dead worker)"},
		{Name: "timeout", Doc: "how long to wait for the builds to stop (default 60s, or 1s per 30 builds when longer: Concourse turns about 60 aborted builds per second aborted)"},
	}, buildFilterArgs...)
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc:  "Abort builds that are still pending or started, chosen by ids or by filter (default status pending, since 24h), and verify they stopped.",
		Args: args,
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Plan{}, err
			}
			q, err := p.buildQuery(c, []string{StatusPending}, 24*time.Hour)
			if err != nil {
				return opmodel.Plan{}, err
			}
			for _, s := range q.filter.Statuses {
				if s != StatusPending && s != StatusStarted {
					return opmodel.Plan{}, fmt.Errorf("argument \"status\": only pending or started builds can be aborted, not %s", s)
				}
			}
			plan := opmodel.Plan{Op: op, Target: cl.Name()}
			now := p.opts.Now()
			var builds []Build
			if ids := c.Args.Strings("ids"); len(ids) > 0 {
				if c.Args.String("status") == "" {
					q.filter.Statuses = []string{StatusPending, StatusStarted}
				}
				builds, err = p.buildsByID(ctx, cl, ids, q, &plan, false)
			} else {
				if !q.hasScope() {
					return opmodel.Plan{}, errors.New("give ids or a filter (pipeline, job or team): refusing to abort every build of the target")
				}
				err = cl.EachBuild(ctx, q.filter, func(b Build) error {
					if q.keep(b) && b.Running() {
						builds = append(builds, b)
					}
					return nil
				})
			}
			if errors.Is(err, ErrNotFound) && q.filter.Team != "" && c.Args.String("pipeline") != "" {
				// A plain name in a team is listed by its own endpoint: 404.
				err = pipelineNotFound(ctx, cl, q.filter.Team, c.Args.String("pipeline"), err, q.scope)
			}
			if err != nil {
				return opmodel.Plan{}, err
			}
			g := groups{}
			byStatus := map[string]int{}
			for _, b := range builds {
				g.add(b)
				byStatus[b.Status]++
				plan.Items = append(plan.Items, opmodel.PlanItem{
					Kind: "build", ID: strconv.Itoa(b.ID),
					Attrs:  map[string]string{"team": b.TeamName, "pipeline": b.PipelineName, "job": b.JobName},
					Detail: buildDetail(b, now),
				})
			}
			plan.Summary = "no pending or started build matches"
			if len(builds) == 0 && len(c.Args.Strings("ids")) == 0 {
				if none := noPipelineMatches(ctx, cl, q, c.Args.String("pipeline")); none != "" {
					plan.Summary = none // a typo, not a quiet pipeline
				}
			}
			if len(builds) > 0 {
				where := plural(len(g), "pipeline")
				if len(g) == 1 {
					where = pipelineRefs(g)[0]
				}
				plan.Summary = fmt.Sprintf("abort %s of %s (%s)", plural(len(builds), "build"), where, countsLine(byStatus, BuildStatuses))
			}
			if c.Args.Bool("force") {
				plan.Notes = append(plan.Notes, "force: builds are marked aborted at once, even if their worker never confirms")
			}
			if err := p.buildsFound(ctx, cl, c, &plan); err != nil {
				return opmodel.Plan{}, err
			}
			return plan, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			return p.applyAbort(ctx, c, pl)
		},
	}
}

// buildsFound says, for each build of the approved plan (c.Approved) the
// plan no longer includes, what it is now: "build 812 already finished
// (succeeded)", "build 812 already aborted", "build 812 started since"
// (a plan of pending builds only), "build 812 no longer exists". The builds
// are read from their pipelines' listings (BuildsNow).
func (p *Provider) buildsFound(ctx context.Context, cl *Client, c opmodel.Call, plan *opmodel.Plan) error {
	gone := c.Gone(*plan)
	if len(gone) == 0 {
		return nil
	}
	ids := make([]int, 0, len(gone))
	scopes := map[int]BuildScope{}
	for _, it := range gone {
		n, err := strconv.Atoi(it.ID)
		if err != nil {
			continue
		}
		ids = append(ids, n)
		scopes[n] = BuildScope{Team: it.Attrs["team"], Pipeline: it.Attrs["pipeline"]}
	}
	now, err := cl.BuildsNow(ctx, ids, scopes)
	if err != nil {
		return fmt.Errorf("reading the builds of the approved plan again: %w", err)
	}
	for _, it := range gone {
		n, _ := strconv.Atoi(it.ID)
		b, ok := now[n]
		var text string
		switch {
		case !ok:
			text = fmt.Sprintf("build %s no longer exists", it.ID)
			plan.Found = append(plan.Found, opmodel.Found{Kind: it.Kind, ID: it.ID, Text: text, Gone: true})
			continue
		case b.Status == StatusAborted:
			text = fmt.Sprintf("build %d already aborted", b.ID)
		case b.Finished():
			text = fmt.Sprintf("build %d already finished (%s)", b.ID, b.Status)
		case b.Status == StatusStarted:
			text = fmt.Sprintf("build %d started since (the plan aborts builds still pending)", b.ID)
		default:
			text = fmt.Sprintf("build %d (%s, %s) no longer matches the plan's filter", b.ID, b.Ref(), b.Status)
		}
		plan.Found = append(plan.Found, opmodel.Found{Kind: it.Kind, ID: it.ID, Text: text})
	}
	return nil
}

// buildDetail describes a build for a plan: "pipeline/job #n, started 3h12m
// ago" or "…, pending (not started)".
func buildDetail(b Build, now time.Time) string {
	if t := buildCreated(b); !t.IsZero() {
		return fmt.Sprintf("%s, %s %s ago", b.Ref(), b.Status, age(since(now, t)))
	}
	return fmt.Sprintf("%s, %s (not started)", b.Ref(), b.Status)
}

func buildCreated(b Build) time.Time {
	if b.StartTime > 0 {
		return b.Started()
	}
	return time.Time{}
}

// buildsByID reads the given builds, keeping those still running that
// match q; the others become notes.
// keepFinished keeps builds whatever their status (for scans).
func (p *Provider) buildsByID(ctx context.Context, cl *Client, ids []string, q buildQuery, plan *opmodel.Plan, keepFinished bool) ([]Build, error) {
	nums := make([]int, 0, len(ids))
	for _, s := range ids {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("argument \"ids\": %q is not a build id", s)
		}
		nums = append(nums, n)
	}
	found := make([]*Build, len(nums))
	errs := make([]error, len(nums))
	cl.forEach(ctx, len(nums), func(ctx context.Context, i int) {
		b, err := cl.Build(ctx, nums[i])
		if err != nil {
			errs[i] = err
			return
		}
		found[i] = &b
	}, func(i int, err error) { errs[i] = err })
	var out []Build
	for i, b := range found {
		switch {
		case errors.Is(errs[i], ErrNotFound):
			plan.Notes = append(plan.Notes, fmt.Sprintf("build %d does not exist; skipped", nums[i]))
		case errs[i] != nil:
			return nil, errs[i]
		case !q.scope.allows(b.TeamName):
			plan.Notes = append(plan.Notes, fmt.Sprintf("build %d belongs to a team the run's channel may not act on; skipped", b.ID))
		case !b.Running() && !keepFinished:
			plan.Notes = append(plan.Notes, fmt.Sprintf("build %d is already %s; skipped", b.ID, b.Status))
		case !q.keep(*b) || (q.filter.Team != "" && b.TeamName != q.filter.Team) || !contains(q.filter.Statuses, b.Status):
			plan.Notes = append(plan.Notes, fmt.Sprintf("build %d (%s, %s) does not match the filter; skipped", b.ID, b.Ref(), b.Status))
		default:
			out = append(out, *b)
		}
	}
	return out, nil
}

func (p *Provider) applyAbort(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
	cl, err := p.client(c)
	if err != nil {
		return opmodel.Result{}, err
	}
	// the verification waits longer for more builds: Concourse turns them
	// aborted at about 60 per second
	timeout, err := c.Args.Duration("timeout", VerifyTimeout(p.opts.AbortTimeout, len(pl.Items)))
	if err != nil {
		return opmodel.Result{}, err
	}
	ids := make([]int, 0, len(pl.Items))
	attrs := map[int]map[string]string{}
	scopes := map[int]BuildScope{}
	for _, it := range pl.Items {
		n, err := strconv.Atoi(it.ID)
		if err != nil {
			return opmodel.Result{}, fmt.Errorf("plan item %q is not a build id", it.ID)
		}
		ids = append(ids, n)
		attrs[n] = it.Attrs
		scopes[n] = BuildScope{Team: it.Attrs["team"], Pipeline: it.Attrs["pipeline"]}
	}
	results, werr := cl.AbortAndWait(ctx, ids, AbortOptions{Force: c.Args.Bool("force"), Timeout: timeout, PollInterval: p.opts.AbortPoll, Scopes: scopes,
		Progress: func(pr AbortProgress) { c.Report(abortProgressLine(pr)) }})
	res := opmodel.Result{}
	counts := map[AbortOutcome]int{}
	var notStopped, failedIDs []int
	type row struct{ aborted, finished, failed int }
	rows := map[string]*row{}
	for _, r := range results {
		id := strconv.Itoa(r.ID)
		key := attrs[r.ID]["team"] + "/" + attrs[r.ID]["pipeline"]
		rw := rows[key]
		if rw == nil {
			rw = &row{}
			rows[key] = rw
		}
		counts[r.Outcome]++
		switch r.Outcome {
		case AbortAborted:
			rw.aborted++
			res.Items = append(res.Items, itemResult(id, opmodel.OutcomeSucceeded, ""))
		case AbortAlreadyFinished:
			rw.finished++
			res.Items = append(res.Items, itemResult(id, opmodel.OutcomeAlreadyDone, "finished as "+r.Status+" before the abort took effect"))
		case AbortNotStopped:
			rw.failed++
			notStopped = append(notStopped, r.ID)
			res.Items = append(res.Items, itemResult(id, opmodel.OutcomeFailed, errText(r.Err)))
		default:
			rw.failed++
			failedIDs = append(failedIDs, r.ID)
			res.Items = append(res.Items, itemResult(id, opmodel.OutcomeFailed, errText(r.Err)))
		}
	}
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	human.Sort(keys)
	res.Table = &opmodel.Table{Columns: []string{"pipeline", "aborted", "already finished", "not stopped or failed"}}
	for _, k := range keys {
		r := rows[k]
		res.Table.Rows = append(res.Table.Rows, []string{k, strconv.Itoa(r.aborted), strconv.Itoa(r.finished), strconv.Itoa(r.failed)})
	}
	shown, _ := truncate(notStopped, p.opts.MaxItems)
	res.Data = AbortData{
		Requested: len(ids), Aborted: counts[AbortAborted], AlreadyFinished: counts[AbortAlreadyFinished],
		NotStopped: listOrEmpty(shown), NotStoppedCount: len(notStopped),
		Failed: listOrEmpty(failedIDs), FailedCount: len(failedIDs),
	}
	res.Summary = fmt.Sprintf("aborted %d of %s", counts[AbortAborted], plural(len(ids), "build"))
	if n := counts[AbortAlreadyFinished]; n > 0 {
		res.Summary += fmt.Sprintf("; %d had already finished", n)
	}
	if len(notStopped) > 0 {
		res.Warn = true
		var pending, started, other []int
		for _, r := range results {
			if r.Outcome != AbortNotStopped {
				continue
			}
			switch r.Status {
			case StatusPending:
				pending = append(pending, r.ID)
			case StatusStarted:
				started = append(started, r.ID)
			default:
				other = append(other, r.ID)
			}
		}
		wait := secondsText(timeout)
		if len(pending) > 0 {
			res.Summary += fmt.Sprintf("; %d still pending after %s (%s): never started, so no worker is involved — Concourse finishes a job's aborted pending builds oldest first: they wait behind older pending builds of their job that are not aborted (abort those too: abort-pending), or for its scheduler's next look at the job",
				len(pending), wait, idList(pending, 5))
		}
		if len(started) > 0 {
			res.Summary += fmt.Sprintf("; %d still started after %s (%s): their worker does not answer — they end when it comes back or is pruned",
				len(started), wait, idList(started, 5))
		}
		if len(other) > 0 {
			res.Summary += fmt.Sprintf("; %d not seen stopped after %s (%s)", len(other), wait, idList(other, 5))
		}
	}
	if len(failedIDs) > 0 {
		res.Warn = true
		res.Summary += fmt.Sprintf("; %d failed (%s)", len(failedIDs), idList(failedIDs, 5))
	}
	if werr != nil {
		return res, fmt.Errorf("%s: abort interrupted: %w", cl.Name(), werr)
	}
	if len(ids) > 0 && counts[AbortAborted]+counts[AbortAlreadyFinished] == 0 {
		if len(failedIDs) == 0 {
			// The summary says why each is still running: the error
			// names what is true, not the why again.
			return res, fmt.Errorf("%s: no build could be aborted: %s", cl.Name(), stillRunning(results))
		}
		return res, fmt.Errorf("%s: no build could be aborted: %s", cl.Name(), res.Failed()[0].Reason)
	}
	return res, nil
}

// stillRunning says in a few words which builds an abort did not stop:
// "build 200 is still pending", "3 builds are still pending or started".
func stillRunning(results []AbortResult) string {
	var ids []int
	states := map[string]bool{}
	for _, r := range results {
		if r.Outcome == AbortNotStopped {
			ids = append(ids, r.ID)
			states[orUnknown(r.Status)] = true
		}
	}
	names := make([]string, 0, len(states))
	for s := range states {
		names = append(names, s)
	}
	sort.Strings(names)
	if len(ids) == 1 {
		return fmt.Sprintf("build %d is still %s", ids[0], names[0])
	}
	return fmt.Sprintf("%d builds are still %s", len(ids), strings.Join(names, " or "))
}

// abortProgressLine renders a bulk abort's progress for the step message:
// "aborting 1,200 / 5,000 · 310/s", then "verifying: 3,800 of 5,000 still
// pending · 60/s".
func abortProgressLine(pr AbortProgress) string {
	rate := ""
	if s := pr.Elapsed.Seconds(); s >= 0.5 && pr.Done > 0 {
		rate = fmt.Sprintf(" · %s/s", human.Count(int(float64(pr.Done)/s)))
	}
	if pr.Phase == "verifying" {
		return fmt.Sprintf("verifying: %s of %s still pending or started%s", human.Count(pr.Pending), human.Count(pr.Total), rate)
	}
	return fmt.Sprintf("aborting %s / %s%s", human.Count(pr.Done), human.Count(pr.Total), rate)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func idList(ids []int, n int) string {
	shown, cut := truncate(ids, n)
	parts := make([]string, 0, len(shown))
	for _, id := range shown {
		parts = append(parts, strconv.Itoa(id))
	}
	s := strings.Join(parts, ", ")
	if cut {
		s += fmt.Sprintf(", … %d more", len(ids)-n)
	}
	return s
}
