package concourse

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// DefaultScanPattern is what the manual's "image fetching failed" runbook
// looks for.
const DefaultScanPattern = "image fetching failed"

func (p *Provider) opBuildEventsScan() opmodel.Op {
	args := append([]opmodel.ArgSpec{
		{Name: "pattern", Doc: "text to look for in log and error events (default \"image fetching failed\")"},
		{Name: "regex", Doc: "true to read pattern as a regular expression"},
		{Name: "context", Doc: "lines of output to keep before and after each match (default 4)"},
		{Name: "ids", Doc: "scan these build ids instead of filtering"},
	}, buildFilterArgs...)
	return opmodel.Op{
		Name: "concourse.build_events_scan", Class: opmodel.ClassRead,
		Doc:  "Find a text in the logs of builds (default: errored builds of the last 3h) with the step it came from, like fly watch | grep -B 4.",
		Args: args,
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			re, text, err := scanPattern(c.Args)
			if err != nil {
				return opmodel.Result{}, err
			}
			lines, err := c.Args.Int("context", 4)
			if err != nil {
				return opmodel.Result{}, err
			}
			q, err := p.buildQuery(c, []string{StatusErrored}, 3*time.Hour)
			if err != nil {
				return opmodel.Result{}, err
			}
			if c.Args.String("limit") == "" {
				q.filter.Limit = 3000 // the manual's fly builds -c 3000
			}
			var builds []Build
			if ids := c.Args.Strings("ids"); len(ids) > 0 {
				plan := opmodel.Plan{}
				q.filter.Statuses = BuildStatuses
				if builds, err = p.buildsByIDAny(ctx, cl, ids, &plan); err != nil {
					return opmodel.Result{}, err
				}
			} else {
				err = cl.EachBuild(ctx, q.filter, func(b Build) error {
					if q.keep(b) {
						builds = append(builds, b)
					}
					return nil
				})
				if err != nil {
					return opmodel.Result{}, err
				}
			}
			return p.scanBuilds(ctx, cl, builds, re, text, lines, q.filter.Statuses)
		},
	}
}

func scanPattern(a opmodel.Args) (*regexp.Regexp, string, error) {
	text := a.String("pattern")
	if text == "" {
		text = DefaultScanPattern
	}
	expr := regexp.QuoteMeta(text)
	if a.Bool("regex") {
		expr = text
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, "", fmt.Errorf("argument \"pattern\": %q is not a regular expression: %v", text, err)
	}
	return re, text, nil
}

// buildsByIDAny reads builds by id whatever their status.
func (p *Provider) buildsByIDAny(ctx context.Context, cl *Client, ids []string, plan *opmodel.Plan) ([]Build, error) {
	return p.buildsByID(ctx, cl, ids, buildQuery{filter: BuildFilter{Statuses: BuildStatuses}}, plan, true)
}

type scanHit struct {
	build Build
	m     EventMatch
}

