package concoursesim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

const fixtureDir = "../../../testdata/concourse"

// exchange is one recorded request and response.
type exchange struct {
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

// contractCase says how to put the simulator in the state the fixture was
// recorded in, and as whom to send the request.
type contractCase struct {
	world func() *concoursesim.World
	// as: "admin" (default), "alice" (no team), "anonymous" or "bad-token".
	as string
	// setup runs requests (as admin) and moves the clock before the replay.
	setup func(t *testing.T, h *harness)
	// ignore lists JSON paths whose values differ by construction.
	ignore []string
}

var contract = map[string]contractCase{
	"info":                       {world: worldRan},
	"info_bad_token":             {world: worldRan, as: "bad-token"},
	"user":                       {world: worldRan},
	"user_no_team":               {world: worldRan, as: "alice"},
	"token_ok":                   {world: worldRan, as: "anonymous"},
	"token_bad_password":         {world: worldRan, as: "anonymous"},
	"workers_running":            {world: worldRan},
	"workers_as_non_member":      {world: worldRan, as: "alice"},
	"workers_landing":            {world: worldLanding},
	"workers_stalled_and_landed": {world: worldIncident},
	"workers_after_prune": {world: worldIncident, setup: func(t *testing.T, h *harness) {
		h.expect(t, "PUT", "/api/v1/workers/worker-1/prune", "", http.StatusOK)
	}},
	"workers_with_running_build": {world: func() *concoursesim.World { return worldQueue(true) }},
	"worker_prune_running":       {world: worldRan},
	"worker_prune_stalled":       {world: worldIncident},
	"worker_prune_unknown":       {world: worldRan},
	"forbidden_prune":            {world: worldRan, as: "alice"},
	"worker_land_landed":         {world: worldIncident},
	"worker_land_no_body":        {world: worldRan},
	"worker_land_unknown":        {world: worldRan},
	"worker_land_wrong_team":     {world: worldRan},
	"worker_retire_unknown":      {world: worldRan},

	"builds_all":              {world: worldRan},
	"builds_as_non_member":    {world: worldIncident, as: "alice"},
	"builds_page1_limit3":     {world: worldIncident},
	"builds_page2_limit3":     {world: worldIncident},
	"builds_timestamps_since": {world: worldIncident},
	"builds_started_stuck":    {world: worldStuck},
	"pipeline_builds":         {world: worldIncident},
	"job_builds":              {world: worldIncident},
	"build_one":               {world: worldRan},
	"build_pending_one":       {world: worldIncident},
	"build_abort_pending":     {world: worldIncident},
	"build_abort_started":     {world: worldStuck},
	"build_abort_finished":    {world: worldIncident},
	"build_abort_unknown":     {world: worldIncident},
	"forbidden_abort":         {world: worldIncident, as: "alice"},
	"build_after_abort": {world: worldIncident, setup: func(t *testing.T, h *harness) {
		h.expect(t, "PUT", "/api/v1/builds/3/abort", "", http.StatusNoContent)
	}},
	"build_after_abort_pending_later": {world: worldIncident, setup: abortAndWait(3)},
	"build_after_abort_started":       {world: worldStuck, setup: abortAndWait(4)},
	"build_events_aborted":            {world: worldIncident, setup: abortAndWait(3)},
	"build_events_succeeded":          {world: worldRan},
	"build_events_failed":             {world: worldRan},
	"build_events_no_workers": {world: worldNoWorkers, setup: func(t *testing.T, h *harness) {
		h.clock.Advance(10 * time.Second) // the scheduler's next tick
	}},

	"pipelines_all":            {world: worldRan},
	"team_pipelines":           {world: worldRan},
	"paused_pipelines_listing": {world: worldIncident},
	"pipeline_config":          {world: worldRan},
	"pipeline_pause":           {world: worldRan},
	"pipeline_pause_unknown":   {world: worldRan},
	"pipeline_unpause": {world: worldRan, setup: func(t *testing.T, h *harness) {
		h.expect(t, "PUT", "/api/v1/teams/main/pipelines/demo/pause", "", http.StatusOK)
	}},
	"pipelines_after_pause": {world: worldRan, setup: func(t *testing.T, h *harness) {
		h.expect(t, "PUT", "/api/v1/teams/main/pipelines/demo/pause", "", http.StatusOK)
	}},
	"forbidden_pause":                     {world: worldRan, as: "alice"},
	"jobs":                                {world: worldRan},
	"job_one":                             {world: worldRan},
	"job_trigger_build":                   {world: func() *concoursesim.World { return worldQueue(false) }},
	"serial_job":                          {world: func() *concoursesim.World { return worldQueue(true) }, ignore: []string{"$.id"}},
	"serial_job_builds_pending_page":      {world: func() *concoursesim.World { return worldQueue(true) }},
	"serial_pipeline_builds_pending_page": {world: func() *concoursesim.World { return worldQueue(true) }},

	"resources":             {world: worldRan},
	"resource_types":        {world: worldRan},
	"resources_with_types":  {world: worldIncident},
	"resource_types_custom": {world: worldIncident},
	"check_resource": {world: worldIncident, setup: func(t *testing.T, h *harness) {
		// recorded after the resource type check, which took build 11
		h.expect(t, "POST", "/api/v1/teams/main/pipelines/caascad-alert-prepare/resource-types/registry-image/check",
			`{"from":null,"shallow":false}`, http.StatusCreated)
	}},
	"check_resource_type":          {world: worldIncident},
	"check_resource_type_unknown":  {world: worldIncident},
	"clear_resource_cache":         {world: worldIncident},
	"clear_resource_cache_unknown": {world: worldIncident},
	"task_cache_clear":             {world: worldRan},
	"task_cache_clear_unknown_job": {world: worldRan},
}

func abortAndWait(id int) func(t *testing.T, h *harness) {
	return func(t *testing.T, h *harness) {
		h.expect(t, "PUT", "/api/v1/builds/"+itoa(id)+"/abort", "", http.StatusNoContent)
		h.clock.Advance(3 * time.Second)
	}
}

// TestContract_ReplaysEveryRecordedExchange sends each recorded request to
// the simulator set up like the recorded server and compares status,
// important headers and the body's shape (keys, types and stable values).
func TestContract_ReplaysEveryRecordedExchange(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "fixtures missing: copy shared/concourse/fixtures to testdata/concourse")
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			tc, ok := contract[name]
			require.True(t, ok, "fixture %s has no contract case: add one", name)
			raw, err := os.ReadFile(f)
			require.NoError(t, err)
			var ex exchange
			require.NoError(t, json.Unmarshal(raw, &ex))

			h := newHarness(t, *tc.world())
			if tc.setup != nil {
				tc.setup(t, h)
			}
			resp := h.replay(t, ex, tc.as)
			defer resp.Body.Close()

			assert.Equal(t, ex.Response.Status, resp.StatusCode, "status")
			for k, v := range ex.Response.Headers {
				got := resp.Header.Get(k)
				if strings.EqualFold(k, "Link") {
					got = strings.ReplaceAll(got, h.srv.URL(), "http://127.0.0.1:8080")
				}
				assert.Equal(t, v, got, "header %s", k)
			}
			if ex.Response.BodyKind == "text" && strings.HasPrefix(ex.Response.Headers["Content-Type"], "text/event-stream") {
				var want string
				require.NoError(t, json.Unmarshal(ex.Response.Body, &want))
				assertSameEvents(t, want, readStream(t, resp.Body))
				return
			}
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assertSameBody(t, ex.Response.BodyKind, ex.Response.Body, body, tc.ignore)
		})
	}
}

