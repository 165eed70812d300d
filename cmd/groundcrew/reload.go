package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/watch"
)

// ReloadPath is the HTTP endpoint (on server.listen) that reloads the
// configuration, as Prometheus' and Alertmanager's.
const ReloadPath = "/-/reload"

// reloadable are the top-level configuration keys a reload applies.
var reloadable = map[string]string{
	"approvals": "new runs use the new policy; runs already started keep theirs",
	"channels":  "new commands answer to the new bindings; runs already started keep their channel's scope",
	"digests":   "rescheduled",
	"watch":     "the rules are polled again from the new list",
	"runbooks":  "the directories are read again; runs already started keep their runbook",
}

// restartOnly are the top-level keys a reload refuses to change, and why.
var restartOnly = map[string]string{
	"store":     "the store file is opened once, at start",
	"retention": "the store is opened with it at start",
	"server":    "the HTTP server and the admin socket listen from start",
	"chat":      "the chat connection and its credentials are set up at start",
	"targets":   "the Concourse and database connections (and their credentials) are set up at start",
	"alerts":    "the Alertmanager receiver and its token are set up at start",
	"log":       "the logger is set up at start",
	"audit":     "the audit checkpoints are scheduled at start",
	"web":       "the pages' listener, link key and proxy are set up at start",
	"users":     "the Concourse identities of chat users are read at start (authority: concourse)",
}

// restartChanges lists the keys that need a restart and differ between the
// running configuration and next, each with its reason.
func restartChanges(running, next *config.Config) []string {
	var out []string
	rv, nv := reflect.ValueOf(*running), reflect.ValueOf(*next)
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		key := yamlKey(t.Field(i))
		why, ok := restartOnly[key]
		if !ok {
			continue
		}
		if !reflect.DeepEqual(rv.Field(i).Interface(), nv.Field(i).Interface()) {
			out = append(out, fmt.Sprintf("%s: changed, and that needs a restart (%s)", key, why))
		}
	}
	return out
}

// yamlKey is a config field's top-level key ("" for none).
func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if k == "-" {
		return ""
	}
	return k
}

// reloader applies configuration reloads, one at a time.
type reloader struct {
	mu sync.Mutex
	// file is the configuration as read from the file, before the
	// simulators filled their targets in: what a reload compares with.
	file *config.Config
	// libs is the runbook library the engine reads, swapped by a reload.
	libs libraryRef
	// watch runs the current watch rules.
	watch watchLoop
}

// remember keeps cfg as read from the file (call it before anything
// changes it).
func (r *reloader) remember(cfg *config.Config) {
	c := *cfg
	c.Targets = make(map[string]*config.Target, len(cfg.Targets))
	for n, t := range cfg.Targets {
		tc := *t
		c.Targets[n] = &tc
	}
	r.file = &c
}

// libraryRef is a bot.Library whose library a reload replaces.
type libraryRef struct {
	p atomic.Pointer[runbooks.Library]
}

func (l *libraryRef) lib() *runbooks.Library { return l.p.Load() }
func (l *libraryRef) Get(name string) (*runbookmodel.Runbook, bool) {
	return l.lib().Get(name)
}
func (l *libraryRef) List() []*runbookmodel.Runbook { return l.lib().List() }
func (l *libraryRef) Broken(name string) (runbooks.Broken, bool) {
	return l.lib().Broken(name)
}
func (l *libraryRef) BrokenList() []runbooks.Broken { return l.lib().BrokenList() }

// watchLoop runs one watcher at a time; replace swaps it under a running
// serve. A new watcher starts from the open incidents (watch.Watcher
// seeds itself), so a condition already open is not posted twice.
type watchLoop struct {
	mu     sync.Mutex
	parent context.Context
	w      *watch.Watcher
	cancel context.CancelFunc
	done   chan struct{}
}

// run runs the current watcher until ctx ends; replace may swap it.
func (l *watchLoop) run(ctx context.Context) error {
	l.mu.Lock()
	l.parent = ctx
	l.startLocked()
	l.mu.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	l.stopLocked()
	l.mu.Unlock()
	return nil
}

func (l *watchLoop) startLocked() {
	if l.w == nil || l.parent == nil || l.parent.Err() != nil {
		return
	}
	ctx, cancel := context.WithCancel(l.parent)
	done := make(chan struct{})
	w := l.w
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	l.cancel, l.done = cancel, done
}

func (l *watchLoop) stopLocked() {
	if l.cancel != nil {
		l.cancel()
		<-l.done
		l.cancel, l.done = nil, nil
	}
}

// replace stops the running watcher and starts w (nil: no rules).
func (l *watchLoop) replace(w *watch.Watcher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopLocked()
	l.w = w
	l.startLocked()
}

// current is the watcher (tests).
func (l *watchLoop) current() *watch.Watcher {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w
}

// loadLibrary reads the built-in library and cfg's runbook directories.
func loadLibrary(a *app, cfg *config.Config) (*runbooks.Library, error) {
	sources := []runbooks.Source{runbooks.BuiltinSource()}
	for _, d := range cfg.Runbooks {
		sources = append(sources, runbooks.DirSource(d))
	}
	return runbooks.NewLibrary(a.reg, sources...)
}

