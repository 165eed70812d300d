package concourse

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
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
