package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/internal/secret"
)

// Alerts configures the Alertmanager webhook receiver and its routes.
type Alerts struct {
	Alertmanager AlertmanagerConfig         `yaml:"alertmanager"`
	Routes       []alertmanager.RouteConfig `yaml:"routes"`
	Silences     SilencesConfig             `yaml:"silences"`
}

// SilencesConfig is what becomes of the silences groundcrew makes from an
// incident (its "Silence 1 h" button).
type SilencesConfig struct {
	// KeepAfterResolve keeps an incident's silence when the incident
	// resolves (its root then says it is still in force, until when, and
	// offers to expire it). By default it is expired with the incident,
	// so the alerts notify again if they fire again.
	KeepAfterResolve bool `yaml:"keep_after_resolve"`
}

// AlertmanagerConfig is how Alertmanager reaches groundcrew (POST
// /alertmanager on server.listen with a Bearer token) and, optionally, how
// groundcrew reaches Alertmanager (URL, for the "silence 1 h" button).
type AlertmanagerConfig struct {
	Token     secret.Secret `yaml:"token"`
	TokenFile string        `yaml:"token_file"`
	URL       string        `yaml:"url"`
	// MaxBody is the largest notification accepted, in bytes (default 1 MiB).
	MaxBody int64 `yaml:"max_body"`
}

// Enabled reports whether the receiver is configured.
func (a Alerts) Enabled() bool {
	return len(a.Routes) > 0 || a.Alertmanager.Token.IsSet() || a.Alertmanager.TokenFile != ""
}

// AlertRoutes compiles the routes (validated by Parse).
func (c *Config) AlertRoutes() []*alertmanager.Route {
	var out []*alertmanager.Route
	for i, rc := range c.Alerts.Routes {
		r, _ := alertmanager.CompileRoute(i, rc)
		out = append(out, r)
	}
	return out
}

// validateIncidents checks alerts: and watch:.
func (c *Config) validateIncidents() Errors {
	var errs Errors
	add := func(path, format string, args ...any) {
		errs = append(errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	am := &c.Alerts.Alertmanager
	if am.TokenFile != "" && !filepath.IsAbs(am.TokenFile) && c.Path != "" {
		am.TokenFile = filepath.Join(filepath.Dir(c.Path), am.TokenFile)
	}
	if c.Alerts.Enabled() {
		tok, err := secret.Resolve("alerts.alertmanager.token", am.Token, am.TokenFile, EnvKey("alertmanager", "token"))
		switch {
		case err != nil:
			add("alerts.alertmanager.token", "%v", err)
		case !tok.IsSet():
			add("alerts.alertmanager", "has no token: set token_file (or %s); Alertmanager sends it with http_config.authorization", EnvKey("alertmanager", "token"))
		}
		am.Token, am.TokenFile = tok, ""
	}
	if am.URL != "" {
		if u, err := url.Parse(am.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("alerts.alertmanager.url", "%q is not an http(s) URL (Alertmanager's, e.g. http://alertmanager:9093)", am.URL)
		}
	}
	if am.MaxBody < 0 {
		add("alerts.alertmanager.max_body", "must be positive")
	}
	names := map[string]int{}
	for i, rc := range c.Alerts.Routes {
		p := fmt.Sprintf("alerts.routes[%d]", i)
		r, ferrs := alertmanager.CompileRoute(i, rc)
		for _, fe := range ferrs {
			add(p+"."+fe.Field, "%v", fe.Err)
		}
		if j, dup := names[r.Name]; dup {
			add(p+".name", "%q is also the name of alerts.routes[%d]", r.Name, j)
		}
		names[r.Name] = i
		if len(rc.Match) == 0 {
			add(p+".match", "is required (label: regular expression, e.g. alertname: \"FileSystemSpace.*\")")
		}
		if rc.Target != "" && !strings.Contains(rc.Target, "{{") {
			if _, ok := c.Targets[rc.Target]; !ok {
				add(p+".target", "%s", c.noTarget(rc.Target))
			}
		}
		if rc.Runbook != "" && rc.Target == "" && len(c.Targets) != 1 {
			add(p+".target", "is required with a runbook when several targets are configured")
		}
	}
	for i, w := range c.Watch {
		p := fmt.Sprintf("watch[%d]", i)
		if _, ok := c.Targets[w.Target]; !ok {
			add(p+".target", "%s", c.noTarget(w.Target))
		}
		for _, err := range w.Validate() {
			field, msg, _ := strings.Cut(err.Error(), ": ")
			if msg == "" {
				field, msg = "", field
			}
			add(strings.TrimSuffix(p+"."+field, "."), "%s", msg)
		}
		if msg := c.postProblem(w.Channel, w.Target, "its incidents"); msg != "" {
			add(p+".channel", "%s", msg)
		}
		if w.BuildLogsBytes > 0 {
			if t := c.Targets[w.Target]; t != nil && t.Database == nil && t.Simulator == nil {
				add(p+".build_logs_bytes", "target %q has no database configured (targets.%s.database)", w.Target, w.Target)
			}
		}
	}
	return errs
}

// postProblem says why channel, bound under channels:, may not be posted
// what the bot finds on target on its own (what: "its digest", "its
// incidents"); "" when it may. A channel bound to teams gets only their
// figures (digest.Schedule.Teams, watch.Rule.Teams); one not bound to the
// target would be shown what it may not act on.
func (c *Config) postProblem(channel, target, what string) string {
	s := c.Channels.PostScope(channel)
	if !s.Bound() || s.AllowsTarget(target) {
		return ""
	}
	return fmt.Sprintf("%s is bound to %s only (`channels.%s`), not to %q: %s would show what the channel may not act on; post them to a channel bound to that target, or bind it there", channel, strings.Join(s.Targets, ", "), channel, target, what)
}
