package main

// Failover tests: two real `groundcrew serve` processes (this test binary
// re-executed as TestHAChild) on one real PostgreSQL, the Concourse
// simulator in this process counting destructive calls. The lease is
// shortened to 4 s (renewed every 500 ms) so the suite stays short; the
// production timings (10 s / 2 s) only scale the waits.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

const haTTL = 4 * time.Second

// TestHAChild is one replica: `groundcrew serve` with the config in
// GROUNDCREW_CONFIG. It only runs when re-executed by the tests below.
func TestHAChild(t *testing.T) {
	if os.Getenv("GROUNDCREW_HA_CHILD") != "1" {
		t.Skip("a replica started by the failover tests")
	}
	leaderTimings.TTL, leaderTimings.Renew, leaderTimings.Retry = haTTL, 500*time.Millisecond, 200*time.Millisecond
	storeBackoff.First, storeBackoff.Max = 100*time.Millisecond, time.Second
	if at := os.Getenv("GROUNDCREW_HA_PAUSE_AT"); at != "" {
		// The first time the engine reaches the point, the replica says so
		// and waits for the file GROUNDCREW_HA_RESUME: the test stops the
		// whole process (SIGSTOP) meanwhile — a GC pause or a frozen VM
		// at that instant — and creates the file before SIGCONT. (A
		// process cannot stop itself at an exact point: the thread that
		// sends itself SIGSTOP runs on for a moment.)
		resume := os.Getenv("GROUNDCREW_HA_RESUME")
		var once sync.Once
		engineHook = func(point string) {
			if point == at {
				once.Do(func() {
					fmt.Fprintln(os.Stderr, "test: paused at "+point)
					for {
						if _, err := os.Stat(resume); err == nil {
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
					fmt.Fprintln(os.Stderr, "test: going on from "+point)
				})
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	root := newRoot()
	root.SetArgs([]string{"serve"})
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "groundcrew:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// haEnv is the shared world: the database, the simulator, the config.
type haEnv struct {
	t   *testing.T
	dsn string
	sim *concoursesim.Server
	dir string
	db  *pgstore.DB // unfenced: the test's view of the store
	// web, when set, is the web: section of every replica's config.
	web string
}

func newHAEnv(t *testing.T, dsn string) *haEnv {
	if testing.Short() {
		t.Skip("failover tests start real processes")
	}
	if dsn == "" {
		dsn = pgtest.NewDatabase(t, nil)
	}
	sim, err := concoursesim.New(*concoursesim.DemoWorld(), concoursesim.WithAbortDelay(0))
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	db, err := pgstore.Open(context.Background(), dsn, pgstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return &haEnv{t: t, dsn: dsn, sim: sim, dir: t.TempDir(), db: db}
}

// replica is one serve process.
type replica struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	logf  string
	done  chan struct{}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func (h *haEnv) start(name string, env ...string) *replica {
	t := h.t
	addr := freePort(t)
	require.NoError(t, os.WriteFile(filepath.Join(h.dir, "dsn"), []byte(h.dsn+"\n"), 0o600))
	cfg := fmt.Sprintf(`store:
  postgres: {dsn_file: dsn}
server: {listen: "%s"}
chat:
  platform: console
  console: {users: [alice, bob, carol], groups: {ci-oncall: [alice, bob, carol]}}
targets:
  infra-prd: {url: "%s", username: groundcrew, password: groundcrew}
approvals:
  default: {approvers: ["group:ci-oncall"], required: 1, expires: 30m}
log: {level: info, format: text}
%s`, addr, h.sim.URL(), h.web)
	path := filepath.Join(h.dir, name+".yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	r := &replica{name: name, addr: addr, logf: filepath.Join(h.dir, name+".log"), done: make(chan struct{})}
	logf, err := os.Create(r.logf)
	require.NoError(t, err)
	r.cmd = exec.Command(os.Args[0], "-test.run=^TestHAChild$", "-test.v=false")
	r.cmd.Env = append(append(os.Environ(), "GROUNDCREW_HA_CHILD=1", "GROUNDCREW_CONFIG="+path, "GROUNDCREW_STORE_DSN="), env...)
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	r.stdin, err = r.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, r.cmd.Start())
	go func() { _ = r.cmd.Wait(); logf.Close(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGCONT)
		_ = r.cmd.Process.Kill()
		<-r.done
		if t.Failed() {
			b, _ := os.ReadFile(r.logf)
			t.Logf("--- log of %s ---\n%s", r.name, tail(string(b), 60))
		}
	})
	return r
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// role asks the replica's /readyz: "leader", "standby" or "" (no answer).
func (r *replica) role() string {
	c := http.Client{Timeout: 500 * time.Millisecond}
	resp, err := c.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var b struct {
		Role  string `json:"role"`
		Ready bool   `json:"ready"`
	}
	if json.NewDecoder(resp.Body).Decode(&b) != nil {
		return ""
	}
	if b.Role == "leader" && !b.Ready {
		return "starting"
	}
	return b.Role
}

func (r *replica) say(t *testing.T, lines ...string) {
	for _, l := range lines {
		_, err := io.WriteString(r.stdin, l+"\n")
		require.NoError(t, err)
	}
}

func (r *replica) log() string {
	b, _ := os.ReadFile(r.logf)
	return string(b)
}

// waitRole waits until r has the role.
func waitRole(t *testing.T, r *replica, role string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if r.role() == role {
			return time.Since(start)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s is not %s after %s (it says %q)", r.name, role, within, r.role())
	return 0
}

// waitRun waits until the only run satisfies ok and returns it.
func (h *haEnv) waitRun(what string, within time.Duration, ok func(*runmodel.Run) bool) *runmodel.Run {
	t := h.t
	t.Helper()
	deadline := time.Now().Add(within)
	var last *runmodel.Run
	for time.Now().Before(deadline) {
		runs, err := h.db.ListRuns(context.Background(), runmodel.RunQuery{})
		if err != nil { // the database restarts in one test
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if len(runs) == 1 {
			last = runs[0]
			if ok(last) {
				return last
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	state := "no run"
	if last != nil {
		state = string(last.State)
	}
	t.Fatalf("no run %s within %s (state: %s)", what, within, state)
	return nil
}

// approveOnce has carol approve the run on r, waits for it to end, and
// checks it succeeded with the worker pruned exactly once.
func (h *haEnv) approveOnce(t *testing.T, r *replica, runID string) {
	t.Helper()
	r.say(t, "/as carol", "/runbook approve "+runID)
	done := h.waitRun("finished", 30*time.Second, ended)
	assert.Equal(t, runmodel.RunSucceeded, done.State, done.Error)
	assert.Equal(t, 1, h.prunes(), "the prune is made exactly once")
}

func (h *haEnv) prunes() int {
	n := 0
	for _, c := range h.sim.Calls() {
		p, _, _ := strings.Cut(c.Path, "?")
		if c.Method == "PUT" && strings.HasSuffix(p, "/prune") && c.Status < 300 {
			n++
		}
	}
	return n
}

func atGate(r *runmodel.Run) bool { return r.State == runmodel.RunAwaitingApproval && r.Gate != nil }

func ended(r *runmodel.Run) bool { return r.State.Terminal() }

// twoReplicas starts a, waits for it to lead, then starts b as standby.
func (h *haEnv) twoReplicas() (a, b *replica) {
	a = h.start("a")
	waitRole(h.t, a, "leader", 30*time.Second)
	b = h.start("b")
	waitRole(h.t, b, "standby", 30*time.Second)
	return a, b
}

func TestFailover_KillLeaderAtGate(t *testing.T) {
	h := newHAEnv(t, "")
	a, b := h.twoReplicas()
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)

	require.NoError(t, a.cmd.Process.Kill())
	took := waitRole(t, b, "leader", 15*time.Second)
	t.Logf("standby led %s after the leader was killed (lease %s)", took.Round(time.Millisecond), haTTL)
	got, err := h.db.GetRun(context.Background(), run.ID)
	require.NoError(t, err)
	require.True(t, atGate(got), "the gate is still open after failover (state %s)", got.State)
	assert.Zero(t, h.prunes())

	h.approveOnce(t, b, run.ID)
}

func TestFailover_KillLeaderRightAfterApproval(t *testing.T) {
	h := newHAEnv(t, "")
	a, b := h.twoReplicas()
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)
	a.say(t, "/as carol", "/runbook approve "+run.ID)
	// Kill as soon as the approval is in the store.
	h.waitRun("approved", 10*time.Second, func(r *runmodel.Run) bool { return !atGate(r) })
	require.NoError(t, a.cmd.Process.Kill())
	waitRole(t, b, "leader", 15*time.Second)
	// The new leader reconciles the step (an intent without an outcome is
	// checked, never repeated) and the run goes on to its end or to a person.
	final := h.waitRun("settled", 30*time.Second, func(r *runmodel.Run) bool {
		return r.State.Terminal() || r.State == runmodel.RunAwaitingManual || r.State == runmodel.RunAwaitingApproval
	})
	t.Logf("after failover: run %s, %d prune call(s)", final.State, h.prunes())
	assert.LessOrEqual(t, h.prunes(), 1, "the call is made once at most")
	if final.State == runmodel.RunAwaitingApproval {
		// The approval had not reached the call: the new leader asks again.
		b.say(t, "/as carol", "/runbook approve "+run.ID)
		final = h.waitRun("finished", 30*time.Second, ended)
	}
	if final.State.Terminal() {
		assert.Equal(t, runmodel.RunSucceeded, final.State, final.Error)
		assert.Equal(t, 1, h.prunes(), "one prune in all")
	}
}

func TestFailover_PausedLeaderIsFenced(t *testing.T) {
	h := newHAEnv(t, "")
	a, b := h.twoReplicas()
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	// While a sleeps, bob's approval reaches it (it is queued on its input).
	a.say(t, "/as bob", "/runbook approve "+run.ID)
	waitRole(t, b, "leader", 15*time.Second)
	b.say(t, "/as carol", "/runbook approve "+run.ID)
	done := h.waitRun("finished", 30*time.Second, ended)
	assert.Equal(t, runmodel.RunSucceeded, done.State, done.Error)
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	waitRole(t, a, "standby", 10*time.Second)
	time.Sleep(time.Second) // what a does when it wakes up has had time to fail
	assert.Equal(t, 1, h.prunes(), "no call is made twice")
	assert.Contains(t, a.log(), "stepping down", "the old leader steps down")
	// The lines typed on it while it was stopped are answered, never run
	// (#35.4): its lease had lapsed when it read them.
	require.Eventually(t, func() bool { return strings.Contains(a.log(), "⏸ Not run: /runbook approve "+run.ID) }, 5*time.Second, 20*time.Millisecond, tail(a.log(), 20))
	assert.Contains(t, a.log(), "⏸ Not run: /as bob — ") // its lease may have lapsed, or its term ended first
	assert.NotContains(t, a.log(), "you are now @bob")
	assert.Equal(t, "leader", b.role())
	got, err := h.db.GetRun(context.Background(), run.ID)
	require.NoError(t, err)
	assert.Equal(t, runmodel.RunSucceeded, got.State, "the old leader wrote nothing over the new one's work")
	n, err := h.db.VerifyAudit(context.Background())
	require.NoError(t, err, "the audit chain is one chain")
	assert.Positive(t, n)
}

// TestFailover_PausedBetweenIntentAndCall (#35.3): the leader journals the
// intent of the prune and stops (SIGSTOP) right before the call, for
// longer than its lease. The standby takes over and reconciles the step
// (the worker is still stalled: a person is asked again). When the old
// leader wakes, it sends nothing: no request reaches the simulator, and
// its log says why. The approval asked again on the new leader prunes
// once.
func TestFailover_PausedBetweenIntentAndCall(t *testing.T) {
	h := newHAEnv(t, "")
	resume := filepath.Join(h.dir, "resume")
	a := h.start("a", "GROUNDCREW_HA_PAUSE_AT=before-apply:prune", "GROUNDCREW_HA_RESUME="+resume)
	waitRole(t, a, "leader", 30*time.Second)
	b := h.start("b")
	waitRole(t, b, "standby", 30*time.Second)
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)
	a.say(t, "/as carol", "/runbook approve "+run.ID)
	require.Eventually(t, func() bool { return strings.Contains(a.log(), "test: paused at before-apply:prune") }, 20*time.Second, 5*time.Millisecond,
		"a reaches the point between the intent and the call:\n%s", tail(a.log(), 20))
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGSTOP))
	calls := len(h.sim.Calls())

	took := waitRole(t, b, "leader", 15*time.Second)
	t.Logf("standby led %s after the leader stopped (lease %s)", took.Round(time.Millisecond), haTTL)
	reconciled := h.waitRun("reconciled by the new leader", 30*time.Second, func(r *runmodel.Run) bool {
		return atGate(r) && strings.Contains(r.Gate.Reason, "was not repeated automatically")
	})
	require.NoError(t, os.WriteFile(resume, nil, 0o600))
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGCONT))
	waitRole(t, a, "standby", 10*time.Second)
	time.Sleep(time.Second) // what a does when it wakes up has had time to reach the simulator
	assert.Zero(t, h.prunes(), "no prune from the old leader")
	for _, c := range h.sim.Calls()[calls:] {
		assert.NotEqual(t, "PUT", c.Method, "no request that changes Concourse reached the simulator after a stopped: %+v", c)
	}
	require.Eventually(t, func() bool { return strings.Contains(a.log(), "not calling concourse.prune_worker") }, 10*time.Second, 20*time.Millisecond,
		"the old leader says why it sends nothing:\n%s", tail(a.log(), 20))
	log := a.log()
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "not calling") {
			t.Logf("the old leader: %s", l)
		}
	}
	assert.Contains(t, log, "this process does not surely hold the leader lease; nothing was sent")
	// Woken, it finds the lease lapsed, or (when the elector's clock check
	// ran first) itself stepped down for that reason.
	assert.Regexp(t, `why="(the leader lease lapsed [0-9.]+m?s ago \(this process was paused or cut off from the store\)|this process does not lead any more \(it stepped down\))`, log)
	assert.Regexp(t, `stepping down: lost the leader lease".*why="the lease was not renewed for [0-9.]+s \(paused or cut off from the store\)"`, log)

	h.approveOnce(t, b, reconciled.ID)
}

func TestFailover_SIGTERMHandsOver(t *testing.T) {
	h := newHAEnv(t, "")
	a, b := h.twoReplicas()
	start := time.Now()
	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	took := waitRole(t, b, "leader", 5*time.Second)
	t.Logf("standby led %s after SIGTERM", took.Round(time.Millisecond))
	assert.Less(t, time.Since(start), haTTL, "hand over, not expiry")
	select {
	case <-a.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the old leader did not exit")
	}
	assert.Contains(t, a.log(), "released the leader lease")
}

// pgCluster is a private PostgreSQL cluster in a temporary directory, for
// the test that restarts the database. As root, it runs as the postgres
// user (initdb refuses root).
type pgCluster struct {
	dir, port string
	cred      *syscall.Credential
}

func newPGCluster(t *testing.T) *pgCluster {
	for _, tool := range []string{"initdb", "pg_ctl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("CI is set and %s is missing", tool)
			}
			t.Skipf("%s not found", tool)
		}
	}
	base, err := os.MkdirTemp("", "groundcrew-pg-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	c := &pgCluster{dir: filepath.Join(base, "data"), port: strings.TrimPrefix(freePort(t), "127.0.0.1:")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user: initdb cannot run")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		require.NoError(t, os.Chmod(base, 0o755))
		require.NoError(t, os.Chown(base, uid, gid))
	}
	c.run(t, "initdb", "-D", c.dir, "-A", "trust", "-U", "postgres", "--no-sync")
	c.ctl(t, "start")
	t.Cleanup(func() { _ = c.cmd("pg_ctl", "-D", c.dir, "-m", "immediate", "stop").Run() })
	return c
}

