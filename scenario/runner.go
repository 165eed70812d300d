package scenario

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/adapters/postgres/pgsim"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// Options configure Run.
type Options struct {
	// Runbooks are the sources of the runbook library, in order (later
	// ones replace earlier runbooks of the same name). Default: the
	// built-in library only.
	Runbooks []runbooks.Source
	// IdleTimeout bounds how long the runner waits for the engine to
	// settle after each input (default 20s).
	IdleTimeout time.Duration
	// Start is the fake clock's start (default: now, to the second).
	Start time.Time
}

// ErrSetup marks a scenario that could not be set up (bad world, runbook
// library that does not load); Result.Err wraps it.
var ErrSetup = errors.New("scenario setup failed")

// Failure is one expectation (or input) that did not hold.
type Failure struct {
	// Where is "input 3 (line 41)" or "expect (line 60)".
	Where string
	Msg   string
}

// Result is the outcome of one scenario.
type Result struct {
	Scenario *Scenario
	Failures []Failure
	// Err is set when the scenario could not run at all.
	Err error
	// Transcript is the chat thread as the fake chat saw it.
	Transcript string
	// Messages are what people read: every message posted, as it reads at
	// the end (after its edits), then the replies shown to one person.
	Messages []chatmodel.Message
	// Calls are the operation calls the engine made.
	Calls []Call
	// Summary is the end-of-run summary of the latest run (text, then
	// details), as the engine renders it from the journal.
	Summary string
	// Run is the latest run as stored at the end (nil when none started).
	Run     *runmodel.Run
	Elapsed time.Duration
}

// Passed reports whether every expectation held.
func (r *Result) Passed() bool { return r.Err == nil && len(r.Failures) == 0 }

// env is one scenario's wired world.
type env struct {
	sc    *Scenario
	o     Options
	clock *clock
	sim   *concoursesim.Server
	db    *pgsim.Sim
	rec   *recorder
	chat  *chat
	store *store.DB
	eng   *bot.Engine
	lib   *runbooks.Library
	ctx   context.Context
	// What a restart needs.
	cancel  context.CancelFunc
	parent  context.Context
	dbPath  string
	engOpts bot.Options
	// runs are the ids of the runs started, in order.
	runs []string
	// outsider is who world.api requests are made as by default: a user
	// of the world with a role, other than the one the bot logs in as.
	outsider string
}

// Run runs one scenario and checks its expectations.
func Run(ctx context.Context, sc *Scenario, o Options) *Result {
	start := time.Now()
	res := &Result{Scenario: sc}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 20 * time.Second
	}
	if len(o.Runbooks) == 0 {
		o.Runbooks = []runbooks.Source{runbooks.BuiltinSource()}
	}
	e, cleanup, err := setup(ctx, sc, o)
	defer cleanup()
	if err != nil {
		res.Err = fmt.Errorf("%w: %w", ErrSetup, err)
		res.Elapsed = time.Since(start)
		return res
	}
	for i := range sc.Inputs {
		in := &sc.Inputs[i]
		where := fmt.Sprintf("input %d (line %d)", i+1, in.Line)
		fails := e.apply(in)
		for _, f := range fails {
			res.Failures = append(res.Failures, Failure{Where: where, Msg: f})
		}
		if len(fails) > 0 && in.Expect == nil {
			break // an input that could not be applied makes the rest meaningless
		}
	}
	if len(res.Failures) == 0 || onlyCheckpointsFailed(res) {
		for _, f := range e.check(sc.Expect) {
			res.Failures = append(res.Failures, Failure{Where: fmt.Sprintf("expect (line %d)", sc.Line), Msg: f})
		}
	}
	res.Transcript = e.chat.Transcript()
	for _, p := range e.chat.Posts() {
		res.Messages = append(res.Messages, p.Msg)
	}
	for _, t := range e.chat.Ephemerals() {
		res.Messages = append(res.Messages, chatmodel.Message{Text: t})
	}
	res.Run, res.Summary = e.summary()
	res.Calls = e.rec.Calls()
	res.Elapsed = time.Since(start)
	return res
}

