package soak_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// soakSeed fixes every random choice; GROUNDCREW_SOAK_SEED changes it.
const soakSeed = 20261201

// commands are the built-in runbooks the soak draws from, with parameters
// that fit the simulator's demo world.
var commands = []string{
	"prune-stalled target=infra-prd worker=0",
	"abort-pending target=infra-prd pipeline=caascad-alert-prepare",
	"pause-pipeline target=infra-prd team=deploy pipeline=caascad-alert-prepare",
	"clear-pipeline-caches target=infra-prd team=deploy pipeline=caascad-alert-prepare job=prepare",
	"worker-lifecycle target=infra-prd worker=0 action=prune",
	"abort-build target=infra-prd build=200",
	"list-workers target=infra-prd",
	"image-fetch-failed target=infra-prd",
}

// destructive reports whether a simulator request changes the world the
// way a gated operation does.
func destructive(c concoursesim.Call) bool {
	if c.Status >= 300 || c.Method != "PUT" && c.Method != "DELETE" {
		return false
	}
	p, _, _ := strings.Cut(c.Path, "?")
	for _, s := range []string{"/prune", "/land", "/retire", "/abort", "/pause", "/cache"} {
		if strings.HasSuffix(p, s) {
			return true
		}
	}
	return false
}

var (
	alice = chatmodel.User{ID: "UALICE", Name: "alice"}
	bob   = chatmodel.User{ID: "UBOB", Name: "bob"}
	carol = chatmodel.User{ID: "UCAROL", Name: "carol"}
	chanC = chatmodel.Conversation{Platform: "test", Channel: "C1"}
)

// pick is a deterministic choice in [0, n) for a key.
func pick(seed int64, key string, n int) int {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, key)
	return int(h.Sum64() % uint64(n))
}

