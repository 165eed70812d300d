package concourse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// BuildFilter selects builds, like `fly builds` flags.
//
// Scope: Job (with Pipeline) lists one job's builds, Pipeline one pipeline's,
// Team one team's; with none of them every build the user can see
// (`fly builds -a` for an admin). Pipeline and Job use Team, or the target's
// team when Team is empty.
//
// Window: Since/Until compare with a build's start time (end time for
// builds aborted before they started). Builds that have not started yet
// (pending) have no time and count as current: they match unless Until is
// set. Note that Concourse's own `timestamps=true` listing (what
// `fly builds --since` uses) never returns pending builds.
type BuildFilter struct {
	Team     string
	Pipeline string
	Job      string
	// Statuses keeps builds whose status is listed (all when empty).
	Statuses []string
	Since    time.Time
	Until    time.Time
	// Limit stops after this many matching builds (0: no limit).
	Limit int
	// PageSize is the number of builds per request (default 500; for a
	// time-filtered request, default MaxWindowBuilds).
	PageSize int
}

// MaxWindowBuilds is the `limit` of one timestamps=true request, as in the
// operations manual's `fly builds -c 50000`.
const MaxWindowBuilds = 50000

func (f BuildFilter) path(defTeam string) (string, error) {
	team := f.Team
	if team == "" && (f.Pipeline != "" || f.Job != "") {
		team = defTeam
	}
	switch {
	case f.Job != "" && f.Pipeline == "":
		return "", errors.New("a job filter needs its pipeline")
	case f.Job != "":
		return pipelinePath(team, f.Pipeline) + "/jobs/" + pathEscape(f.Job) + "/builds", nil
	case f.Pipeline != "":
		return pipelinePath(team, f.Pipeline) + "/builds", nil
	case team != "":
		return teamPath(team) + "/builds", nil
	}
	return "/api/v1/builds", nil
}

func (f BuildFilter) describe() string {
	switch {
	case f.Job != "":
		return fmt.Sprintf("list builds of job %s/%s", f.Pipeline, f.Job)
	case f.Pipeline != "":
		return fmt.Sprintf("list builds of pipeline %q", f.Pipeline)
	case f.Team != "":
		return fmt.Sprintf("list builds of team %q", f.Team)
	}
	return "list builds"
}

// matches applies the status and window filters.
func (f BuildFilter) matches(b Build) bool {
	if len(f.Statuses) > 0 && !slices.Contains(f.Statuses, b.Status) {
		return false
	}
	t := buildTime(b)
	if t == 0 {
		return f.Until.IsZero()
	}
	if !f.Since.IsZero() && t < f.Since.Unix() {
		return false
	}
	if !f.Until.IsZero() && t > f.Until.Unix() {
		return false
	}
	return true
}

// useTimestamps reports whether the server-side time filter returns every
// build the filter wants: only builds that started have a start time.
func (f BuildFilter) useTimestamps() bool {
	if f.Since.IsZero() && f.Until.IsZero() || len(f.Statuses) == 0 {
		return false
	}
	for _, s := range f.Statuses {
		if s == StatusPending || s == StatusAborted {
			return false
		}
	}
	return true
}

func buildTime(b Build) int64 {
	if b.StartTime > 0 {
		return b.StartTime
	}
	return b.EndTime
}

