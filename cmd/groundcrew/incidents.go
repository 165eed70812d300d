package main

import (
	"context"
	"fmt"
	"time"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/watch"
)

// incidents is the wiring of incidents: the manager, the chat handler in
// front of the engine, the Alertmanager receiver and the watch rules.
type incidents struct {
	m       *incident.Manager
	handler bot.Handler
	watcher *watch.Watcher
}

// newIncidents wires incidents once the store, chat, engine and digest
// source exist. audit is the store's audit log as the engine sees it.
func (a *app) newIncidents(audit incident.Auditor, src digest.Source, now func() time.Time) (*incidents, error) {
	var sil incident.Silencer
	if u := a.cfg.Alerts.Alertmanager.URL; u != "" {
		sil = &alertmanager.Silencer{URL: u, Now: now}
	}
	channel := ""
	if a.console {
		// The console has one channel: every incident goes there.
		channel = a.cfg.Chat.Console.Channel
		if channel == "" {
			channel = "#ops"
		}
	}
	m, err := incident.New(incident.Options{Store: a.db, Chat: a.chat, Starter: a.eng, Runs: a.db, Audit: audit,
		Silencer: sil, Platform: a.cfg.Chat.Platform, Channel: channel, Now: now, Logger: a.log.With("component", "incidents")})
	if err != nil {
		return nil, err
	}
	in := &incidents{m: m, handler: &incident.Handler{M: m, Next: a.eng}}
	for _, r := range a.cfg.Alerts.Routes {
		if r.Runbook != "" {
			if _, ok := a.lib.Get(r.Runbook); !ok {
				a.log.Error("alert route names a runbook that is not loaded; its incidents offer a command that will fail", "runbook", r.Runbook)
			}
		}
	}
	if a.cfg.Alerts.Enabled() {
		rc, err := alertmanager.NewReceiver(alertmanager.Options{Token: a.cfg.Alerts.Alertmanager.Token.Value(),
			Routes: a.cfg.AlertRoutes(), Targets: a.cfg.TargetNames(), Sink: m, Audit: audit,
			MaxBody: a.cfg.Alerts.Alertmanager.MaxBody, Logger: a.log.With("component", "alertmanager"), Now: now})
		if err != nil {
			return nil, fmt.Errorf("alerts: %w", err)
		}
		a.mux.Handle(alertmanager.Path, rc)
	}
	if len(a.cfg.Watch) > 0 {
		w, err := watch.New(watch.Options{Rules: a.cfg.Watch, Source: src, Sink: m, Now: now, Logger: a.log.With("component", "watch"), Observer: a.metrics})
		if err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
		in.watcher = w
	}
	return in, nil
}

// run polls the watch rules until ctx ends.
func (in *incidents) run(ctx context.Context) error {
	if in.watcher == nil {
		return nil
	}
	return in.watcher.Run(ctx)
}