// onlyCheckpointsFailed reports whether every failure so far came from expect
// checkpoints (the run went on, so the final expectations are still useful).
func onlyCheckpointsFailed(res *Result) bool {
	for _, f := range res.Failures {
		if !strings.HasPrefix(f.Msg, "checkpoint: ") {
			return false
		}
	}
	return true
}

// setup wires the simulator, providers, library, store and engine.
func setup(ctx context.Context, sc *Scenario, o Options) (*env, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	startAt := o.Start
	if startAt.IsZero() {
		startAt = time.Now().UTC().Truncate(time.Second)
	}
	e := &env{sc: sc, o: o, clock: newClock(startAt), rec: &recorder{}, ctx: ctx,
		chat: &chat{groups: sc.Groups}}

	world, err := sc.World.build()
	if err != nil {
		return nil, cleanup, err
	}
	sim, err := concoursesim.New(world, concoursesim.WithClock(e.clock), concoursesim.WithAbortDelay(0), concoursesim.WithCheckDuration(0), concoursesim.WithTSA())
	if err != nil {
		return nil, cleanup, fmt.Errorf("starting the simulator: %w", err)
	}
	closers = append(closers, sim.Close)
	e.sim = sim

	user, pass := "admin", "admin"
	if len(world.Users) > 0 {
		user, pass = world.Users[0].Name, world.Users[0].Password
	}
	e.outsider = user
	for _, u := range world.Users[min(1, len(world.Users)):] {
		if u.Admin || len(u.Teams) > 0 {
			e.outsider = u.Name
			break
		}
	}
	cl, err := concourse.New(concourse.TargetConfig{Name: sc.Target, URL: sim.URL(), Username: user, Password: pass,
		TSA: sim.TSAAddr(), Vars: sc.Vars, Workers: sc.Workers, FlyTarget: sc.FlyTarget,
		// the target is configured as its web node runs
		StalledWorkerTimeout: world.StalledWorkerTimeout.D()},
		concourse.WithClock(e.clock.Now),
		concourse.WithRetry(concourse.RetryPolicy{Attempts: 2, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond}),
		concourse.WithPollInterval(10*time.Millisecond))
	if err != nil {
		return nil, cleanup, fmt.Errorf("concourse client: %w", err)
	}
	cc, err := concourse.NewProvider(map[string]*concourse.Client{sc.Target: cl}, concourse.ProviderOptions{
		Now: e.clock.Now, AbortPoll: 10 * time.Millisecond, AbortTimeout: 10 * time.Second})
	if err != nil {
		return nil, cleanup, err
	}
	dbSpec := pgsim.DatabaseSpec{Down: true}
	if sc.Database != nil {
		dbSpec = *sc.Database
	}
	dbTarget := sc.Target
	if sc.Database == nil {
		dbTarget = "" // every call says the target has no database
	}
	e.db = pgsim.New(dbTarget, dbSpec, func(team, name string) (int, bool) {
		p, ok := sim.Pipeline(team, name)
		return p.ID, ok
	})
	reg, err := opmodel.NewRegistry(e.rec.wrap(core.Provider{}), e.rec.wrap(cc), e.rec.wrap(e.db))
	if err != nil {
		return nil, cleanup, fmt.Errorf("registering operations: %w", err)
	}
	lib, err := runbooks.NewLibrary(reg, o.Runbooks...)
	if err != nil {
		return nil, cleanup, fmt.Errorf("loading the runbooks:\n%w", err)
	}
	e.lib = lib
	if _, ok := lib.Get(sc.Runbook); !ok {
		return nil, cleanup, fmt.Errorf("runbook %q is not in the library (%s)", sc.Runbook, strings.Join(lib.Names(), ", "))
	}

	dir, err := os.MkdirTemp("", "groundcrew-scenario-")
	if err != nil {
		return nil, cleanup, err
	}
	closers = append(closers, func() { _ = os.RemoveAll(dir) })
	db, err := store.Open(filepath.Join(dir, "groundcrew.db"), store.Options{})
	if err != nil {
		return nil, cleanup, err
	}
	e.store, e.dbPath, e.parent = db, filepath.Join(dir, "groundcrew.db"), ctx
	e.engOpts = bot.Options{
		Store: db, Chat: e.chat, Ops: reg, Library: lib, Platform: "scenario", Now: e.clock.Now,
		Targets:   map[string]bot.TargetInfo{sc.Target: {Vars: sc.Vars, FlyTarget: sc.FlyTarget, Team: "main", Authority: sc.Authority}},
		Approvals: sc.Approvals,
	}
	if sc.Authority == bot.AuthorityConcourse {
		// The people's roles, read from the simulator's teams' auth.
		e.engOpts.Roles = concourse.NewPersonRoles(concourse.NewRoleBook(map[string]*concourse.Client{sc.Target: cl}, time.Minute, e.clock.Now), sc.Users, nil)
	}
	closers = append(closers, e.stop)
	if err := e.start(); err != nil {
		return nil, cleanup, err
	}
	return e, cleanup, nil
}