// TestSoakChild is the bot process the soak kills. It drives one run as
// far as it can, answering as the people would, and SIGKILLs itself at the
// SOAK_KILL_AT-th step boundary.
func TestSoakChild(t *testing.T) {
	dir := os.Getenv("SOAK_DIR")
	if dir == "" {
		t.Skip("helper process for TestSoak")
	}
	seed, _ := strconv.ParseInt(os.Getenv("SOAK_SEED"), 10, 64)
	killAt, _ := strconv.Atoi(os.Getenv("SOAK_KILL_AT"))
	attempt, _ := strconv.Atoi(os.Getenv("SOAK_ATTEMPT"))
	db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	cl, err := concourse.New(concourse.TargetConfig{Name: "infra-prd", URL: os.Getenv("SOAK_URL"), Username: "groundcrew", Password: "groundcrew",
		TSA: os.Getenv("SOAK_TSA"), Vars: map[string]string{"zone": "infra-prd", "target": "infra"}},
		concourse.WithRetry(concourse.RetryPolicy{Attempts: 2, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond}),
		concourse.WithPollInterval(10*time.Millisecond))
	require.NoError(t, err)
	cc, err := concourse.NewProvider(map[string]*concourse.Client{"infra-prd": cl}, concourse.ProviderOptions{AbortPoll: 10 * time.Millisecond, AbortTimeout: 10 * time.Second})
	require.NoError(t, err)
	reg, err := opmodel.NewRegistry(core.Provider{}, cc)
	require.NoError(t, err)
	// The PostgreSQL runbooks are broken here (no database operations); the
	// library keeps the others.
	lib, err := runbooks.NewLibrary(reg, runbooks.BuiltinSource())
	require.NotNil(t, lib, "%v", err)
	// The engine's clock moves one minute per pass and goes on across
	// restarts, so waits and timeouts elapse without real waiting.
	clock := bottest.NewClock(time.Now().Add(time.Duration(attempt) * 24 * time.Hour))
	hooks := 0
	soakChat := &bottest.Chat{}
	eng, err := bot.New(bot.Options{Store: db, Chat: soakChat, Capabilities: bot.CapabilitiesOf(db, soakChat), Ops: reg, Library: lib, Now: clock.Now, Platform: "test",
		Targets: map[string]bot.TargetInfo{"infra-prd": {Vars: map[string]string{"zone": "infra-prd", "target": "infra"}}},
		Hook: func(point string) {
			hooks++
			if killAt > 0 && hooks == killAt {
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("killed-%d", attempt)), []byte(point), 0o600)
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, eng.Resume(ctx))
	has := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	mark := func(name string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o600)) }
	violation := func(format string, a ...any) {
		_ = os.WriteFile(filepath.Join(dir, "violation"), []byte(fmt.Sprintf(format, a...)), 0o600)
		t.Fatalf(format, a...)
	}
	// send delivers a person's action: noted as sent before, as acknowledged
	// once Handle returned (a kill in between is a delivery the person sees
	// fail, and makes again).
	send := func(key string, u chatmodel.User, text string) {
		mark("sent-" + key)
		require.NoError(t, eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: u, Conversation: chanC, Text: text}))
		mark("acked-" + key)
	}
	for range 300 {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		require.NoError(t, eng.WaitIdle(wctx))
		cancel()
		clock.Advance(time.Minute)
		runs, err := db.ListRuns(ctx, runmodel.RunQuery{})
		require.NoError(t, err)
		if len(runs) == 0 {
			if has("acked-run") {
				violation("the run was acknowledged, then lost")
			}
			send("run", alice, "run "+os.Getenv("SOAK_CMD"))
			continue
		}
		r := runs[0]
		switch r.State {
		case runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled:
			mark("done")
			return
		case runmodel.RunAwaitingManual:
			st := r.Steps[r.Cursor]
			key := "manual-" + st.ID + "-" + strconv.FormatInt(st.StartedAt.UnixNano(), 36)
			if has("acked-" + key) {
				if !onRecord(t, db, r.ID, bob.ID, st.ID) {
					violation("the answer to manual step %s was acknowledged, then lost", st.ID)
				}
				return // answered and on record, yet still open: the parent sees it as resumable
			}
			verb := []string{"done", "done", "done", "skip", "fail"}[pick(seed, key, 5)]
			send(key, bob, verb+" "+r.ID)
		case runmodel.RunAwaitingApproval:
			g := r.Gate
			key := "gate-" + strings.ReplaceAll(g.ID, "/", "_")
			u, text := bob, "approve "+r.ID
			if pick(seed, key, 4) == 0 {
				u, text = carol, "reject "+r.ID+" the soak says no"
			}
			if has("acked-" + key) {
				if !onRecord(t, db, r.ID, u.ID, g.StepID) {
					violation("the vote of %s on gate %s was acknowledged, then lost", u.ID, g.ID)
				}
				// On record but the gate is still open (refused, expired
				// meanwhile): a second person approves once.
				key, u, text = key+"-2", carol, "approve "+r.ID
				if has("acked-" + key) {
					if !onRecord(t, db, r.ID, u.ID, g.StepID) {
						violation("the vote of %s on gate %s was acknowledged, then lost", u.ID, g.ID)
					}
					return
				}
			}
			f, err := os.OpenFile(filepath.Join(dir, "votes.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			require.NoError(t, err)
			send(key, u, text)
			fmt.Fprintf(f, "%s %s\n", u.ID, g.StepID) // acknowledged: must be on record
			_ = f.Sync()
			f.Close()
		default:
			eng.Tick(ctx)
			time.Sleep(2 * time.Millisecond)
		}
	}
}

// onRecord reports whether the journal of a run has a vote, refusal,
// decision or manual answer by actor on step.
func onRecord(t *testing.T, db *store.DB, runID, actor, step string) bool {
	j, err := db.Journal(context.Background(), runID)
	require.NoError(t, err)
	for _, e := range j {
		if e.Actor == actor && e.Step == step {
			switch e.Type {
			case runmodel.JVote, runmodel.JVoteRefused, runmodel.JGateDecided, runmodel.JManualDone:
				return true
			}
		}
	}
	return false
}

type soakResult struct {
	cmd                         string
	kills, applyKills, starts   int
	applies, dups, noApproval   int
	lostVotes, votes            int
	finished, resumable, broken int
	violation                   string
}

func runSoak(seed int64, i int, exe string) (res soakResult, err error) {
	res.cmd = commands[pick(seed, fmt.Sprint("cmd", i), len(commands))]
	dir, err := os.MkdirTemp("", "groundcrew-soak-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	sim, err := concoursesim.New(*concoursesim.DemoWorld(), concoursesim.WithAbortDelay(0), concoursesim.WithTSA())
	if err != nil {
		return res, err
	}
	defer sim.Close()
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
	for attempt := range 6 {
		killAt := 0
		if attempt < 3 && rng.Float64() < 0.8 {
			killAt = 1 + rng.IntN(10)
		}
		cmd := exec.Command(exe, "-test.run=^TestSoakChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SOAK_DIR="+dir, "SOAK_URL="+sim.URL(), "SOAK_TSA="+sim.TSAAddr(), "SOAK_CMD="+res.cmd,
			"SOAK_SEED="+strconv.FormatInt(seed+int64(i), 10), "SOAK_KILL_AT="+strconv.Itoa(killAt), "SOAK_ATTEMPT="+strconv.Itoa(attempt))
		out, err := cmd.CombinedOutput()
		res.starts++
		if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.Sys().(syscall.WaitStatus).Signaled() {
			res.kills++
			if p, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("killed-%d", attempt))); err == nil && strings.Contains(string(p), "apply") {
				res.applyKills++
			}
			continue
		}
		if v, rerr := os.ReadFile(filepath.Join(dir, "violation")); rerr == nil {
			res.violation = string(v)
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("child of run %d (%s) failed: %v\n%s", i, res.cmd, err, out)
		}
		if _, err := os.Stat(filepath.Join(dir, "done")); err == nil {
			break
		}
	}
	db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
	if err != nil {
		return res, err
	}
	defer db.Close()
	ctx := context.Background()
	runs, err := db.ListRuns(ctx, runmodel.RunQuery{})
	if err != nil {
		return res, err
	}
	if len(runs) != 1 {
		res.violation = fmt.Sprintf("%d runs in the store", len(runs))
		return res, nil
	}
	r := runs[0]
	switch {
	case r.State.Terminal():
		res.finished++
	case r.State == runmodel.RunAwaitingApproval || r.State == runmodel.RunAwaitingManual || r.State == runmodel.RunRunning || r.State == runmodel.RunWaiting:
		res.resumable++
	default:
		res.broken++
	}
	j, err := db.Journal(ctx, r.ID)
	if err != nil {
		return res, err
	}
	approvals := 0
	onRecord := map[string]bool{}
	for _, e := range j {
		if e.Type == runmodel.JGateDecided && (strings.HasPrefix(e.Message, "approved") || strings.Contains(e.Message, "BREAK-GLASS")) {
			approvals++
		}
		if e.Type == runmodel.JVote || e.Type == runmodel.JVoteRefused || e.Type == runmodel.JGateDecided {
			onRecord[e.Actor+" "+e.Step] = true
		}
	}
	// Each approved plan applied at most once: no destructive request is
	// made more often than there were approvals, and none without one.
	perPath := map[string]int{}
	for _, c := range sim.Calls() {
		if destructive(c) {
			perPath[c.Method+" "+c.Path]++
		}
	}
	for _, n := range perPath {
		res.applies += n
		if approvals == 0 {
			res.noApproval += n
		} else if n > approvals {
			res.dups += n - approvals
		}
	}
	// No vote lost: every acknowledged vote is in the journal.
	if data, err := os.ReadFile(filepath.Join(dir, "votes.log")); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			res.votes++
			if !onRecord[line] && !onRecord[" "+strings.Fields(line)[1]] {
				res.lostVotes++
			}
		}
	}
	n, err := db.VerifyAudit(ctx)
	if err != nil || n == 0 {
		res.violation = fmt.Sprintf("audit chain: %d entries, %v", n, err)
	}
	return res, nil
}

