package concourse

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorded is one fixture of testdata/concourse.
type recorded struct {
	Request struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Body   json.RawMessage `json:"body"`
	} `json:"request"`
	Response struct {
		Status   int               `json:"status"`
		Headers  map[string]string `json:"headers"`
		BodyKind string            `json:"body_kind"`
		Body     json.RawMessage   `json:"body"`
	} `json:"response"`
}

func loadFixture(t *testing.T, name string) recorded {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "concourse", name+".json"))
	require.NoError(t, err)
	var r recorded
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

// replayServer answers requests with recorded responses, matched by method
// and path+query, and logs the requests it got (with their bodies).
type replayServer struct {
	*httptest.Server
	mu       sync.Mutex
	byKey    map[string]recorded
	requests []string
	bodies   []string
}

func newReplayServer(t *testing.T, names ...string) *replayServer {
	t.Helper()
	rs := &replayServer{byKey: map[string]recorded{}}
	for _, n := range names {
		r := loadFixture(t, n)
		rs.byKey[r.Request.Method+" "+r.Request.Path] = r
	}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		key := req.Method + " " + req.URL.RequestURI()
		rs.mu.Lock()
		rs.requests = append(rs.requests, key)
		rs.bodies = append(rs.bodies, string(body))
		r, ok := rs.byKey[key]
		rs.mu.Unlock()
		if !ok {
			http.Error(w, "no fixture for "+key, http.StatusTeapot)
			return
		}
		for k, v := range r.Response.Headers {
			if k == "Link" {
				v = strings.ReplaceAll(v, "http://127.0.0.1:8080", "http://ignored.example")
			}
			w.Header().Set(k, v)
		}
		w.WriteHeader(r.Response.Status)
		if len(r.Response.Body) == 0 || string(r.Response.Body) == "null" {
			return
		}
		if r.Response.BodyKind == "text" {
			var s string
			_ = json.Unmarshal(r.Response.Body, &s)
			_, _ = io.WriteString(w, s)
			return
		}
		_, _ = w.Write(r.Response.Body)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *replayServer) log() ([]string, []string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return append([]string(nil), rs.requests...), append([]string(nil), rs.bodies...)
}

// anonClient talks to the replay server without logging in (the recorded
// responses are for a logged-in admin).
func anonClient(t *testing.T, url string, opts ...Option) *Client {
	t.Helper()
	opts = append([]Option{WithRetry(RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond})}, opts...)
	c, err := New(TargetConfig{Name: "infra-prd", URL: url}, opts...)
	require.NoError(t, err)
	return c
}

