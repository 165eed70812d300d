package concourse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

var simStart = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

// simEnv is a simulator on a manual clock and a client logged in as admin.
type simEnv struct {
	srv   *concoursesim.Server
	clock *concoursesim.ManualClock
	c     *Client
}

func newSimEnv(t *testing.T, w *concoursesim.World, simOpts []concoursesim.Option, opts ...Option) *simEnv {
	t.Helper()
	clock := concoursesim.NewManualClock(simStart)
	srv, err := concoursesim.New(*w, append([]concoursesim.Option{concoursesim.WithClock(clock)}, simOpts...)...)
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	opts = append([]Option{
		WithRetry(RetryPolicy{Attempts: 3, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}),
		WithPollInterval(time.Millisecond), WithClock(clock.Now),
	}, opts...)
	c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL(), Username: "admin", Password: "admin",
		Vars: map[string]string{"target": "infra", "zone": "infra-prd"}, Workers: ManualWorkerNaming()}, opts...)
	require.NoError(t, err)
	return &simEnv{srv: srv, clock: clock, c: c}
}

func TestNew_ValidatesConfig(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	tests := []struct {
		name string
		cfg  TargetConfig
		want string
	}{
		{"no url", TargetConfig{Name: "x"}, "url is empty"},
		{"bad scheme", TargetConfig{Name: "x", URL: "ftp://ci"}, "is not an http(s) URL"},
		{"password without user", TargetConfig{Name: "x", URL: "https://ci", Password: "p"}, "set both username and password"},
		{"missing ca", TargetConfig{Name: "x", URL: "https://ci", CACert: filepath.Join(dir, "nope.pem")}, "reading ca_cert"},
		{"ca not pem", TargetConfig{Name: "x", URL: "https://ci", CACert: notPEM}, "contains no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestNew_Defaults(t *testing.T) {
	c, err := New(TargetConfig{URL: "https://ci.infra-prd.example.com/"})
	require.NoError(t, err)
	assert.Equal(t, "ci.infra-prd.example.com", c.Name())
	assert.Equal(t, "main", c.Team())
	assert.Equal(t, "ci.infra-prd.example.com:2222", c.Config().TSA)
	c, err = New(TargetConfig{URL: "https://ci", TSA: "tsa.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "tsa.example.com:2222", c.Config().TSA)
}

func TestTargetConfig_NeverPrintsThePassword(t *testing.T) {
	cfg := TargetConfig{Name: "infra-prd", URL: "https://ci", Username: "groundcrew", Password: "s3cret-pw"}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		out := fmt.Sprintf(verb, cfg)
		assert.NotContains(t, out, "s3cret-pw", verb)
		assert.Contains(t, out, "groundcrew", verb)
	}
	var b strings.Builder
	logger := slogText(&b)
	logger.Info("target", "cfg", cfg)
	assert.NotContains(t, b.String(), "s3cret-pw")
	assert.Contains(t, b.String(), "infra-prd")
}

func TestClient_LogsInAndReusesTheToken(t *testing.T) {
	env := newSimEnv(t, concoursesim.NewWorld().RunningWorkers("w", 2), nil)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		_, err := env.c.Workers(ctx)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, env.srv.CountCalls("POST", "/sky/issuer/token"))
	assert.Equal(t, 3, env.srv.CountCalls("GET", "/api/v1/workers"))
}

func TestClient_RelogsInAfter401(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 1).StalledWorker("w-9")
	env := newSimEnv(t, w, nil)
	ctx := context.Background()
	_, err := env.c.Workers(ctx)
	require.NoError(t, err)

	env.srv.ExpireTokens() // e.g. the tokens were garbage-collected
	ws, err := env.c.Workers(ctx)
	require.NoError(t, err, "a GET is repeated after logging in again")
	assert.Len(t, ws, 2)

	env.srv.ExpireTokens()
	require.NoError(t, env.c.PruneWorker(ctx, "w-9"), "a write refused with 401 was not performed, so it is repeated once")
	assert.Equal(t, 3, env.srv.CountCalls("POST", "/sky/issuer/token"))
	assert.Equal(t, 2, env.srv.CountCalls("PUT", "/api/v1/workers/w-9/prune"))
	_, ok := env.srv.Worker("w-9")
	assert.False(t, ok)
}

func TestClient_RelogsInBeforeExpiry(t *testing.T) {
	env := newSimEnv(t, concoursesim.NewWorld(), []concoursesim.Option{concoursesim.WithTokenTTL(time.Hour)})
	ctx := context.Background()
	_, err := env.c.Info(ctx)
	require.NoError(t, err)
	env.clock.Advance(59*time.Minute + 30*time.Second) // inside the one-minute margin
	_, err = env.c.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, env.srv.CountCalls("POST", "/sky/issuer/token"))
	assert.Zero(t, countStatus(env.srv, http.StatusUnauthorized), "no request should have been refused")
}

