package concourse

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Resources lists a pipeline's resources.
func (c *Client) Resources(ctx context.Context, team, pipeline string) ([]Resource, error) {
	team = c.team(team)
	var rs []Resource
	err := c.get(ctx, pipelinePath(team, pipeline)+"/resources",
		fmt.Sprintf("list resources of pipeline %s/%s", team, pipeline), &rs)
	return rs, err
}

// ResourceTypes lists a pipeline's custom resource types.
func (c *Client) ResourceTypes(ctx context.Context, team, pipeline string) ([]ResourceType, error) {
	team = c.team(team)
	var rts []ResourceType
	err := c.get(ctx, pipelinePath(team, pipeline)+"/resource-types",
		fmt.Sprintf("list resource types of pipeline %s/%s", team, pipeline), &rts)
	return rts, err
}

type checkBody struct {
	From    map[string]string `json:"from"`
	Shallow bool              `json:"shallow"`
}

// CheckResource starts a check of the resource (`fly check-resource`) and
// returns the check build (201). It does not wait for the check to finish.
func (c *Client) CheckResource(ctx context.Context, team, pipeline, resource string) (Build, error) {
	team = c.team(team)
	var b Build
	_, err := c.call(ctx, request{
		method: http.MethodPost, path: pipelinePath(team, pipeline) + "/resources/" + pathEscape(resource) + "/check",
		body: jsonBody(checkBody{}), action: fmt.Sprintf("check resource %s/%s/%s", team, pipeline, resource),
	}, &b)
	return b, err
}

// CheckResourceType starts a check of a custom resource type
// (`fly check-resource-type`), e.g. registry-image after "image fetching
// failed".
func (c *Client) CheckResourceType(ctx context.Context, team, pipeline, resourceType string) (Build, error) {
	team = c.team(team)
	var b Build
	_, err := c.call(ctx, request{
		method: http.MethodPost, path: pipelinePath(team, pipeline) + "/resource-types/" + pathEscape(resourceType) + "/check",
		body: jsonBody(checkBody{}), action: fmt.Sprintf("check resource type %s/%s/%s", team, pipeline, resourceType),
	}, &b)
	return b, err
}

type cachesRemoved struct {
	CachesRemoved int64 `json:"caches_removed"`
}

// ClearResourceCache deletes every cached version of the resource
// (`fly clear-resource-cache`) and returns how many caches were removed.
func (c *Client) ClearResourceCache(ctx context.Context, team, pipeline, resource string) (int64, error) {
	team = c.team(team)
	var out cachesRemoved
	_, err := c.call(ctx, request{
		method: http.MethodDelete, path: pipelinePath(team, pipeline) + "/resources/" + pathEscape(resource) + "/cache",
		body: []byte(`{"version":null}`), action: fmt.Sprintf("clear the cache of resource %s/%s/%s", team, pipeline, resource),
	}, &out)
	return out.CachesRemoved, err
}

// ClearTaskCache deletes the caches of one task step of a job
// (`fly clear-task-cache`); cachePath limits it to one cache path.
func (c *Client) ClearTaskCache(ctx context.Context, team, pipeline, job, step, cachePath string) (int64, error) {
	team = c.team(team)
	q := url.Values{}
	if cachePath != "" {
		q.Set("cache_path", cachePath)
	}
	var out cachesRemoved
	_, err := c.call(ctx, request{
		method: http.MethodDelete, query: q,
		path:   pipelinePath(team, pipeline) + "/jobs/" + pathEscape(job) + "/tasks/" + pathEscape(step) + "/cache",
		action: fmt.Sprintf("clear the cache of task %q in job %s/%s/%s", step, team, pipeline, job),
	}, &out)
	return out.CachesRemoved, err
}

// CheckOutcome is how a check build ended, as `fly check-resource` prints it.
type CheckOutcome struct {
	Build Build
	// Error is the check's error event ("create resource config: base
	// resource type not found: registry-image") or its last log line, for a
	// check that did not succeed.
	Error string
}

// Succeeded reports whether the check build succeeded.
func (o CheckOutcome) Succeeded() bool { return o.Build.Status == StatusSucceeded }

// WaitCheck follows a check build to its end, like fly does after
// check-resource and check-resource-type: it polls the build until it
// finishes (or timeout passes: the outcome is then the last status seen)
// and, when it did not succeed, reads its events for the error.
func (c *Client) WaitCheck(ctx context.Context, b Build, timeout time.Duration) (CheckOutcome, error) {
	start, realStart := c.now(), time.Now()
	for b.Running() {
		if c.now().Sub(start) >= timeout || time.Since(realStart) >= timeout {
			return CheckOutcome{Build: b, Error: fmt.Sprintf("still %s after %s", b.Status, timeout)}, nil
		}
		if err := c.sleep(ctx, c.poll); err != nil {
			return CheckOutcome{Build: b}, fmt.Errorf("%s: waiting for check build %d: %w", c.cfg.Name, b.ID, err)
		}
		nb, err := c.Build(ctx, b.ID)
		if err != nil {
			return CheckOutcome{Build: b}, err
		}
		b = nb
	}
	out := CheckOutcome{Build: b}
	if out.Succeeded() {
		return out, nil
	}
	evs, err := c.AllBuildEvents(ctx, b.ID)
	if err != nil {
		out.Error = "its events could not be read: " + err.Error()
		return out, nil
	}
	for _, ev := range evs {
		switch {
		case ev.Type == "error" && ev.Message != "":
			out.Error = ev.Message
		case ev.Type == "log" && strings.TrimSpace(ev.Payload) != "" && out.Error == "":
			out.Error = strings.TrimSpace(lastLine(ev.Payload))
		}
	}
	return out, nil
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