// TestContract_CoversOnlyExistingFixtures keeps the case table honest.
func TestContract_CoversOnlyExistingFixtures(t *testing.T) {
	for name := range contract {
		_, err := os.Stat(filepath.Join(fixtureDir, name+".json"))
		assert.NoError(t, err, "contract case %s has no fixture", name)
	}
}

// readStream reads SSE text up to and including the end frame, then
// closes: the server keeps the stream open after `end`.
func readStream(t *testing.T, r io.Reader) string {
	t.Helper()
	var b strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		if line == "event: end" {
			break
		}
	}
	return b.String()
}

type harness struct {
	srv   *concoursesim.Server
	clock *concoursesim.ManualClock
}

func newHarness(t *testing.T, w concoursesim.World, opts ...concoursesim.Option) *harness {
	t.Helper()
	clock := concoursesim.NewManualClock(t0)
	srv, err := concoursesim.New(w, append([]concoursesim.Option{concoursesim.WithClock(clock)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return &harness{srv: srv, clock: clock}
}

func (h *harness) do(t *testing.T, method, path, body, as string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, h.srv.URL()+path, rd)
	require.NoError(t, err)
	switch as {
	case "", "admin", "alice":
		req.Header.Set("Authorization", "Bearer "+h.srv.Token(or(as, "admin")))
	case "bad-token":
		req.Header.Set("Authorization", "Bearer not-a-token")
	case "anonymous":
	default: // another user of the world
		req.Header.Set("Authorization", "Bearer "+h.srv.Token(as))
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.srv.Client().Do(req)
	require.NoError(t, err)
	return resp
}

func (h *harness) expect(t *testing.T, method, path, body string, status int) {
	t.Helper()
	resp := h.do(t, method, path, body, "admin")
	_ = resp.Body.Close()
	require.Equal(t, status, resp.StatusCode, "%s %s", method, path)
}

// replay sends the recorded request. Token requests are recorded as
// "form (basic auth id:secret)".
func (h *harness) replay(t *testing.T, ex exchange, as string) *http.Response {
	t.Helper()
	if ex.Request.Path == "/sky/issuer/token" {
		var rec string
		require.NoError(t, json.Unmarshal(ex.Request.Body, &rec))
		form, auth, _ := strings.Cut(rec, " (basic auth ")
		id, secret, _ := strings.Cut(strings.TrimSuffix(auth, ")"), ":")
		req, err := http.NewRequest(http.MethodPost, h.srv.URL()+ex.Request.Path, strings.NewReader(form))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		resp, err := h.srv.Client().Do(req)
		require.NoError(t, err)
		return resp
	}
	body := ""
	if len(ex.Request.Body) > 0 && string(ex.Request.Body) != "null" {
		body = string(ex.Request.Body)
	}
	return h.do(t, ex.Request.Method, ex.Request.Path, body, as)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