func (c *pgCluster) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *pgCluster) run(t *testing.T, name string, args ...string) {
	out, err := c.cmd(name, args...).CombinedOutput()
	require.NoError(t, err, string(out))
}

func (c *pgCluster) ctl(t *testing.T, action string) {
	base := filepath.Dir(c.dir)
	args := []string{action, "-D", c.dir, "-w", "-l", filepath.Join(base, "pg.log"),
		"-o", fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c fsync=off", c.port, base)}
	if action != "start" {
		args = append(args, "-m", "fast")
	}
	c.run(t, "pg_ctl", args...)
}

func TestFailover_PostgreSQLRestart(t *testing.T) {
	c := newPGCluster(t)
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", c.port)
	h := newHAEnv(t, dsn)
	a, b := h.twoReplicas()
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)

	c.ctl(t, "restart")
	// Both survive; afterwards exactly one leads.
	var leader *replica
	require.Eventually(t, func() bool {
		ra, rb := a.role(), b.role()
		switch {
		case ra == "leader" && rb == "standby":
			leader = a
		case rb == "leader" && ra == "standby":
			leader = b
		default:
			return false
		}
		return true
	}, 20*time.Second, 100*time.Millisecond, "one leader after the restart")
	for _, r := range []*replica{a, b} {
		select {
		case <-r.done:
			t.Fatalf("%s exited on the database restart", r.name)
		default:
		}
	}
	h.approveOnce(t, leader, run.ID)
}

