package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

// readyz is a replica's /readyz: its status code and body.
func (r *replica) readyz(t *testing.T) (int, haReady) {
	t.Helper()
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return 0, haReady{}
	}
	defer resp.Body.Close()
	var b haReady
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return resp.StatusCode, b
}

// bareHAEnv is an haEnv whose store the test does not open (it may not
// answer yet, or refuse).
func bareHAEnv(t *testing.T, dsn string) *haEnv {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	sim, err := concoursesim.New(*concoursesim.DemoWorld())
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	return &haEnv{t: t, dsn: dsn, sim: sim, dir: t.TempDir()}
}

// TestServe_WaitsForItsStore (#35.4): serve started while PostgreSQL is
// down waits for it instead of exiting (a crash loop on Kubernetes): it
// answers /healthz, /readyz says 503 and why (the connection error, said
// once), the log says it once, then again every minute; once the server
// is up it leads.
func TestServe_WaitsForItsStore(t *testing.T) {
	c := newPGCluster(t)
	c.ctl(t, "stop")
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres", c.port) // sslmode=prefer: pgx tries twice
	h := bareHAEnv(t, dsn)
	a := h.start("a")
	require.Eventually(t, func() bool { code, _ := a.readyz(t); return code != 0 }, 30*time.Second, 50*time.Millisecond, "serve answers at once:\n%s", a.log())
	resp, err := http.Get("http://" + a.addr + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "alive while it waits")
	require.Eventually(t, func() bool {
		_, b := a.readyz(t)
		return strings.Contains(b.Checks["store"], "connection refused")
	}, 10*time.Second, 50*time.Millisecond)
	code, b := a.readyz(t)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Equal(t, "starting", b.Role)
	assert.False(t, b.Ready)
	store := b.Checks["store"]
	assert.Contains(t, store, "waiting for the store (PostgreSQL) for ")
	assert.Equal(t, 1, strings.Count(store, "connection refused"), "said once: %s", store)
	resp, err = http.Get("http://" + a.addr + "/slack/events")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	select {
	case <-a.done:
		t.Fatalf("serve exited while the store was down:\n%s", a.log())
	default:
	}
	a.say(t, "/runbook list")
	require.Eventually(t, func() bool {
		return strings.Contains(a.log(), "⏸ Not run: /runbook list — this groundcrew does not lead now")
	},
		10*time.Second, 20*time.Millisecond, "a line typed while it waits is answered, never run later:\n%s", a.log())

	c.ctl(t, "start")
	waitRole(t, a, "leader", 30*time.Second)
	log := a.log()
	assert.Equal(t, 1, strings.Count(log, "the store does not answer; waiting for it"), "logged once (then every minute):\n%s", log)
	assert.Equal(t, 1, strings.Count(log, "connection refused"), "the error said once:\n%s", log)
	assert.Contains(t, log, "store opened: it answers now")
	assert.NotContains(t, log, "level=ERROR")
	time.Sleep(time.Second)
	assert.NotContains(t, a.log(), "prune-stalled", "the line typed while it waited (/runbook list) was not run when it led")
}

// TestServe_RefusedStoreExits (#35.4): a wrong password or a database
// that does not exist is no reason to wait: serve exits at once with what
// to fix.
func TestServe_RefusedStoreExits(t *testing.T) {
	c := newPGCluster(t)
	c.run(t, "psql", "-h", "127.0.0.1", "-p", c.port, "-U", "postgres", "-c", "CREATE ROLE groundcrew LOGIN PASSWORD 'right'")
	hba := filepath.Join(c.dir, "pg_hba.conf")
	require.NoError(t, os.WriteFile(hba+".new", []byte("local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\n"), 0o644))
	c.run(t, "cp", hba+".new", hba)
	c.run(t, "pg_ctl", "reload", "-D", c.dir)
	nodb := *pgtest.Server(t)
	nodb.Path = "/groundcrew_nosuchdb"
	cases := []struct{ name, dsn, says string }{
		{"wrong password", fmt.Sprintf("postgres://groundcrew:wrong@127.0.0.1:%s/postgres", c.port),
			`the password of role "groundcrew" is wrong: fix the store's DSN — failed to connect to ` + "`user=groundcrew database=postgres`"},
		{"no such database", nodb.String(),
			`database "groundcrew_nosuchdb" does not exist: create it (empty, owned by the role; groundcrew creates its schema) or fix the DSN`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := bareHAEnv(t, tc.dsn)
			a := h.start("a")
			select {
			case <-a.done:
			case <-time.After(20 * time.Second):
				t.Fatalf("serve did not exit:\n%s", a.log())
			}
			assert.NotZero(t, a.cmd.ProcessState.ExitCode())
			log := a.log()
			assert.Contains(t, log, tc.says)
			assert.NotContains(t, log, "waiting for it", "no retry")
			assert.Equal(t, 1, strings.Count(log, "SQLSTATE"), "said once:\n%s", log)
			assert.NotContains(t, log, "tls error", "sslmode=prefer: the refused TLS try is no news")
		})
	}
}

// TestOpenPostgresWaiting_LogsOnceThenEveryMinute: a store that does not
// answer is logged when the wait starts and again every storeLogEvery,
// not at every try; /readyz is told at every try.
func TestOpenPostgresWaiting_LogsOnceThenEveryMinute(t *testing.T) {
	defer func(b struct{ First, Max time.Duration }, every time.Duration) {
		storeBackoff, storeLogEvery = b, every
	}(storeBackoff, storeLogEvery)
	storeBackoff.First, storeBackoff.Max, storeLogEvery = 10*time.Millisecond, 20*time.Millisecond, 300*time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	var logs lockedLog
	var tries atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = openPostgresWaiting(ctx, "postgres://postgres@"+addr+"/groundcrew", 0, slog.New(slog.NewTextHandler(&logs, nil)),
		func(time.Time, error) { tries.Add(1) })
	require.ErrorIs(t, err, context.DeadlineExceeded, "it waits until told to stop")
	out := logs.String()
	assert.Equal(t, 1, strings.Count(out, "the store does not answer; waiting for it"), out)
	assert.InDelta(t, 3, strings.Count(out, "still waiting for the store"), 1, out)
	assert.Greater(t, int(tries.Load()), 10, "tried with backoff, told at every try")
}

// lockedLog is a log destination shared by goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