// digestSchedules are cfg's digests as the scheduler takes them: a digest
// posted to a channel bound to teams covers only theirs.
func digestSchedules(cfg *config.Config) []digest.Schedule {
	ds := make([]digest.Schedule, 0, len(cfg.Digests))
	for _, d := range cfg.Digests {
		ds = append(ds, digest.Schedule{Target: d.Target, Channel: d.Channel, Schedule: d.Schedule,
			Timezone: d.Timezone, Window: d.Window, CatchUp: d.CatchUp, Teams: cfg.Channels.PostScope(d.Channel).CallTeams()})
	}
	return ds
}

// watchRules are cfg's watch rules: a rule posting to a channel bound to
// teams watches only theirs.
func watchRules(cfg *config.Config) []watch.Rule {
	rules := make([]watch.Rule, 0, len(cfg.Watch))
	for _, r := range cfg.Watch {
		r.Teams = cfg.Channels.PostScope(r.Channel).CallTeams()
		rules = append(rules, r)
	}
	return rules
}

// newWatcher builds the watcher of cfg's rules (nil: none).
func (a *app) newWatcher(cfg *config.Config, src digest.Source, sink watch.Sink) (*watch.Watcher, error) {
	rules := watchRules(cfg)
	if len(rules) == 0 {
		return nil, nil
	}
	// both stores keep small values (store.DB, pgstore.DB): the watch's
	// hysteresis survives a restart
	state, _ := a.db.(watch.State)
	w, err := watch.New(watch.Options{Rules: rules, Source: src, Sink: sink, Now: a.now, Logger: a.log.With("component", "watch"), Observer: a.metrics, State: state})
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	return w, nil
}

// reload reads the configuration file and the runbook directories again
// and applies them, or refuses the whole change and keeps the running
// configuration: the file does not load or check (every problem is in the
// error, as `config check` says them), a runbook file does not load, or a
// key that needs a restart changed. It returns what changed.
func (a *app) reload(ctx context.Context) (string, error) {
	a.reloads.mu.Lock()
	defer a.reloads.mu.Unlock()
	now := time.Now
	if a.now != nil {
		now = a.now
	}
	done, err := a.applyReload(ctx)
	a.metrics.ConfigLoaded(err == nil, now())
	if err != nil {
		a.log.Error("configuration NOT reloaded: the running configuration is kept", "file", a.cfg.Path, "problems", err.Error())
		return "", err
	}
	a.log.Info("configuration reloaded", "file", a.cfg.Path, "applied", done)
	return done, nil
}

func (a *app) applyReload(ctx context.Context) (string, error) {
	if a.cfg.Path == "" {
		return "", errors.New("this configuration was not read from a file: nothing to reload")
	}
	cfg, err := config.Load(a.cfg.Path)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			return "", fmt.Errorf("%d problem(s) in %s:\n%w", len(errs), a.cfg.Path, err)
		}
		return "", err
	}
	if ch := restartChanges(a.reloads.file, cfg); len(ch) > 0 {
		sort.Strings(ch)
		return "", fmt.Errorf("%d change(s) need a restart (nothing was reloaded; restart groundcrew to apply them):\n%s", len(ch), strings.Join(ch, "\n"))
	}
	lib, err := loadLibrary(a, cfg)
	if err != nil {
		// At start a broken file only makes its runbook unavailable; a
		// reload refuses it, as `config check` and `lint` do.
		return "", fmt.Errorf("loading runbooks:\n%w", err)
	}
	if err := checkSetup(ctx, cfg, a.reg, lib, a.chat, teamsOf(a.reg), a.log); err != nil {
		return "", err
	}
	for _, p := range routeProblems(cfg, lib) {
		a.log.Error("alert route: its incidents offer a command that will fail", "problem", p)
	}
	w, err := a.newWatcher(cfg, a.digestSrc, a.incidents.m)
	if err != nil {
		return "", err
	}
	// Checked: apply. The digests first: SetDigests checks them again
	// and changes nothing on an error.
	if err := a.digests.SetDigests(digestSchedules(cfg)); err != nil {
		return "", fmt.Errorf("%s: %w", a.cfg.Path, err)
	}
	for _, d := range cfg.Digests {
		a.metrics.ExpectDigests(d.Target)
	}
	a.reloads.libs.p.Store(lib)
	if err := a.eng.Reload(ctx, cfg.Approvals); err != nil {
		return "", err
	}
	a.reloads.watch.replace(w)
	return fmt.Sprintf("%d runbooks, %d digests, %d watch rules, approval policy", len(lib.List()), len(cfg.Digests), len(cfg.Watch)), nil
}

// serveReloads reloads on SIGHUP until ctx ends.
func (a *app) serveReloads(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			a.log.Info("SIGHUP: reloading the configuration", "file", a.cfg.Path)
			_, _ = a.reload(ctx)
		}
	}
}

// reloadHandler is POST /-/reload: 200 with what was applied, or 500 with
// every problem (the running configuration is kept).
func (a *app) reloadHandler(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		http.Error(w, "use POST to reload the configuration", http.StatusMethodNotAllowed)
		return
	}
	done, err := a.reload(r.Context())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "configuration not reloaded; the running one is kept:\n%s\n", err)
		return
	}
	fmt.Fprintf(w, "configuration reloaded: %s\n", done)
}

// The incident manager is the watch rules' sink.
var _ watch.Sink = (*incident.Manager)(nil)
