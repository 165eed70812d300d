package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/groundcrew/groundcrew/adapters/chatplatform"
	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/adapters/postgres"
	"github.com/groundcrew/groundcrew/adapters/postgres/pgsim"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/checkpoint"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/metrics"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
	"golang.org/x/sync/errgroup"
)

// app is the wired bot.
type app struct {
	// workerMemory is each target's concourse.WorkerMemory, shared by its
	// clients (concourseOptions); memMu guards the map.
	memMu        sync.Mutex
	workerMemory map[string]*concourse.WorkerMemory
	// threads lets the engine ask the incidents, wired after it, about a thread.
	threads lateNotes
	// commands lets the engine hand the incidents, wired after it, their commands.
	commands lateCommands
	cfg      *config.Config
	log      *slog.Logger
	db       appStore
	reg      *opmodel.Registry
	lib      *runbooks.Library
	eng      *bot.Engine
	// caps are the optional parts of the store and chat the engine got.
	caps bot.Capabilities
	chat chatplatform.Chat
	// outbox is the one durable outbox every subsystem posts through.
	outbox *delivery.Outbox
	// groupTTL is how long the engine caches group members.
	groupTTL time.Duration
	mux      *http.ServeMux
	console  bool
	sims     []*concoursesim.Server
	digests  *digest.Scheduler
	audit    *checkpoint.Checkpointer
	closers  []func()
	// concourse are the targets' Concourse clients (the role book reads
	// the teams' auth with them).
	concourse map[string]*concourse.Client
	metrics   *metrics.Metrics
	health    health
	// httpAddr is where the HTTP server listens, once run started it.
	httpAddr atomic.Pointer[string]
	// incidents: alerts and watch rules (incidents.go).
	incidents *incidents
	digestSrc digest.Source
	// reloads applies configuration reloads (reload.go).
	reloads reloader
	// external: see appOptions.external.
	external bool
	// now is appOptions.Now: nil is the real clock. Simulators and their
	// clients read it too, so a demo's world has one clock.
	now func() time.Time
	// web are the pages of runs and incidents (nil when web: is not
	// configured); onListen is appOptions.OnListen.
	web      *webParts
	onListen func(addr string)
}

// appOptions are the parts that differ between serve, demo and tests.
type appOptions struct {
	In      io.Reader
	Out     io.Writer
	Console console.Options
	Logger  *slog.Logger
	// Now overrides the clock (tests).
	Now func() time.Time
	// Store is an open store to use (and leave open): the leader's
	// (cmd/groundcrew/leader.go). Nil: newApp opens the configured one.
	Store appStore
	// external: the replica's HTTP server serves a.mux (leader.go); run
	// does not listen itself.
	external bool
	// Web are the pages built by the replica (leader.go), shared by its
	// terms; nil: newApp builds them when web: is configured.
	Web *webParts
	// OnListen, when set, is told the HTTP server's address once it
	// listens (the demo's links).
	OnListen func(addr string)
	// Lease fences the engine's outside calls: the leader lease of this
	// replica (leader.go); nil alone on bbolt.
	Lease opmodel.Lease
}

// engineHook is the engine's step-boundary hook (bot.Options.Hook): nil,
// except in the failover tests' replicas, which pause themselves at a
// chosen point (ha_test.go).
var engineHook func(point string)

// providers builds the operation registry for the configured targets.
func (a *app) providers() error {
	ps := []opmodel.Provider{core.Provider{}}
	cc, err := a.concourseProvider()
	if err != nil {
		return err
	}
	ps = append(ps, cc)
	dbs := map[string]postgres.DatabaseConfig{}
	for _, name := range a.cfg.TargetNames() {
		if d, ok := a.cfg.DatabaseConfig(name); ok {
			dbs[name] = d
		}
	}
	if db := a.simulatedDatabase(dbs); db != nil {
		// Every target is simulated (demo, training): the build-log
		// runbooks run against a simulated Concourse database.
		ps = append(ps, db)
	} else {
		pg, err := postgres.New(postgres.Options{Databases: dbs, Logger: a.log})
		if err != nil {
			return fmt.Errorf("postgres provider: %w", err)
		}
		a.closers = append(a.closers, pg.Close)
		ps = append(ps, pg)
	}
	if a.metrics != nil {
		for i := range ps {
			ps[i] = a.metrics.Provider(ps[i]) // counts and times every call
		}
	}
	reg, err := opmodel.NewRegistry(ps...)
	if err != nil {
		return err
	}
	a.reg = reg
	return nil
}

