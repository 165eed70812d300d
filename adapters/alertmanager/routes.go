package alertmanager

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

// RouteConfig is one entry of alerts.routes: which alerts (match: label →
// anchored regular expression; a missing label is ""), and what to do with
// them. Target, Channel and Params values are Go templates over the
// alert's .labels and .annotations ({{ .labels.instance }}).
type RouteConfig struct {
	Name    string            `yaml:"name"`
	Match   map[string]string `yaml:"match"`
	Target  string            `yaml:"target"`
	Channel string            `yaml:"channel"`
	Runbook string            `yaml:"runbook"`
	Params  map[string]string `yaml:"params"`
	// Autostart is "" (nothing starts by itself) or "read_only": the
	// runbook's read-only steps start as a dry run when the incident opens.
	Autostart string `yaml:"autostart"`
}

// Autostart values.
const AutostartReadOnly = "read_only"

// Route is a compiled route.
type Route struct {
	Name    string
	match   map[string]*regexp.Regexp
	target  *template.Template
	channel *template.Template
	// channelText is the channel as configured, used when the template
	// renders nothing.
	channelText string
	Runbook     string
	params      map[string]*template.Template
	Autostart   bool
}

// funcs are the template functions, as in Prometheus templates.
var funcs = template.FuncMap{
	"reReplaceAll": func(pattern, repl, text string) (string, error) {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return "", err
		}
		return re.ReplaceAllString(text, repl), nil
	},
	"toLower": strings.ToLower,
	"toUpper": strings.ToUpper,
	// shortHost drops the port and the domain of an instance
	// ("caascad-ci-workers-infra-infra-prd-0.example.com:9100" →
	// "caascad-ci-workers-infra-infra-prd-0").
	"shortHost": shortHost,
	// workerID is bound per alert to the route's target (workerIDFunc);
	// parsed with this stand-in, which gives the short host.
	"workerID": shortHost,
}

// shortHost drops the port and the domain of an instance; an IP address
// stays whole.
func shortHost(s string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.Contains(s[i:], "]") {
		s = s[:i]
	}
	if net.ParseIP(strings.Trim(s, "[]")) != nil {
		return strings.Trim(s, "[]") // an address has no domain to drop
	}
	s, _, _ = strings.Cut(s, ".")
	return s
}

// WorkerNamer gives the name of worker id under a target's naming template
// (targets.<name>.workers.name); ok is false when the target has none.
type WorkerNamer func(target, id string) (name string, ok bool)

// workerIDFunc is workerID for alerts routed to target: the worker ID in
// the instance's host ("…-prd-7:9100" → "7") only when the target's naming
// template names exactly that host for that ID; otherwise the short host
// ("worker-7:9100" → "worker-7"), so that a run never goes to worker 7 of
// another naming scheme (another machine).
func workerIDFunc(target string, names WorkerNamer) func(string) string {
	return func(s string) string {
		host := shortHost(s)
		if net.ParseIP(host) != nil {
			return "" // an address names no worker: the incident says the parameter is missing
		}
		m := trailingID.FindStringSubmatch(host)
		if m == nil || names == nil {
			return host
		}
		if name, ok := names(target, m[1]); ok && strings.EqualFold(name, host) {
			return m[1]
		}
		return host
	}
}

var trailingID = regexp.MustCompile(`-([0-9]+)$`)

// FieldError is a problem with one field of a route.
type FieldError struct {
	Field string // "match.alertname", "params.worker"
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// CompileRoute checks and compiles a route; index names it when it has no
// name ("routes[0]").
func CompileRoute(index int, rc RouteConfig) (*Route, []*FieldError) {
	var errs []*FieldError
	bad := func(field string, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	r := &Route{Name: rc.Name, Runbook: rc.Runbook, match: map[string]*regexp.Regexp{}, params: map[string]*template.Template{}}
	if r.Name == "" {
		r.Name = fmt.Sprintf("routes[%d]", index)
	}
	for _, k := range slices.Sorted(maps.Keys(rc.Match)) {
		re, err := regexp.Compile("^(?:" + rc.Match[k] + ")$")
		if err != nil {
			bad("match."+k, "%q is not a regular expression: %v", rc.Match[k], err)
			continue
		}
		r.match[k] = re
	}
	tmpl := func(field, text string) *template.Template {
		t, err := template.New(field).Funcs(funcs).Option("missingkey=zero").Parse(text)
		if err != nil {
			bad(field, "%v", err)
			return nil
		}
		return t
	}
	if rc.Target != "" {
		r.target = tmpl("target", rc.Target)
	}
	if rc.Channel == "" {
		bad("channel", "is required (e.g. \"#ci-ops\")")
	} else {
		r.channel, r.channelText = tmpl("channel", rc.Channel), rc.Channel
	}
	for _, k := range slices.Sorted(maps.Keys(rc.Params)) {
		if k == "target" {
			bad("params.target", "set the route's target instead")
			continue
		}
		if t := tmpl("params."+k, rc.Params[k]); t != nil {
			r.params[k] = t
		}
	}
	if len(rc.Params) > 0 && rc.Runbook == "" {
		bad("params", "has parameters but no runbook")
	}
	switch rc.Autostart {
	case "":
	case AutostartReadOnly:
		if rc.Runbook == "" {
			bad("autostart", "needs a runbook")
		}
		r.Autostart = true
	default:
		bad("autostart", "%q: the only value is read_only (nothing that changes anything ever starts by itself)", rc.Autostart)
	}
	return r, errs
}

// Matches reports whether the route takes an alert with these labels.
func (r *Route) Matches(labels map[string]string) bool {
	for k, re := range r.match {
		if !re.MatchString(labels[k]) {
			return false
		}
	}
	return true
}

func render(t *template.Template, a Alert) (string, error) {
	return renderFor(t, a, "", nil)
}

// renderFor renders a route template for an alert routed to target, with
// workerID bound to that target's worker names.
func renderFor(t *template.Template, a Alert, target string, names WorkerNamer) (string, error) {
	if t == nil {
		return "", nil
	}
	if names != nil {
		c, err := t.Clone()
		if err != nil {
			return "", err
		}
		t = c.Funcs(template.FuncMap{"workerID": workerIDFunc(target, names)})
	}
	var b strings.Builder
	data := map[string]any{"labels": nonNil(a.Labels), "annotations": nonNil(a.Annotations)}
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return strings.TrimSpace(b.String()), nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