func countStatus(srv *concoursesim.Server, status int) int {
	n := 0
	for _, c := range srv.Calls() {
		if c.Status == status {
			n++
		}
	}
	return n
}

func TestClient_BadPasswordIsUnauthorizedWithHint(t *testing.T) {
	srv, err := concoursesim.New(*concoursesim.NewWorld())
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	c, err := New(TargetConfig{Name: "infra-prd", URL: srv.URL(), Username: "admin", Password: "wrong"})
	require.NoError(t, err)
	err = c.Login(context.Background())
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Equal(t, `login failed for target infra-prd as user admin: 401 Invalid username or password: check password_file (and that the user exists in Concourse)`, err.Error())
	assert.NotContains(t, err.Error(), "wrong")
	_, err = c.Workers(context.Background())
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.Equal(t, 0, srv.CountCalls("GET", "/api/v1/workers"), "no API call without a token")
}

func TestClient_RetriesGetsOn5xxOnly(t *testing.T) {
	env := newSimEnv(t, concoursesim.NewWorld().RunningWorkers("w", 1).StalledWorker("w-9"), nil)
	ctx := context.Background()

	t.Run("GET retried until it succeeds", func(t *testing.T) {
		env.srv.InjectFault(concoursesim.Fault{Method: "GET", Path: "/api/v1/workers", Status: 502, Times: 2})
		ws, err := env.c.Workers(ctx)
		require.NoError(t, err)
		assert.Len(t, ws, 2)
		assert.Equal(t, 3, env.srv.CountCalls("GET", "/api/v1/workers"))
	})
	t.Run("GET gives up after the attempts", func(t *testing.T) {
		env.srv.ResetCalls()
		env.srv.InjectFault(concoursesim.Fault{Method: "GET", Path: "/api/v1/workers", Status: 503, Times: 5})
		_, err := env.c.Workers(ctx)
		var se *StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 503, se.Code)
		assert.True(t, se.Retryable())
		assert.Contains(t, err.Error(), "retry later or check its logs")
		assert.Equal(t, 3, env.srv.CountCalls("GET", "/api/v1/workers"))
	})
	t.Run("PUT never retried", func(t *testing.T) {
		env.srv.ResetCalls()
		env.srv.InjectFault(concoursesim.Fault{Method: "PUT", Path: "/api/v1/workers/w-9/prune", Status: 502})
		err := env.c.PruneWorker(ctx, "w-9")
		var se *StatusError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 502, se.Code)
		assert.Equal(t, 1, env.srv.CountCalls("PUT", "/api/v1/workers/w-9/prune"))
		_, ok := env.srv.Worker("w-9")
		assert.True(t, ok, "the worker is still there: nothing retried behind our back")
	})
	t.Run("4xx not retried", func(t *testing.T) {
		env.srv.ResetCalls()
		_, err := env.c.Build(ctx, 424242)
		require.ErrorIs(t, err, ErrNotFound)
		assert.Equal(t, 1, env.srv.CountCalls("GET", "/api/v1/builds/424242"))
	})
}

func TestClient_RetriesGetTimeouts(t *testing.T) {
	env := newSimEnv(t, concoursesim.NewWorld().RunningWorkers("w", 1), nil, WithRequestTimeout(50*time.Millisecond))
	env.srv.InjectFault(concoursesim.Fault{Path: "/api/v1/workers", Status: 200, Delay: time.Second})
	ws, err := env.c.Workers(context.Background())
	require.NoError(t, err)
	assert.Len(t, ws, 1)
}

func TestClient_ContextCancelStopsRetries(t *testing.T) {
	env := newSimEnv(t, concoursesim.NewWorld(), nil,
		WithRetry(RetryPolicy{Attempts: 10, BaseDelay: time.Hour, MaxDelay: time.Hour}))
	_, err := env.c.Info(context.Background()) // log in first
	require.NoError(t, err)
	env.srv.InjectFault(concoursesim.Fault{Path: "/api/v1/info", Status: 500, Times: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = env.c.Info(ctx)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	var se *StatusError
	assert.True(t, errors.As(err, &se), "the last server error is kept: %v", err)
	assert.Contains(t, err.Error(), "gave up waiting to retry")
}

func slogText(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func TestClient_UnreachableServerSaysWhatToCheck(t *testing.T) {
	c, err := New(TargetConfig{Name: "infra-prd", URL: "http://127.0.0.1:1"},
		WithRetry(RetryPolicy{Attempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
	require.NoError(t, err)
	_, err = c.Workers(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "infra-prd: list workers: cannot reach 127.0.0.1:1 (check the target's url and that the web node is up)")
}