// newApp wires store, providers, library, chat and engine from cfg.
func newApp(cfg *config.Config, o appOptions) (*app, error) {
	a := &app{cfg: cfg, log: o.Logger, mux: http.NewServeMux(), external: o.external,
		metrics: metrics.New(metrics.Options{Version: version, Targets: cfg.TargetNames()}), now: o.Now, onListen: o.OnListen}
	a.health.targets = map[string]targetStatus{}
	a.reloads.remember(cfg)
	if a.log == nil {
		a.log = newLogger(cfg, os.Stderr)
	}
	ok := false
	defer func() {
		if !ok {
			a.close()
		}
	}()
	if err := a.providers(); err != nil {
		return nil, err
	}
	sources := []runbooks.Source{runbooks.BuiltinSource()}
	for _, d := range cfg.Runbooks {
		sources = append(sources, runbooks.DirSource(d))
	}
	lib, err := runbooks.NewLibrary(a.reg, sources...)
	var bad runbooks.ErrorList
	switch {
	case errors.As(err, &bad) && lib != nil:
		// One broken file must not keep the bot down at 3 a.m.: the valid
		// runbooks are served and every broken file is logged with its
		// errors (config check and lint fail on them). The runbook a broken
		// file defines is unavailable: a built-in never stands in for it.
		logBrokenRunbooks(a.log, lib, bad)
	case err != nil:
		return nil, fmt.Errorf("loading runbooks:\n%w", err)
	}
	for _, ov := range lib.Overridden() {
		a.log.Info("runbook overridden", "runbook", ov.Name, "by", ov.Source, "replaces", ov.Replaced)
	}
	a.lib = lib
	a.reloads.libs.p.Store(lib)
	for _, p := range cfg.SelfApprovalAt() {
		a.log.Warn("SELF-APPROVAL ENABLED: requesters may approve their own destructive steps", "policy", p)
	}

	db := o.Store
	if db == nil {
		if db, err = openAppStore(cfg); err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() { _ = db.Close() })
	}
	a.db = db
	a.web = o.Web
	if a.web == nil {
		if a.web, err = newWeb(cfg, db, o.Now, a.log); err != nil {
			return nil, err
		}
	}
	a.web.setRunbooks(func() []string {
		lib := a.reloads.libs.lib()
		names := lib.Names()
		for _, b := range lib.BrokenList() {
			names = append(names, b.Name)
		}
		return names
	})

	in, out := o.In, o.Out
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	if o.Console.FilesDir == "" {
		o.Console.FilesDir = filesDir(cfg) // the console writes digest charts next to the store
	}
	ad, err := chatplatform.Open(cfg.Chat, chatplatform.Deps{Logger: a.log, In: in, Out: out, Console: o.Console,
		HTTPClient: func(name string) *http.Client { return a.metrics.HTTPClient(name, nil, 30*time.Second) }})
	if err != nil {
		return nil, err
	}
	a.chat, a.console, a.groupTTL = ad.Chat, ad.Console, ad.GroupTTL
	// Every post of every subsystem goes through one durable outbox
	// (posted by its own goroutine, run; shutdown drains it).
	a.outbox = delivery.New(delivery.Options{Chat: a.chat, Store: db, Logger: a.log.With("component", "delivery"), Now: o.Now})
	if ad.Handler != nil {
		a.mux.Handle(ad.Path, ad.Handler)
	}

	// The same validation as `config check`, now with the live chat
	// adapter: names in the policy are looked up on the platform.
	if err := checkSetup(context.Background(), cfg, a.reg, lib, a.chat, teamsOf(a.reg), a.log); err != nil {
		return nil, err
	}
	if a.digests, err = a.newDigestScheduler(o.Now); err != nil {
		return nil, err
	}
	targets := map[string]bot.TargetInfo{}
	for _, n := range cfg.TargetNames() {
		t := cfg.Targets[n]
		targets[n] = bot.TargetInfo{Vars: t.Vars, FlyTarget: cfg.FlyTargetOf(n), Team: t.Team, Description: t.Description, Authority: t.Authority}
	}
	var roles policy.Roles
	if cfg.ConcourseAuthority() {
		// authority: concourse — the person's role on the team, read from
		// Concourse's teams' auth (kept a minute; asked afresh before a call).
		emails, _ := a.chat.(chatmodel.EmailResolver)
		roles = concourse.NewPersonRoles(concourse.NewRoleBook(a.concourse, time.Minute, o.Now), cfg.UserIdentities(), emails)
	}
	// The audit head goes to the log at start and after each run, and to
	// audit.checkpoint_channel on a schedule: outside the store.
	a.audit = checkpoint.New(checkpoint.Options{Heads: db, Outbox: a.outbox, Channel: cfg.Audit.CheckpointChannel,
		Platform: cfg.Chat.Platform, Every: cfg.Audit.Every, Now: o.Now, Logger: a.log.With("component", "audit")})
	a.audit.Log(context.Background(), "start")
	// The engine gets the store wrapped (the checkpointer notices run ends);
	// what the store and the adapter can do beyond the ports is named here,
	// from them unwrapped, so no wrapper can hide it.
	a.caps = bot.CapabilitiesOf(db, a.chat)
	a.caps.Housekeeper = a.metrics.Housekeeper(db)
	var engineStore runmodel.Store = a.audit.Store(db)
	if a.web != nil && !a.web.notified {
		engineStore = publishRuns{Store: engineStore, hub: a.web.hub}
	}
	var runLink func(string, time.Time) string
	if a.web != nil {
		runLink = a.web.links.Run // the run's page, in its root message
	}
	eng, err := bot.New(bot.Options{RunLink: runLink, Threads: &a.threads, Commands: &a.commands, Store: engineStore, Chat: a.chat, Delivery: a.outbox, Capabilities: a.caps, Ops: a.reg, Library: &a.reloads.libs, Targets: targets,
		Approvals: cfg.Approvals, Roles: roles, Platform: cfg.Chat.Platform, GroupTTL: a.groupTTL, Logger: a.log, Now: o.Now, Digests: a.digests, Observer: observers{theRunIndex, a.metrics, runLog{a.log}},
		Lease: o.Lease, Hook: engineHook})
	if err != nil {
		return nil, err
	}
	a.eng = eng
	// A form's values are checked by the engine before a submission is
	// taken, so a refused value is shown on its field.
	if fc, ok := a.chat.(interface{ SetFormChecker(chatmodel.FormChecker) }); ok {
		fc.SetFormChecker(bot.FormCheckerOf(eng))
	}
	// A target picked in a form gives that target's workers, pipelines and
	// teams (the form is refreshed through the engine).
	if fr, ok := a.chat.(interface{ SetFormRefresher(chatmodel.FormRefresher) }); ok {
		fr.SetFormRefresher(bot.FormRefresherOf(eng))
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	a.metrics.Outbox(func() ([]runmodel.OutboxItem, error) { return db.ListOutbox(context.Background()) }, now)
	a.metrics.StoreSize(db.Size)
	a.routes()
	if a.web != nil && !a.external && cfg.Web.Listen == "" {
		a.mux.Handle("/", a.web.pages) // the pages own "/" and what is not routed above
	}
	if a.incidents, err = a.newIncidents(db, a.digestSrc, o.Now); err != nil {
		return nil, err
	}
	a.metrics.ConfigLoaded(true, now())
	ok = true
	return a, nil
}

