package concourse

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/groundcrew/groundcrew/internal/human"
)

// Info returns the server's version and cluster name (GET /api/v1/info).
func (c *Client) Info(ctx context.Context) (Info, error) {
	var info Info
	err := c.get(ctx, "/api/v1/info", "read server info", &info)
	return info, err
}

// User returns the logged-in user and its team roles (GET /api/v1/user).
func (c *Client) User(ctx context.Context) (UserInfo, error) {
	var u UserInfo
	err := c.get(ctx, "/api/v1/user", "read the logged-in user", &u)
	return u, err
}

// Workers lists the workers visible to the user, sorted by name.
func (c *Client) Workers(ctx context.Context) ([]Worker, error) {
	var ws []Worker
	if err := c.get(ctx, "/api/v1/workers", "list workers", &ws); err != nil {
		return nil, err
	}
	slices.SortFunc(ws, func(a, b Worker) int { return human.Compare(a.Name, b.Name) }) // worker-9 before worker-10
	c.memory.observe(ws, c.now())
	return ws, nil
}

// Worker returns one worker; the error wraps ErrNotFound when it is not
// registered (never registered, pruned or retired).
func (c *Client) Worker(ctx context.Context, name string) (Worker, error) {
	ws, err := c.Workers(ctx)
	if err != nil {
		return Worker{}, err
	}
	for _, w := range ws {
		if w.Name == name {
			return w, nil
		}
	}
	return Worker{}, notFoundError(c.cfg.Name, fmt.Sprintf("worker %q", name))
}

// workerBody is what fly sends to land and retire: the worker's team. The
// server answers 400 without a body, and 400 when the team differs from
// the worker's.
type workerBody struct {
	Team string `json:"team"`
}

// LandWorker asks the worker to land (PUT /api/v1/workers/:name/land): it
// takes no new work and becomes `landed` once its builds finish. team must
// be the worker's team as listed by Workers ("" for global workers).
func (c *Client) LandWorker(ctx context.Context, name, team string) error {
	_, err := c.call(ctx, request{
		method: http.MethodPut, path: "/api/v1/workers/" + pathEscape(name) + "/land",
		body: jsonBody(workerBody{Team: team}), action: fmt.Sprintf("land worker %q", name),
	}, nil)
	return err
}

// RetireWorker asks the worker to retire (PUT /api/v1/workers/:name/retire):
// it is deleted once its builds finish. team as for LandWorker.
func (c *Client) RetireWorker(ctx context.Context, name, team string) error {
	_, err := c.call(ctx, request{
		method: http.MethodPut, path: "/api/v1/workers/" + pathEscape(name) + "/retire",
		body: jsonBody(workerBody{Team: team}), action: fmt.Sprintf("retire worker %q", name),
	}, nil)
	return err
}

// PruneWorker removes a worker that is not running (PUT
// /api/v1/workers/:name/prune). A running worker gives a 400 StatusError
// whose Reason is "cannot prune running worker"; an unknown one ErrNotFound.
func (c *Client) PruneWorker(ctx context.Context, name string) error {
	_, err := c.call(ctx, request{
		method: http.MethodPut, path: "/api/v1/workers/" + pathEscape(name) + "/prune",
		action: fmt.Sprintf("prune worker %q", name),
	}, nil)
	return err
}
