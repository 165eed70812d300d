package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/retry"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// incidents is the wiring of incidents: the manager, the chat handler in
// front of the engine, the Alertmanager receiver and the watch rules.
type incidents struct {
	m       *incident.Manager
	handler chatmodel.Handler
	// watch runs the watch rules; a reload replaces them.
	watch *watchLoop
	log   *slog.Logger
}

// newIncidents wires incidents once the store, chat, engine and digest
// source exist. audit is the store's audit log as the engine sees it.
func (a *app) newIncidents(audit incident.Auditor, src digest.Source, now func() time.Time) (*incidents, error) {
	var sil incident.Silencer
	if u := a.cfg.Alerts.Alertmanager.URL; u != "" {
		sil = &alertmanager.Silencer{URL: u, Now: now}
	}
	channel := ""
	if a.console && len(a.cfg.Channels.Bindings) == 0 {
		// The console has one channel: every incident goes there. With
		// channels bound (channels:), /channel types in the others, and
		// an incident goes to its rule's channel, as on a chat platform:
		// its binding decides what may be run from it.
		channel = a.cfg.Chat.Console.Channel
		if channel == "" {
			channel = "#ops"
		}
	}
	obs := a.metrics.AlertPath()
	var st incident.Store = a.db
	var link func(string, time.Time) string
	if a.web != nil {
		if !a.web.notified {
			st = publishIncidents{Store: st, hub: a.web.hub}
		}
		link = a.web.links.Incident // the incident's page, in its root message
	}
	m, err := incident.New(incident.Options{Link: link, Store: st, Chat: a.chat, Outbox: a.outbox, Runbooks: &a.reloads.libs, Starter: a.eng, Runs: a.db, Audit: audit, Dedupe: a.db,
		Observer: obs, Silencer: sil, KeepSilences: a.cfg.Alerts.Silences.KeepAfterResolve, Platform: a.cfg.Chat.Platform, Targets: a.cfg.TargetNames(), Channel: channel, Now: now, Logger: a.log.With("component", "incidents")})
	if err != nil {
		return nil, err
	}
	obs.Incidents(func() (map[string]int, error) { return m.Counts(context.Background()) })
	h := &incident.Handler{M: m, Next: a.eng}
	a.threads.n = h  // a thread summary is the incident's summary
	a.commands.c = h // `/runbook incidents …`, parsed by the engine
	in := &incidents{m: m, handler: h, watch: &a.reloads.watch, log: a.log.With("component", "incidents")}
	for _, p := range routeProblems(a.cfg, a.lib) {
		a.log.Error("alert route: its incidents offer a command that will fail", "problem", p)
	}
	if a.cfg.Alerts.Enabled() {
		var tcs []concourse.TargetConfig
		for _, name := range a.cfg.TargetNames() {
			tcs = append(tcs, a.cfg.ConcourseTarget(name))
		}
		rc, err := alertmanager.NewReceiver(alertmanager.Options{Token: a.cfg.Alerts.Alertmanager.Token.Value(),
			Routes: a.cfg.AlertRoutes(), Targets: a.cfg.TargetNames(), Sink: m, Audit: audit, WorkerNames: concourse.WorkerNamer(tcs),
			Dedupe: a.db, Observer: obs, MaxBody: a.cfg.Alerts.Alertmanager.MaxBody, Logger: a.log.With("component", "alertmanager"), Now: now})
		if err != nil {
			return nil, fmt.Errorf("alerts: %w", err)
		}
		a.mux.Handle(alertmanager.Path, rc)
	}
	w, err := a.newWatcher(a.cfg, src, m)
	if err != nil {
		return nil, err
	}
	in.watch.replace(w) // started by run
	return in, nil
}

// routeProblems checks the alert routes against the runbook library: the
// runbook exists and takes the route's parameters.
func routeProblems(cfg *config.Config, lib *runbooks.Library) []string {
	var out []string
	var names []string
	for _, rb := range lib.List() {
		names = append(names, rb.Name)
	}
	for i, r := range cfg.Alerts.Routes {
		if r.Runbook == "" {
			continue
		}
		p := fmt.Sprintf("alerts.routes[%d]", i)
		rb, ok := lib.Get(r.Runbook)
		if !ok {
			msg := fmt.Sprintf("%s.runbook: there is no runbook %q", p, r.Runbook)
			if s := textmodel.Suggest(r.Runbook, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			out = append(out, msg)
			continue
		}
		known := map[string]bool{}
		var params []string
		for _, prm := range rb.Params {
			known[prm.Name] = true
			params = append(params, prm.Name)
		}
		for k := range r.Params {
			if !known[k] {
				out = append(out, fmt.Sprintf("%s.params.%s: runbook %s has no parameter %q (it has: %s)", p, k, rb.Name, k, strings.Join(params, ", ")))
			}
		}
	}
	sort.Strings(out)
	return out
}

// run polls the watch rules until ctx ends.
func (in *incidents) run(ctx context.Context) error {
	// Both read the open incidents: a store briefly away as the process
	// starts (PostgreSQL restarting under a new leader) delays them, it
	// does not end the process.
	if err := retry.Until(ctx, in.log, "watching the open incidents' messages", in.m.Rewatch); err != nil {
		return nil // ctx ended
	}
	// An open incident whose root chat refused for good before a restart
	// is posted now, not at its next notification (hours later with
	// repeat_interval: 4h).
	if err := retry.Until(ctx, in.log, "posting the open incidents not in chat yet", in.m.Republish); err != nil {
		return nil
	}
	// Silenced incidents: Alertmanager sends no resolve while a silence
	// lasts, so groundcrew asks its API.
	silences := make(chan error, 1)
	go func() { silences <- in.m.WatchSilences(ctx) }()
	err := in.watch.run(ctx)
	return errors.Join(err, <-silences)
}

// checkRoutes is config check's part for alert routes.
func checkRoutes(cfg *config.Config, lib *runbooks.Library) error {
	if ps := routeProblems(cfg, lib); len(ps) > 0 {
		return fmt.Errorf("%d problem(s) in %s:\n%w", len(ps), cfg.Path, errors.New(strings.Join(ps, "\n")))
	}
	return nil
}

// lateCommands is the engine's bot.Commander: the incident handler, set
// once it is wired (after the engine, before anything is served).
type lateCommands struct{ c chatmodel.Commander }

func (l *lateCommands) Commands() []chatmodel.CommandSpec {
	if l.c == nil {
		return nil
	}
	return l.c.Commands()
}

func (l *lateCommands) RunCommand(ctx context.Context, ev chatmodel.Event, in chatmodel.Invocation) error {
	return l.c.RunCommand(ctx, ev, in) // only a declared command reaches it
}

// lateNotes is the engine's bot.ThreadNoter: the incident handler, set once
// it is wired (after the engine, before anything is served).
type lateNotes struct{ n chatmodel.ThreadNoter }

func (l *lateNotes) ThreadNotes(ctx context.Context, c chatmodel.Conversation) (chatmodel.ThreadNotes, bool) {
	if l.n == nil {
		return chatmodel.ThreadNotes{}, false
	}
	return l.n.ThreadNotes(ctx, c)
}