// close releases everything in reverse order.
func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// run runs the engine, the chat adapter and (for Slack/Mattermost) the HTTP
// server until ctx ends. With the console, the end of input ends the run
// once every run is waiting for a person or finished.
func (a *app) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	if !a.console {
		// The outbox posts from a goroutine of its own: nothing that
		// posts (a webhook, the engine's tick) waits for a chat server
		// that does not answer. The console never hangs, and keeps its
		// transcript in the order things happen.
		g.Go(func() error { return a.outbox.Run(gctx) })
	}
	// The endpoints (the Alertmanager webhook first) are served from the
	// start, whatever chat does.
	if err := a.serveHTTP(gctx, g); err != nil {
		return err
	}
	// The first checkpoint is posted before anything else runs, so it is
	// where people expect it (first in a console transcript); the
	// scheduler posts the next ones.
	pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
	if err := a.audit.Post(pctx); err != nil {
		a.log.Error("audit checkpoint not posted", "err", err)
	}
	pcancel()
	g.Go(func() error { return a.eng.Run(gctx) })
	g.Go(func() error { return a.digests.Run(gctx) })
	g.Go(func() error { return a.audit.Run(gctx) })
	g.Go(func() error { return a.incidents.run(gctx) })
	g.Go(func() error { return a.serveReloads(gctx) })
	if err := a.serveAdmin(gctx, g); err != nil {
		if !a.console {
			return err
		}
		a.log.Warn("admin socket not served: runs/audit commands cannot read the store while serve runs", "err", err)
	}
	g.Go(func() error { a.probeTargets(gctx); return nil })
	a.health.chatUp.Store(true)
	defer a.health.chatUp.Store(false)
	if a.console {
		g.Go(func() error {
			err := a.chat.Run(gctx, a.incidents.handler)
			a.health.chatUp.Store(false)
			if err == nil {
				wctx, wcancel := context.WithTimeout(gctx, 10*time.Minute)
				err = a.eng.WaitIdle(wctx)
				wcancel()
				if errors.Is(err, context.Canceled) {
					err = nil
				}
			}
			cancel()
			return err
		})
	} else {
		g.Go(func() error {
			defer a.health.chatUp.Store(false)
			return a.chat.Run(gctx, a.incidents.handler)
		})
	}
	err := g.Wait()
	// Edits held back by coalescing, and what chat has not taken yet, get
	// one more try before the process ends.
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	if a.outbox != nil {
		a.outbox.Drain(dctx)
	}
	dcancel()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// emptyConfig is a configuration with no targets, for linting.