func TestClient_RecordedWorkerErrors(t *testing.T) {
	rs := newReplayServer(t, "worker_prune_running", "worker_prune_unknown", "worker_land_unknown",
		"worker_retire_unknown", "workers_stalled_and_landed")
	c := anonClient(t, rs.URL)
	ctx := context.Background()

	tests := []struct {
		name    string
		call    func() error
		is      error
		code    int
		message string
	}{
		{"prune running", func() error { return c.PruneWorker(ctx, "worker-0") }, nil, 400,
			`infra-prd: prune worker "worker-0": 400 cannot prune running worker`},
		{"prune unknown", func() error { return c.PruneWorker(ctx, "nope") }, ErrNotFound, 404,
			`infra-prd: prune worker "nope": 404 not found`},
		{"land unknown", func() error { return c.LandWorker(ctx, "nope", "") }, ErrNotFound, 404, `land worker "nope"`},
		{"retire unknown", func() error { return c.RetireWorker(ctx, "nope", "") }, ErrNotFound, 404, `retire worker "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			var se *StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.code, se.Code)
			assert.Contains(t, err.Error(), tt.message)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.False(t, se.Retryable())
		})
	}

	t.Run("worker lookup", func(t *testing.T) {
		w, err := c.Worker(ctx, "worker-1")
		require.NoError(t, err)
		assert.Equal(t, WorkerStalled, w.State)
		_, err = c.Worker(ctx, "worker-9")
		assert.ErrorIs(t, err, ErrNotFound)
		assert.Contains(t, err.Error(), `infra-prd: worker "worker-9" not found`)
	})
}

func TestClient_RecordedForbidden(t *testing.T) {
	rs := newReplayServer(t, "forbidden_prune", "forbidden_abort", "forbidden_pause", "workers_as_non_member")
	c := anonClient(t, rs.URL)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"prune":   func() error { return c.PruneWorker(ctx, "worker-0") },
		"abort":   func() error { return c.AbortBuild(ctx, 5, false) },
		"pause":   func() error { return c.PausePipeline(ctx, "main", "demo") },
		"workers": func() error { _, err := c.Workers(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.ErrorIs(t, err, ErrForbidden)
			var se *StatusError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "forbidden", se.Reason())
			assert.Contains(t, err.Error(), "403 forbidden")
			assert.Contains(t, err.Error(), "lacks the role")
		})
	}
}

func TestClient_LandSendsTheWorkerTeam(t *testing.T) {
	// the server answers 400 to a land without body: the client always sends one
	rs := newReplayServer(t, "worker_land_landed")
	c := anonClient(t, rs.URL)
	require.NoError(t, c.LandWorker(context.Background(), "worker-0", ""))
	reqs, bodies := rs.log()
	require.Equal(t, []string{"PUT /api/v1/workers/worker-0/land"}, reqs)
	assert.JSONEq(t, `{"team":""}`, bodies[0])
}

func TestClient_RecordedCacheNotFoundUsesDetail(t *testing.T) {
	rs := newReplayServer(t, "clear_resource_cache_unknown", "task_cache_clear_unknown_job", "clear_resource_cache", "task_cache_clear")
	c := anonClient(t, rs.URL)
	ctx := context.Background()

	_, err := c.ClearResourceCache(ctx, "main", "caascad-alert-prepare", "nope")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "Resource with name 'nope' not found.")

	_, err = c.ClearTaskCache(ctx, "main", "demo", "nope", "sleep", "")
	require.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "Job with name 'nope' not found.")

	n, err := c.ClearResourceCache(ctx, "main", "caascad-alert-prepare", "repo")
	require.NoError(t, err)
	assert.Zero(t, n)
	n, err = c.ClearTaskCache(ctx, "main", "demo", "slow", "sleep", "")
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestClient_RecordedChecksDecodeTextPlainJSON(t *testing.T) {
	rs := newReplayServer(t, "check_resource", "check_resource_type", "check_resource_type_unknown")
	c := anonClient(t, rs.URL)
	ctx := context.Background()
	b, err := c.CheckResource(ctx, "main", "caascad-alert-prepare", "repo")
	require.NoError(t, err)
	assert.Equal(t, 12, b.ID)
	assert.Equal(t, "repo", b.ResourceName)
	b, err = c.CheckResourceType(ctx, "main", "caascad-alert-prepare", "registry-image")
	require.NoError(t, err)
	assert.Equal(t, StatusStarted, b.Status)
	_, err = c.CheckResourceType(ctx, "main", "caascad-alert-prepare", "nope")
	assert.ErrorIs(t, err, ErrNotFound)
	_, bodies := rs.log()
	assert.JSONEq(t, `{"from":null,"shallow":false}`, bodies[0])
}

func TestClient_RecordedPaginationFollowsLinkOnOwnHost(t *testing.T) {
	rs := newReplayServer(t, "builds_page1_limit3", "builds_page2_limit3")
	// the third page is not recorded: the replay server answers 418, so stop
	// after two pages with a limit
	c := anonClient(t, rs.URL)
	var ids []int
	err := c.EachBuild(context.Background(), BuildFilter{PageSize: 3, Limit: 6}, func(b Build) error {
		ids = append(ids, b.ID)
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []int{8, 7, 6, 5, 4, 3}, ids)
	reqs, _ := rs.log()
	assert.Equal(t, []string{"GET /api/v1/builds?limit=3", "GET /api/v1/builds?limit=3&to=5"}, reqs)
}

func TestClient_RecordedPipelineConfigTaskSteps(t *testing.T) {
	rs := newReplayServer(t, "pipeline_config")
	c := anonClient(t, rs.URL)
	cfg, err := c.PipelineConfig(context.Background(), "main", "demo")
	require.NoError(t, err)
	j, ok := cfg.Job("slow")
	require.True(t, ok)
	assert.Equal(t, []string{"sleep"}, j.TaskSteps())
	j, ok = cfg.Job("fail-image")
	require.True(t, ok)
	assert.Equal(t, []string{"oops"}, j.TaskSteps())
}

func TestClient_RecordedInfoAndUser(t *testing.T) {
	rs := newReplayServer(t, "info", "user")
	c := anonClient(t, rs.URL)
	info, err := c.Info(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "3.0", info.WorkerVersion)
	assert.Equal(t, "local", info.ClusterName)
	u, err := c.User(context.Background())
	require.NoError(t, err)
	assert.True(t, u.IsAdmin)
	assert.Equal(t, []string{"owner"}, u.Teams["main"])
}

func TestClient_RecordedUnauthorizedWithoutCredentials(t *testing.T) {
	rs := newReplayServer(t, "info_bad_token")
	c := anonClient(t, rs.URL)
	_, err := c.Info(context.Background())
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Contains(t, err.Error(), "infra-prd: read server info: 401 not authorized: target infra-prd has no credentials: set username and password_file")
	assert.False(t, errors.Is(err, ErrForbidden))
}