// start creates the engine on the open store and resumes its runs.
func (e *env) start() error {
	e.engOpts.Store = e.store
	e.engOpts.Capabilities = bot.CapabilitiesOf(e.store, e.engOpts.Chat)
	eng, err := bot.New(e.engOpts)
	if err != nil {
		return err
	}
	e.eng = eng
	e.ctx, e.cancel = context.WithCancel(e.parent)
	return eng.Resume(e.ctx)
}

// stop stops the engine and closes the store.
func (e *env) stop() {
	if e.store == nil {
		return
	}
	e.cancel()
	wctx, wcancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = e.eng.WaitIdle(wctx)
	wcancel()
	_ = e.store.Close()
	e.store = nil
}

// restart stops groundcrew and starts it again on the same store file.
func (e *env) restart() error {
	e.stop()
	db, err := store.Open(e.dbPath, store.Options{})
	if err != nil {
		return fmt.Errorf("reopening the store: %w", err)
	}
	e.store = db
	if err := e.start(); err != nil {
		return fmt.Errorf("restarting the engine: %w", err)
	}
	return e.idle()
}

// build returns the simulator world.
func (w WorldSpec) build() (concoursesim.World, error) {
	switch {
	case w.Inline != nil:
		world, err := concoursesim.LoadWorld(w.Inline)
		if err != nil {
			return concoursesim.World{}, err
		}
		if len(world.Users) == 0 {
			world.Users = concoursesim.NewWorld().Users
		}
		return world, nil
	case w.Preset == "empty":
		return *concoursesim.NewWorld(), nil
	default:
		return *concoursesim.DemoWorld(), nil
	}
}

// idle waits until the engine has nothing left to do right now.
func (e *env) idle() error {
	ctx, cancel := context.WithTimeout(e.ctx, e.o.IdleTimeout)
	defer cancel()
	if err := e.eng.WaitIdle(ctx); err != nil {
		return fmt.Errorf("the engine did not settle within %s: %w", e.o.IdleTimeout, err)
	}
	return nil
}

// summary reads the latest run and renders its summary from the store.
func (e *env) summary() (*runmodel.Run, string) {
	if e.store == nil {
		return nil, ""
	}
	runs, err := e.store.ListRuns(e.ctx, runmodel.RunQuery{Limit: 1})
	if err != nil || len(runs) == 0 {
		return nil, ""
	}
	j, err := e.store.Journal(e.ctx, runs[0].ID)
	if err != nil {
		return runs[0], ""
	}
	m := e.eng.Summary(runs[0], j)
	return runs[0], m.Text + "\n---\n" + m.Detail + "\n"
}