// EachBuild calls fn for every build matching the filter, newest first,
// reading one page at a time so that tens of thousands of builds never sit
// in memory. It follows the Link rel="next" pagination; when the filter has
// a window and only statuses that imply a start time, it first asks the
// server to filter by time (timestamps=true). fn may return ErrStop to end
// early. With Since set, paging stops after a whole page with no build
// running or inside the window.
func (c *Client) EachBuild(ctx context.Context, f BuildFilter, fn func(Build) error) error {
	path, err := f.path(c.cfg.Team)
	if err != nil {
		return fmt.Errorf("%s: %w", c.cfg.Name, err)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && f.Since.After(f.Until) {
		return fmt.Errorf("%s: builds window: since %s is after until %s", c.cfg.Name, f.Since.Format(time.RFC3339), f.Until.Format(time.RFC3339))
	}
	pageSize := f.PageSize
	if pageSize <= 0 {
		pageSize = 500
	}
	delivered := 0
	deliver := func(b Build) error {
		if !f.matches(b) {
			return nil
		}
		if err := fn(b); err != nil {
			return err
		}
		delivered++
		if f.Limit > 0 && delivered >= f.Limit {
			return ErrStop
		}
		return nil
	}
	action := f.describe()
	q := url.Values{}
	if f.useTimestamps() {
		limit := MaxWindowBuilds
		if f.PageSize > 0 {
			limit = f.PageSize
		}
		if f.Limit > 0 && f.Limit < limit {
			limit = f.Limit
		}
		q.Set("timestamps", "true")
		if !f.Since.IsZero() {
			q.Set("from", strconv.FormatInt(f.Since.Unix(), 10))
		}
		if !f.Until.IsZero() {
			q.Set("to", strconv.FormatInt(f.Until.Unix(), 10))
		}
		q.Set("limit", strconv.Itoa(limit))
		pg, err := c.buildPage(ctx, path, q, action, deliver)
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
		if pg.count < limit || pg.minID <= 1 {
			return nil
		}
		// The server cut the window at `limit`: continue below the oldest
		// build seen, paging by id and filtering here.
		q = url.Values{"to": {strconv.Itoa(pg.minID - 1)}}
	}
	q.Set("limit", strconv.Itoa(pageSize))
	for {
		pg, err := c.buildPage(ctx, path, q, action, deliver)
		if errors.Is(err, ErrStop) {
			return nil
		}
		if err != nil {
			return err
		}
		if pg.next == nil || pg.count == 0 {
			return nil
		}
		if !f.Since.IsZero() && !pg.recent(f.Since.Unix()) {
			return nil
		}
		q = pg.next
	}
}

// Builds returns the matching builds (see EachBuild). Use EachBuild to
// aggregate large histories.
func (c *Client) Builds(ctx context.Context, f BuildFilter) ([]Build, error) {
	var out []Build
	err := c.EachBuild(ctx, f, func(b Build) error {
		out = append(out, b)
		return nil
	})
	return out, err
}

type buildPage struct {
	count     int
	minID     int
	newestRun int64 // newest start/end time in the page
	running   bool  // the page has a pending or started build
	next      url.Values
}

func (p buildPage) recent(since int64) bool { return p.running || p.newestRun >= since }

// buildPage fetches one page and streams its builds to fn.
func (c *Client) buildPage(ctx context.Context, path string, q url.Values, action string, fn func(Build) error) (buildPage, error) {
	resp, cancel, err := c.send(ctx, request{method: http.MethodGet, path: path, query: q, action: action})
	if err != nil {
		return buildPage{}, err
	}
	defer cancel()
	defer drain(resp.Body)
	pg := buildPage{next: nextPage(resp.Header)}
	dec := json.NewDecoder(resp.Body)
	if err := expectDelim(dec, '['); err != nil {
		return pg, fmt.Errorf("%s: %s: decoding builds: %w", c.cfg.Name, action, err)
	}
	for dec.More() {
		var b Build
		if err := dec.Decode(&b); err != nil {
			return pg, fmt.Errorf("%s: %s: decoding builds: %w", c.cfg.Name, action, err)
		}
		pg.count++
		if pg.minID == 0 || b.ID < pg.minID {
			pg.minID = b.ID
		}
		if b.Running() {
			pg.running = true
		}
		if t := buildTime(b); t > pg.newestRun {
			pg.newestRun = t
		}
		if err := fn(b); err != nil {
			return pg, err
		}
	}
	return pg, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("expected %q, got %v", want, tok)
	}
	return nil
}

// nextPage returns the query of the Link rel="next" target, if any. Only
// the query is used: the link is absolute on the server's external URL,
// which may differ from the URL the bot uses.
func nextPage(h http.Header) url.Values {
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if !strings.Contains(part, `rel="next"`) {
				continue
			}
			start, end := strings.Index(part, "<"), strings.Index(part, ">")
			if start < 0 || end < start {
				continue
			}
			u, err := url.Parse(part[start+1 : end])
			if err != nil {
				continue
			}
			return u.Query()
		}
	}
	return nil
}

// Build returns one build (GET /api/v1/builds/:id).
func (c *Client) Build(ctx context.Context, id int) (Build, error) {
	var b Build
	err := c.get(ctx, "/api/v1/builds/"+strconv.Itoa(id), fmt.Sprintf("read build %d", id), &b)
	return b, err
}

// AbortBuild asks Concourse to abort a build (PUT /api/v1/builds/:id/abort).
// The server answers 204 at once, also for finished builds, and the status
// changes later: use AbortAndWait to know the outcome. force also marks a
// pending or started build aborted at once, for builds stuck on a dead
// worker.
func (c *Client) AbortBuild(ctx context.Context, id int, force bool) error {
	q := url.Values{}
	if force {
		q.Set("force", "")
	}
	_, err := c.call(ctx, request{
		method: http.MethodPut, path: "/api/v1/builds/" + strconv.Itoa(id) + "/abort", query: q,
		action: fmt.Sprintf("abort build %d", id),
	}, nil)
	return err
}
