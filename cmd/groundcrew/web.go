package main

// The pages of runs and incidents (package web): built from web: in the
// config, served on server.listen or web.listen, by the leader and the
// standbys alike (they read the store). Their live updates follow the
// store's commits through one web.Hub per process: on bbolt the store
// the engine and the incidents write through publishes each commit; on
// PostgreSQL every replica LISTENs for the commits' notifications (the
// leader's included), so a standby's pages follow the leader.

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/secret"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/web"
)

// webStore is what the pages read; both stores implement it.
type webStore interface {
	web.Runs
	web.Journals
	web.Incidents
	web.Digests
}

// webParts are the pages of one process: the links the engine and the
// incidents put in their thread roots, the hub of changes, the server.
type webParts struct {
	links *web.Links
	hub   *web.Hub
	pages *web.Server
	// notified: the store announces its commits itself (PostgreSQL's
	// LISTEN/NOTIFY feeds hub); else the writers' stores publish them.
	notified bool
	// runbooks names the library's runbooks, once the app loaded it (the
	// index's filter refuses a name that is no runbook's, nor any run's).
	runbooks atomic.Pointer[func() []string]
}

// setRunbooks tells the pages the names of the library's runbooks.
func (p *webParts) setRunbooks(names func() []string) {
	if p != nil {
		p.runbooks.Store(&names)
	}
}

// newWeb builds the pages of cfg.Web on db, or nil when web: is not
// configured. now is the clock (nil: the real one).
func newWeb(cfg *config.Config, db webStore, now func() time.Time, log *slog.Logger) (*webParts, error) {
	if !cfg.Web.Enabled() {
		return nil, nil
	}
	links, err := webLinks(cfg, now)
	if err != nil {
		return nil, err
	}
	p := &webParts{hub: web.NewHub(), links: links}
	var targets []web.Target
	for _, name := range cfg.TargetNames() {
		t := web.Target{Name: name}
		for _, d := range digestSchedules(cfg) {
			if d.Target == name {
				label := strings.TrimSpace(d.Channel + " at " + d.Schedule + " " + d.Timezone)
				if len(d.Teams) > 0 {
					label += " (teams " + strings.Join(d.Teams, ", ") + ")"
				}
				t.Digests = append(t.Digests, web.DigestRef{Key: digest.HistoryKey(d.Target, d.Channel, d.Schedule, d.Timezone, d.Teams...), Label: label})
			}
		}
		t.Digests = append(t.Digests, web.DigestRef{Key: digest.NowKey(name), Label: "asked for with /runbook digest " + name})
		targets = append(targets, t)
	}
	pages, err := web.New(web.Options{Runs: db, Journals: db, Incidents: db, Digests: db, Targets: targets,
		Words: web.Words{Markdown: bot.RunMarkdown, JournalLine: bot.JournalLine, Stopped: bot.RunStopped, Changes: func(r *runmodel.Run, j []runmodel.JournalEntry) []web.Change {
			var out []web.Change
			for _, c := range bot.RunChanges(r, j) {
				out = append(out, web.Change{Step: c.Step, Text: c.Text})
			}
			return out
		}},
		Runbooks: func() []string {
			if names := p.runbooks.Load(); names != nil {
				return (*names)()
			}
			return nil
		},
		Links: p.links, Proxy: web.Proxy{Header: cfg.Web.TrustedHeader, From: cfg.Web.Proxies}, Changes: p.hub,
		Redact: redactor(cfg), Now: now, Logger: log.With("component", "web")})
	if err != nil {
		return nil, err
	}
	p.pages = pages
	return p, nil
}

// webLinks are the links of cfg.Web: signed with web.link_key (and
// verified with web.previous_link_key too) when a key is configured.
func webLinks(cfg *config.Config, now func() time.Time) (*web.Links, error) {
	var signer *web.Signer
	if cfg.Web.LinkKey.IsSet() {
		var previous [][]byte
		if cfg.Web.PreviousLinkKey.IsSet() {
			previous = append(previous, []byte(cfg.Web.PreviousLinkKey.Value()))
		}
		s, err := web.NewSigner([]byte(cfg.Web.LinkKey.Value()), previous...)
		if err != nil {
			return nil, fmt.Errorf("web.link_key: %w", err)
		}
		signer = s
	}
	return web.NewLinks(cfg.Web.URL, signer, time.Duration(cfg.Web.LinkTTL), now), nil
}