// TestFailover_SeededSoak starts runs that abort one pending build each
// and kills whichever process leads at a seeded random moment around the
// approval, restarting it as a new standby: every abort is made at most
// once and every run ends. GROUNDCREW_HA_SOAK_RUNS (default 6) and
// GROUNDCREW_HA_SOAK_SEED change the size and the seed.
func TestFailover_SeededSoak(t *testing.T) {
	runs, seed := 6, int64(20261202)
	if v, err := strconv.Atoi(os.Getenv("GROUNDCREW_HA_SOAK_RUNS")); err == nil && v > 0 {
		runs = v
	}
	if v, err := strconv.ParseInt(os.Getenv("GROUNDCREW_HA_SOAK_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d, %d runs", seed, runs)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	h := newHAEnv(t, "")
	var pending []int
	for _, b := range h.sim.Builds() {
		if b.Status == "pending" && !b.Check {
			pending = append(pending, b.ID)
		}
	}
	require.GreaterOrEqual(t, len(pending), runs)
	a, b := h.twoReplicas()
	procs := []*replica{a, b}
	leaderOf := func() *replica {
		for range 300 {
			for _, p := range procs {
				if p.role() == "leader" {
					return p
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatal("no leader within 15 s")
		return nil
	}
	ctx := context.Background()
	restarts := 0
	for i := range runs {
		build := pending[i]
		l := leaderOf()
		before, _ := h.db.ListRuns(ctx, runmodel.RunQuery{})
		l.say(t, "/as alice", fmt.Sprintf("/runbook run abort-build target=infra-prd build=%d", build))
		var run *runmodel.Run
		require.Eventually(t, func() bool {
			all, err := h.db.ListRuns(ctx, runmodel.RunQuery{})
			if err != nil || len(all) != len(before)+1 {
				return false
			}
			run = all[0]
			return atGate(run)
		}, 20*time.Second, 50*time.Millisecond, "run %d at its gate", i)
		l.say(t, "/as carol", "/runbook approve "+run.ID)
		// Kill the leader at a seeded moment: before, during or after the abort.
		time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
		require.NoError(t, l.cmd.Process.Kill())
		<-l.done
		restarts++
		for j, p := range procs {
			if p == l {
				procs[j] = h.start(fmt.Sprintf("r%d", restarts))
			}
		}
		nl := leaderOf()
		require.Eventually(t, func() bool {
			r, err := h.db.GetRun(ctx, run.ID)
			if err != nil {
				return false
			}
			if r.State == runmodel.RunAwaitingApproval {
				// The approval was lost with the killed process before it
				// was stored: the new leader gets it again.
				nl.say(t, "/as carol", "/runbook approve "+run.ID)
				time.Sleep(500 * time.Millisecond)
				return false
			}
			return r.State.Terminal() || r.State == runmodel.RunAwaitingManual
		}, 30*time.Second, 200*time.Millisecond, "run %d settles", i)
	}
	aborts := map[string]int{}
	for _, c := range h.sim.Calls() {
		p, _, _ := strings.Cut(c.Path, "?")
		if c.Method == "PUT" && strings.HasSuffix(p, "/abort") && c.Status < 300 {
			aborts[p]++
		}
	}
	for p, n := range aborts {
		assert.Equal(t, 1, n, "%s aborted %d times", p, n)
	}
	all, err := h.db.ListRuns(ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	states := map[runmodel.RunState]int{}
	for _, r := range all {
		states[r.State]++
	}
	t.Logf("%d runs, %d leader kills: %v; %d builds aborted", len(all), restarts, states, len(aborts))
	n, err := h.db.VerifyAudit(ctx)
	require.NoError(t, err)
	assert.Positive(t, n)
}

// A line typed on a standby's console is answered at once and not run: an
// approval typed there is not carried out when that replica leads later.
// After the change of leader, what is typed reaches the new term.
func TestFailover_StandbyConsoleRunsNothing(t *testing.T) {
	h := newHAEnv(t, "")
	a, b := h.twoReplicas()
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)

	b.say(t, "/as carol", "/runbook approve "+run.ID)
	require.Eventually(t, func() bool { return strings.Contains(b.log(), "⏸ Not run: /runbook approve "+run.ID) },
		10*time.Second, 50*time.Millisecond, "the standby answers at once")
	assert.Contains(t, b.log(), "this replica is a standby and runs nothing; "+a.holder(t)+" leads")

	require.NoError(t, a.cmd.Process.Signal(syscall.SIGTERM))
	waitRole(t, b, "leader", 10*time.Second)
	time.Sleep(2 * time.Second) // what b would run from its input has had time to run
	got, err := h.db.GetRun(context.Background(), run.ID)
	require.NoError(t, err)
	require.True(t, atGate(got), "the approval typed on the standby was not run (state %s)", got.State)
	assert.Zero(t, h.prunes())

	h.approveOnce(t, b, run.ID)
}

// holder is the replica's holder name, from its /readyz.
func (r *replica) holder(t *testing.T) string {
	t.Helper()
	resp, err := http.Get("http://" + r.addr + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	var b struct {
		Holder string `json:"holder"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&b))
	return b.Holder
}
