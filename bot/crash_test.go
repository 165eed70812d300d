package bot_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// fileWorld is a fake CI whose state lives in files, so it survives the
// test process being killed: workers.json, and applies.log with one line
// per destructive call actually made.
type fileWorld struct{ dir string }

func (w fileWorld) load() map[string]string {
	m := map[string]string{}
	b, err := os.ReadFile(filepath.Join(w.dir, "workers.json"))
	if err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

func (w fileWorld) save(m map[string]string) {
	b, _ := json.Marshal(m)
	_ = os.WriteFile(filepath.Join(w.dir, "workers.json"), b, 0o600)
}

func (w fileWorld) applies() []string {
	b, _ := os.ReadFile(filepath.Join(w.dir, "applies.log"))
	return strings.Fields(string(b))
}

func (w fileWorld) Ops() []opmodel.Op {
	return []opmodel.Op{
		{Name: "fake.workers", Class: opmodel.ClassRead, Args: []opmodel.ArgSpec{{Name: "state"}},
			Do: func(context.Context, opmodel.Call) (opmodel.Result, error) {
				m := w.load()
				st := []any{}
				for n, s := range m {
					if s != "running" {
						st = append(st, n)
					}
				}
				return opmodel.Result{Summary: fmt.Sprintf("%d workers", len(m)), Data: map[string]any{"stalled": st}}, nil
			}},
		{Name: "fake.prune", Class: opmodel.ClassDestructive, Args: []opmodel.ArgSpec{{Name: "name"}},
			Plan: func(_ context.Context, c opmodel.Call) (opmodel.Plan, error) {
				var p opmodel.Plan
				var names []string
				for n, s := range w.load() {
					if s != "running" {
						names = append(names, n)
					}
				}
				sort.Strings(names)
				for _, n := range names {
					p.Items = append(p.Items, opmodel.PlanItem{Kind: "worker", ID: n})
				}
				p.Summary = fmt.Sprintf("prune %d worker(s)", len(names))
				return p, nil
			},
			Apply: func(_ context.Context, _ opmodel.Call, p opmodel.Plan) (opmodel.Result, error) {
				f, err := os.OpenFile(filepath.Join(w.dir, "applies.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return opmodel.Result{}, err
				}
				m := w.load()
				for _, it := range p.Items {
					fmt.Fprintln(f, it.ID)
					delete(m, it.ID)
				}
				_ = f.Sync()
				f.Close()
				w.save(m)
				return opmodel.Result{Summary: "pruned"}, nil
			}},
	}
}

// TestCrashChild is the process the crash test kills. It drives one run of
// the prune runbook as far as it can, acting as bob and carol, and kills
// itself with SIGKILL at the hook point named by GC_CRASH_AT.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("GC_CRASH_DIR")
	if dir == "" {
		t.Skip("helper process for TestCrash_EveryBoundary")
	}
	crashAt, record := os.Getenv("GC_CRASH_AT"), os.Getenv("GC_RECORD")
	w := fileWorld{dir: dir}
	var points *os.File
	if record != "" {
		points, _ = os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		defer points.Close()
	}
	db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	reg, err := opmodel.NewRegistry(core.Provider{}, w)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{"prune.yaml": {Data: []byte(pruneRunbook)}}})
	require.NoError(t, err)
	chat := &bottest.Chat{}
	eng, err := bot.New(bot.Options{Store: db, Chat: chat, Capabilities: bot.CapabilitiesOf(db, chat), Ops: reg, Library: lib,
		Targets:   map[string]bot.TargetInfo{"t": {}},
		Approvals: policy.Config{Default: runmodel.Policy{Required: 2}},
		Hook: func(p string) {
			if points != nil {
				fmt.Fprintln(points, p)
			}
			if p == crashAt {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
		}})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, eng.Resume(ctx))
	marker := func(key string) bool { // true the first time only
		p := filepath.Join(dir, "marker-"+strings.NewReplacer("/", "_", ":", "_").Replace(key))
		if _, err := os.Stat(p); err == nil {
			return false
		}
		require.NoError(t, os.WriteFile(p, nil, 0o600))
		return true
	}
	for range 30 {
		require.NoError(t, eng.WaitIdle(ctx))
		runs, err := db.ListRuns(ctx, runmodel.RunQuery{})
		require.NoError(t, err)
		if len(runs) == 0 {
			if marker("started") {
				require.NoError(t, eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: alice, Conversation: chan1, Text: "run prune target=t"}))
				continue
			}
			t.Fatal("the run was lost")
		}
		r := runs[0]
		switch r.State {
		case runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled:
			return
		case runmodel.RunAwaitingManual:
			if marker("manual-" + r.Steps[r.Cursor].ID) {
				require.NoError(t, eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Conversation: chan1, Text: "done " + r.ID}))
				continue
			}
			return // the person already answered: waiting is a bug the parent sees
		case runmodel.RunAwaitingApproval:
			voted := false
			for _, u := range []chatmodel.User{bob, carol} {
				if marker("vote-" + r.Gate.ID + "-" + u.ID) {
					require.NoError(t, eng.Handle(ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: u, Conversation: chan1, Text: "approve " + r.ID}))
					voted = true
					break
				}
			}
			if !voted {
				return // every approver already voted on this gate: an approval was lost
			}
		default:
			eng.Tick(ctx)
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func runChild(t *testing.T, dir, crashAt, record string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GC_CRASH_DIR="+dir, "GC_CRASH_AT="+crashAt, "GC_RECORD="+record)
	out, err := cmd.CombinedOutput()
	if crashAt == "" {
		require.NoError(t, err, "child failed:\n%s", out)
	}
}

// TestCrash_EveryBoundary kills the process (SIGKILL) at every step
// boundary and around every destructive call, restarts it, and checks that
// the run completes with the destructive call made exactly once and no
// approval lost.
func TestCrash_EveryBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	// First, a clean run records the hook points in order.
	clean := t.TempDir()
	fileWorld{dir: clean}.save(map[string]string{"w-0": "stalled", "w-1": "running"})
	rec := filepath.Join(clean, "points")
	runChild(t, clean, "", rec)
	f, err := os.Open(rec)
	require.NoError(t, err)
	var points []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p := sc.Text(); !seen[p] {
			seen[p] = true
			points = append(points, p)
		}
	}
	f.Close()
	require.Contains(t, points, "before-apply:prune")
	require.Contains(t, points, "after-apply:prune")
	require.Len(t, fileWorld{dir: clean}.applies(), 1)

	for _, p := range points {
		t.Run(p, func(t *testing.T) {
			dir := t.TempDir()
			w := fileWorld{dir: dir}
			w.save(map[string]string{"w-0": "stalled", "w-1": "running"})
			runChild(t, dir, p, "") // killed at p
			for range 3 {           // restart until done
				runChild(t, dir, "", "")
			}
			db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
			require.NoError(t, err)
			defer db.Close()
			runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{})
			require.NoError(t, err)
			require.Len(t, runs, 1)
			assert.Equal(t, runmodel.RunSucceeded, runs[0].State, "run error: %s", runs[0].Error)
			assert.Equal(t, []string{"w-0"}, w.applies(), "the destructive call happened exactly once")
			assert.Empty(t, w.load()["w-0"])
		})
	}
}