// webSummary says how the pages of cfg are opened (config check), "" when
// web: is not configured.
func webSummary(cfg *config.Config) string {
	w := cfg.Web
	if !w.Enabled() {
		return ""
	}
	var ways []string
	if w.LinkKey.IsSet() {
		ttl := time.Duration(w.LinkTTL)
		if ttl <= 0 {
			ttl = web.DefaultLinkTTL
		}
		way := "signed links (valid " + web.HumanTTL(ttl) + ")"
		if w.PreviousLinkKey.IsSet() {
			way += "; links of web.previous_link_key still open (a key rotation: remove it " + web.HumanTTL(ttl) + " after the rotation)"
		}
		ways = append(ways, way)
	}
	if w.TrustedHeader != "" {
		ways = append(ways, "the proxy's "+w.TrustedHeader+" from "+strings.Join(w.TrustedProxies, ", "))
	}
	return "web pages at " + w.URL + ": " + strings.Join(ways, "; and ")
}

// redactor replaces every configured credential (passwords, tokens,
// DSNs and the passwords in them, keys) with [redacted]: a page never
// shows one, even if a run's output carried it.
func redactor(cfg *config.Config) func(string) string {
	var vals []string
	var walk func(v reflect.Value)
	seen := map[uintptr]bool{}
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			walk(v.Elem())
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Map:
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k))
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.String:
			if v.Type() == reflect.TypeFor[secret.Secret]() && v.Len() >= 4 {
				s := v.String()
				vals = append(vals, s)
				if u, err := url.Parse(s); err == nil && u.User != nil {
					if pw, ok := u.User.Password(); ok && len(pw) >= 4 {
						vals = append(vals, pw, url.QueryEscape(pw))
					}
				}
			}
		}
	}
	walk(reflect.ValueOf(cfg))
	if len(vals) == 0 {
		return nil
	}
	var pairs []string
	for _, s := range vals {
		pairs = append(pairs, s, "[redacted]")
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// publishRuns is the engine's store with each committed run change
// published to the pages' hub (bbolt: the store has no notifications).
type publishRuns struct {
	runmodel.Store
	hub *web.Hub
}

// CreateRun implements runmodel.Runs.
func (s publishRuns) CreateRun(ctx context.Context, r *runmodel.Run, b *runmodel.Batch) error {
	err := s.Store.CreateRun(ctx, r, b)
	if err == nil {
		s.hub.Publish("run", r.ID)
		if r.Conversation.Thread != "" {
			s.hub.Publish("thread", r.Conversation.Thread) // an incident's page lists the runs of its thread
		}
	}
	return err
}

// UpdateRun implements runmodel.Runs.
func (s publishRuns) UpdateRun(ctx context.Context, id string, fn func(r *runmodel.Run, b *runmodel.Batch) error) (*runmodel.Run, error) {
	r, err := s.Store.UpdateRun(ctx, id, fn)
	if err == nil {
		s.hub.Publish("run", id)
	}
	return r, err
}

// publishIncidents is the incidents' store with each committed change
// published to the pages' hub.
type publishIncidents struct {
	incident.Store
	hub *web.Hub
}

// UpsertIncident implements incident.Store.
func (s publishIncidents) UpsertIncident(ctx context.Context, key string, fn func(cur *incident.Incident) (*incident.Incident, error)) (*incident.Incident, error) {
	in, err := s.Store.UpsertIncident(ctx, key, fn)
	if err == nil && in != nil {
		s.hub.Publish("incident", in.ID)
	}
	return in, err
}

// UpdateIncident implements incident.Store.
func (s publishIncidents) UpdateIncident(ctx context.Context, id string, fn func(in *incident.Incident) error) (*incident.Incident, error) {
	in, err := s.Store.UpdateIncident(ctx, id, fn)
	if err == nil {
		s.hub.Publish("incident", id)
	}
	return in, err
}