func emptyConfig() *config.Config {
	return &config.Config{Targets: map[string]*config.Target{}}
}

// simulatedDatabase returns a simulated Concourse database when every
// target is a simulator without a real database, else nil.
func (a *app) simulatedDatabase(real map[string]postgres.DatabaseConfig) opmodel.Provider {
	if len(a.sims) == 0 || len(a.sims) != len(a.cfg.Targets) || len(real) > 0 || len(a.sims) != 1 {
		return nil
	}
	name, sim := a.cfg.TargetNames()[0], a.sims[0]
	return pgsim.New(name, *pgsim.Demo(), func(team, pipeline string) (int, bool) {
		p, ok := sim.Pipeline(team, pipeline)
		if !ok {
			return 0, false
		}
		return p.ID, true
	})
}

// logBrokenRunbooks logs every runbook file that does not load, with its
// errors, and any other loading problem (a duplicate name).
func logBrokenRunbooks(log *slog.Logger, lib *runbooks.Library, all runbooks.ErrorList) {
	inBroken := map[*runbooks.Error]bool{}
	for _, b := range lib.BrokenList() {
		for _, e := range b.Errors {
			inBroken[e] = true
		}
		log.Error("runbook file does not load; the runbook is unavailable until it is fixed (no built-in is used in its place)",
			"runbook", b.Name, "file", b.File, "errors", b.Errors.Error(), "check", "groundcrew lint "+nonEmpty(b.Dir, b.File))
	}
	for _, e := range all {
		if !inBroken[e] {
			log.Error("runbook problem", "problem", e.Error())
		}
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