// TestSoak: GROUNDCREW_SOAK_RUNS (default 100) runs of random built-in
// runbooks on the simulator, with random approvals, rejections and manual
// answers and SIGKILLs at random step boundaries; then the invariants.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	n := 100
	if v, err := strconv.Atoi(os.Getenv("GROUNDCREW_SOAK_RUNS")); err == nil && v >= 0 {
		n = v
	}
	seed := int64(soakSeed)
	if v, err := strconv.ParseInt(os.Getenv("GROUNDCREW_SOAK_SEED"), 10, 64); err == nil {
		seed = v
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	start := time.Now()
	results := make([]soakResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i], errs[i] = runSoak(seed, i, exe)
		})
	}
	wg.Wait()
	var tot soakResult
	perCmd := map[string]int{}
	for i, r := range results {
		require.NoError(t, errs[i])
		perCmd[strings.Fields(r.cmd)[0]]++
		tot.kills += r.kills
		tot.applyKills += r.applyKills
		tot.starts += r.starts
		tot.applies += r.applies
		tot.dups += r.dups
		tot.noApproval += r.noApproval
		tot.votes += r.votes
		tot.lostVotes += r.lostVotes
		tot.finished += r.finished
		tot.resumable += r.resumable
		tot.broken += r.broken
		assert.Empty(t, r.violation, "run %d (%s)", i, r.cmd)
	}
	t.Logf("soak (seed %d): %d runs %v; %d processes, %d SIGKILLs (%d next to a destructive call); %d destructive requests, %d duplicates, %d without approval; %d votes, %d lost; %d finished, %d resumable, %d broken; audit chains verify; %s",
		seed, n, perCmd, tot.starts, tot.kills, tot.applyKills, tot.applies, tot.dups, tot.noApproval, tot.votes, tot.lostVotes, tot.finished, tot.resumable, tot.broken, time.Since(start).Round(100*time.Millisecond))
	assert.Zero(t, tot.dups, "an approved plan applied more than once")
	assert.Zero(t, tot.noApproval, "a destructive request without an approval")
	assert.Zero(t, tot.lostVotes, "an acknowledged vote lost")
	assert.Zero(t, tot.broken)
	assert.Equal(t, n, tot.finished+tot.resumable)
}