func (p *Provider) scanBuilds(ctx context.Context, cl *Client, builds []Build, re *regexp.Regexp, text string, lines int, sts []string) (opmodel.Result, error) {
	hits := make([][]EventMatch, len(builds))
	errs := make([]error, len(builds))
	cl.forEach(ctx, len(builds), func(ctx context.Context, i int) {
		hits[i], errs[i] = cl.ScanBuildEvents(ctx, builds[i].ID, re, lines)
	}, func(i int, err error) { errs[i] = err })
	if err := ctx.Err(); err != nil {
		return opmodel.Result{}, fmt.Errorf("%s: scanning build events: %w", cl.Name(), err)
	}
	var all []scanHit
	var scanErrs []string
	g := groups{}
	perPipeline := map[string][]int{}
	for i, b := range builds {
		if errs[i] != nil {
			scanErrs = append(scanErrs, errs[i].Error())
			continue
		}
		if len(hits[i]) == 0 {
			continue
		}
		g.add(b)
		key := b.TeamName + "/" + b.PipelineName
		perPipeline[key] = append(perPipeline[key], b.ID)
		for _, m := range hits[i] {
			all = append(all, scanHit{build: b, m: m})
		}
	}
	matches := []EventMatchData{}
	table := &opmodel.Table{Columns: []string{"build", "pipeline/job", "line"}, Noun: "matches"}
	var detail strings.Builder
	for _, h := range all {
		if len(matches) >= p.opts.MaxItems {
			break
		}
		matches = append(matches, EventMatchData{
			BuildID: h.build.ID, Team: h.build.TeamName, Pipeline: h.build.PipelineName, Job: h.build.JobName,
			Build: h.build.Name, Status: h.build.Status, Line: h.m.Line.Text, Event: h.m.Line.EventType,
			Origin: h.m.Line.Origin.ID, Source: h.m.Line.Origin.Source,
			Before: listOrEmpty(h.m.Before), After: listOrEmpty(h.m.After),
		})
		table.Rows = append(table.Rows, []string{strconv.Itoa(h.build.ID), h.build.PipelineName + "/" + h.build.JobName, h.m.Line.Text})
		fmt.Fprintf(&detail, "==> %s (build %d, %s)\n", h.build.Ref(), h.build.ID, h.build.Status)
		for _, l := range h.m.Before {
			detail.WriteString("    " + l + "\n")
		}
		detail.WriteString("  > " + h.m.Line.Text + "\n")
		for _, l := range h.m.After {
			detail.WriteString("    " + l + "\n")
		}
	}
	byPipeline := []ScanPipeline{}
	for _, pg := range g.sorted() {
		ids := perPipeline[pg.Team+"/"+pg.Pipeline]
		sort.Ints(ids)
		byPipeline = append(byPipeline, ScanPipeline{Team: pg.Team, Pipeline: pg.Pipeline, Count: pg.Count, BuildIDs: ids})
	}
	matched := 0
	for _, h := range hits {
		if len(h) > 0 {
			matched++
		}
	}
	if len(table.Rows) == matched {
		table.Noun = "builds" // one line each
	}
	what := strings.Join(sts, "/")
	summary := fmt.Sprintf("%q in %d of %d %s builds", text, matched, len(builds), what)
	if matched > 0 {
		summary += fmt.Sprintf(" (%s: %s)", plural(len(g), "pipeline"), strings.Join(pipelineRefs(g), ", "))
	}
	if len(scanErrs) > 0 {
		summary += fmt.Sprintf("; %d builds could not be read", len(scanErrs))
	}
	shownErrs, _ := truncate(scanErrs, 10)
	return opmodel.Result{
		Summary: summary, Table: table, Detail: detail.String(), Warn: matched > 0 || len(scanErrs) > 0,
		Data: ScanData{
			Pattern: text, BuildsScanned: len(builds), BuildsMatched: matched, MatchCount: len(all),
			Matches: matches, ByPipeline: byPipeline, Pipelines: pipelineRefs(g), Errors: listOrEmpty(shownErrs),
		},
	}, nil
}

// ScanData is the result of concourse.build_events_scan.
type ScanData struct {
	Pattern       string           `json:"pattern"`
	BuildsScanned int              `json:"builds_scanned"`
	BuildsMatched int              `json:"builds_matched"`
	MatchCount    int              `json:"match_count"`
	Matches       []EventMatchData `json:"matches"`
	ByPipeline    []ScanPipeline   `json:"by_pipeline"`
	Pipelines     []string         `json:"pipelines"` // team/pipeline, e.g. for check_resource_type
	Errors        []string         `json:"errors"`    // builds that could not be read
}

// EventMatchData is one matching line with its context.
type EventMatchData struct {
	BuildID  int      `json:"build_id"`
	Team     string   `json:"team"`
	Pipeline string   `json:"pipeline"`
	Job      string   `json:"job"`
	Build    string   `json:"build"`
	Status   string   `json:"status"`
	Line     string   `json:"line"`
	Event    string   `json:"event"`  // log or error
	Origin   string   `json:"origin"` // plan id
	Source   string   `json:"source"` // stdout, stderr or ""
	Before   []string `json:"before"`
	After    []string `json:"after"`
}

// ScanPipeline is one pipeline's matching builds.
type ScanPipeline struct {
	Team     string `json:"team"`
	Pipeline string `json:"pipeline"`
	Count    int    `json:"count"`
	BuildIDs []int  `json:"build_ids"`
}
