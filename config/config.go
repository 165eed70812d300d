// Package config reads groundcrew.yaml: strict YAML (unknown keys are
// errors with their line), secrets inline, as *_file or from the
// environment (never printed), defaults applied, and cross-references
// checked, so `groundcrew config check` catches mistakes before a 3 a.m. page.
package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/adapters/chatplatform"
	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/postgres"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/internal/secret"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/watch"
)

// EnvConfig names the environment variable holding the config path.
const EnvConfig = "GROUNDCREW_CONFIG"

// Config is the whole configuration file.
type Config struct {
	// Store is the bbolt file (default groundcrew.db next to the config
	// file; relative paths are relative to the config file's directory).
	// The file's store key is StoreYAML: a path, or postgres (config/store.go).
	Store string `yaml:"-"`
	// StorePostgres is set when the store is PostgreSQL (config/store.go).
	StorePostgres *StorePostgres `yaml:"-"`
	StoreYAML     StoreSetting   `yaml:"store"`
	// Retention is how long finished runs are kept in the store after they
	// finished ("400d", or a Go duration such as "720h"; default 400d).
	// The audit log is always kept whole.
	Retention Days   `yaml:"retention"`
	Server    Server `yaml:"server"`
	Chat      Chat   `yaml:"chat"`
	// Targets are the Concourse instances, by name.
	Targets   map[string]*Target `yaml:"targets"`
	Approvals policy.Config      `yaml:"approvals"`
	// Channels binds chat channels to the targets and Concourse teams they
	// may act on (policy.Channels); the loader hands it to the policy.
	Channels policy.Channels `yaml:"channels"`
	// Users maps chat users (their name or platform id) to their Concourse
	// identities, as the teams' auth config names users ("local:alice",
	// "github:alice"), for the targets whose authority is concourse.
	Users   map[string]Identities `yaml:"users"`
	Digests []Digest              `yaml:"digests"`
	// Alerts and Watch open incidents (config/incidents.go).
	Alerts Alerts       `yaml:"alerts"`
	Watch  []watch.Rule `yaml:"watch"`
	// Runbooks are directories added to (and overriding) the built-in library.
	Runbooks []string `yaml:"runbooks"`
	Log      Log      `yaml:"log"`
	Audit    Audit    `yaml:"audit"`
	// Web serves a page for every run and incident (config/web.go).
	Web Web `yaml:"web"`

	// Path is where the file was read from.
	Path string `yaml:"-"`
}

// Server is the bot's HTTP server, served in every chat mode: /healthz,
// /readyz, /metrics and the Slack/Mattermost callbacks.
type Server struct {
	Listen string `yaml:"listen"`
	// AdminSocket is the unix socket (0600) through which `groundcrew runs`
	// and `groundcrew audit` read the store while serve holds it (default:
	// the store path + ".sock"; "off" disables it).
	AdminSocket string `yaml:"admin_socket"`
}

// Audit configures where heads of the audit chain are published, so a cut
// tail of the log is detected (`groundcrew audit verify --expect`).
type Audit struct {
	// CheckpointChannel gets the head on a schedule (none: only the log).
	CheckpointChannel string `yaml:"checkpoint_channel"`
	// Every is the posting period (default 1h).
	Every time.Duration `yaml:"every"`
}

// Log configures logging.
type Log struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error
	Format string `yaml:"format"` // text (default) or json
}

// Chat selects and configures the chat platform (the registry of
// platforms is chatplatform).
type Chat = chatplatform.Config

// Target is one Concourse instance.
type Target struct {
	URL          string        `yaml:"url"`
	Team         string        `yaml:"team"`
	Username     string        `yaml:"username"`
	Password     secret.Secret `yaml:"password"`
	PasswordFile string        `yaml:"password_file"`
	CACert       string        `yaml:"ca_cert"`
	Insecure     bool          `yaml:"insecure_skip_verify"`
	TSA          string        `yaml:"tsa"`
	// MaxInFlight caps the adaptive number of requests bulk operations
	// keep in flight on this target (default 32; see concourse.TargetConfig).
	MaxInFlight int `yaml:"max_in_flight"`
	// FlyTarget is the name of this Concourse in people's fly config
	// (`fly -t <fly_target>`); default: the target's name. Runbooks put it
	// in every fly command they show ({{ .fly_target }}), so a command
	// copied at 3 a.m. acts on this Concourse, not on fly's current one.
	FlyTarget string            `yaml:"fly_target"`
	Vars      map[string]string `yaml:"vars"`
	// Workers maps the operations manual's worker IDs to names and hosts
	// (templates over vars); see concourse.WorkerNaming.
	Workers     concourse.WorkerNaming `yaml:"workers"`
	Description string                 `yaml:"description"`
	Database    *Database              `yaml:"database"`
	// Simulator runs an in-process Concourse simulator for this target
	// instead of connecting to URL (demo, runbook tests, training).
	Simulator *Simulator `yaml:"simulator"`
	// Authority is "concourse" when a person's own Concourse role on a
	// team decides too, besides the policy (their identity from users:
	// or their verified e-mail); "" (the default): the policy alone.
	Authority string `yaml:"authority"`
	// StalledWorkerTimeout is the web node's --stalled-worker-timeout
	// (Concourse 8.3): Concourse removes a worker stalled longer than that
	// by itself. 0 or absent: never (Concourse's default). Gates, status,
	// digests and watch rules say when it will; worker-stalled offers to
	// wait for it when it is near.
	StalledWorkerTimeout time.Duration `yaml:"stalled_worker_timeout"`
}

// Identities are one chat user's Concourse identities: one
// "<connector>:<user>" or a list of them.
type Identities []string

// UnmarshalYAML implements yaml.Unmarshaler: a string or a list.
func (ids *Identities) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*ids = Identities{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return fmt.Errorf("line %d: a Concourse identity (\"local:alice\") or a list of them: %v", n.Line, err)
	}
	*ids = list
	return nil
}

// Database is a target's Concourse PostgreSQL database.
type Database struct {
	DSN              secret.Secret `yaml:"dsn"`
	DSNFile          string        `yaml:"dsn_file"`
	StatementTimeout time.Duration `yaml:"statement_timeout"`
	LockTimeout      time.Duration `yaml:"lock_timeout"`
	ConnectTimeout   time.Duration `yaml:"connect_timeout"`
}

// Simulator configures an in-process Concourse simulator.
type Simulator struct {
	// World is a YAML file describing the initial world; empty means the
	// demo world (a stalled worker, saturated pending builds, image-fetch
	// errors).
	World string `yaml:"world"`
}

// Digest is a scheduled health digest.
type Digest struct {
	Target   string `yaml:"target"`
	Channel  string `yaml:"channel"`
	Schedule string `yaml:"schedule"`
	Timezone string `yaml:"timezone"`
	// Window is how far back builds are counted (default 24h).
	Window time.Duration `yaml:"window"`
	// CatchUp posts a digest missed while the bot was down if it is at most
	// this late (default: one period).
	CatchUp time.Duration `yaml:"catch_up"`
}

// Error is a configuration problem, with the YAML path it concerns.
type Error struct {
	File string
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Path, e.Msg)
}

// Errors is every problem found.
type Errors []*Error

func (es Errors) Error() string {
	var lines []string
	for _, e := range es {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

// MaxFileSize is the largest config file Load reads.
const MaxFileSize = 1 << 20

// Load reads, resolves and validates the file at path.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{File: path, Msg: fmt.Sprintf("the file is larger than %d KiB, the limit for a config file", MaxFileSize>>10)}
	}
	return Parse(path, data)
}

// Days is a duration written as "400d" or as a Go duration ("720h").
type Days time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Days) UnmarshalYAML(n *yaml.Node) error {
	s := strings.TrimSpace(n.Value)
	if v, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(v, "%d", &days); err == nil && days > 0 && fmt.Sprint(days) == v {
			*d = Days(time.Duration(days) * 24 * time.Hour)
			return nil
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return fmt.Errorf("line %d: %q is not a duration: write days (\"400d\") or hours (\"720h\")", n.Line, s)
	}
	*d = Days(v)
	return nil
}

// Parse decodes and validates configuration data read from path.
func Parse(path string, data []byte) (*Config, error) {
	c := &Config{Path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, errEOF(err)) {
		return nil, decodeErrors(path, data, err)
	}
	c.takeStore()
	c.Approvals.Channels = c.Channels
	c.applyEnv()
	c.defaults(filepath.Dir(path))
	if errs := c.validate(); len(errs) > 0 {
		for _, e := range errs {
			e.File = path
		}
		return c, errs
	}
	return c, nil
}

func errEOF(err error) error {
	if err != nil && err.Error() == "EOF" {
		return err
	}
	return errors.New("not eof")
}

var envName = regexp.MustCompile(`[^A-Z0-9]+`)

// EnvKey is the environment variable for a secret of a target:
// GROUNDCREW_TARGET_INFRA_PRD_PASSWORD.
func EnvKey(parts ...string) string {
	return "GROUNDCREW_" + strings.Trim(envName.ReplaceAllString(strings.ToUpper(strings.Join(parts, "_")), "_"), "_")
}

// applyEnv applies environment overrides of non-secret settings.
func (c *Config) applyEnv() {
	if v := os.Getenv("GROUNDCREW_STORE"); v != "" && !IsPostgresURL(v) {
		c.Store = v
	}
	if v := os.Getenv("GROUNDCREW_LISTEN"); v != "" {
		c.Server.Listen = v
	}
	if v := os.Getenv("GROUNDCREW_CHAT_PLATFORM"); v != "" {
		c.Chat.Platform = v
	}
}

func (c *Config) defaults(dir string) {
	if c.Store == "" {
		c.Store = "groundcrew.db"
	}
	if c.Server.Listen == "" {
		c.Server.Listen = "127.0.0.1:8080"
	}
	if c.Chat.Platform == "" {
		c.Chat.Platform = "console"
	}
	if c.Log.Level == "" {
		c.Log.Level = "info"
	}
	if c.Log.Format == "" {
		c.Log.Format = "text"
	}
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	c.Store = rel(c.Store)
	if c.StorePostgres != nil {
		c.StorePostgres.DSNFile = rel(c.StorePostgres.DSNFile)
	}
	switch c.Server.AdminSocket {
	case "":
		c.Server.AdminSocket = c.Store + ".sock"
		if c.StorePostgres != nil {
			c.Server.AdminSocket = "off" // every command reads PostgreSQL directly
		}
	case "off":
	default:
		c.Server.AdminSocket = rel(c.Server.AdminSocket)
	}
	for i, d := range c.Runbooks {
		c.Runbooks[i] = rel(d)
	}
	for _, t := range c.Targets {
		if t == nil {
			continue
		}
		if t.Team == "" {
			t.Team = "main"
		}
		t.PasswordFile, t.CACert = rel(t.PasswordFile), rel(t.CACert)
		if t.Database != nil {
			t.Database.DSNFile = rel(t.Database.DSNFile)
		}
		if t.Simulator != nil {
			t.Simulator.World = rel(t.Simulator.World)
		}
	}
	for i := range c.Digests {
		if c.Digests[i].Window == 0 {
			c.Digests[i].Window = 24 * time.Hour
		}
	}
}

// TargetNames returns the target names, sorted.
func (c *Config) TargetNames() []string {
	var out []string
	for n := range c.Targets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var targetName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// flyTargetName is what a fly_target may be: shown quoted in shell
// commands, it must not need quoting itself.
var flyTargetName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// FlyTargetOf returns the fly target name of target name: its fly_target,
// else the name itself.
func (c *Config) FlyTargetOf(name string) string {
	if t := c.Targets[name]; t != nil && t.FlyTarget != "" {
		return t.FlyTarget
	}
	return name
}

func (c *Config) validate() Errors {
	var errs Errors
	add := func(path, format string, args ...any) {
		errs = append(errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	c.validateStore(add)
	errs = append(errs, c.validateWeb()...)
	if !chatplatform.Known(c.Chat.Platform) {
		add("chat.platform", "%q is not a platform: use %s", c.Chat.Platform, strings.Join(chatplatform.Names(), ", "))
	}
	if len(c.Targets) == 0 {
		add("targets", "no Concourse target is configured: add one under targets (see deploy/groundcrew.example.yaml)")
	}
	for _, name := range c.TargetNames() {
		t := c.Targets[name]
		p := "targets." + name
		if t == nil {
			add(p, "is empty")
			continue
		}
		if !targetName.MatchString(name) {
			add(p, "target names are lowercase letters, digits, '.', '_' and '-' (used as `target=%s`)", name)
		}
		if t.FlyTarget != "" && !flyTargetName.MatchString(t.FlyTarget) {
			add(p+".fly_target", "%q is not a fly target name: use letters, digits, '.', '_' and '-' (the name `fly -t` takes; leave it out to use %q)", t.FlyTarget, name)
		}
		if t.Simulator == nil {
			if t.URL == "" {
				add(p+".url", "is required (the Concourse web URL, e.g. https://ci.example.com)")
			} else if u, err := url.Parse(t.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(p+".url", "%q is not an http(s) URL", t.URL)
			}
		}
		pw, err := secret.Resolve(p+".password", t.Password, t.PasswordFile, EnvKey("target", name, "password"))
		if err != nil {
			add(p+".password", "%v", err)
		}
		t.Password, t.PasswordFile = pw, ""
		if t.Username != "" && !pw.IsSet() && t.Simulator == nil {
			add(p+".password", "username %q has no password: set password_file (or %s)", t.Username, EnvKey("target", name, "password"))
		}
		if t.StalledWorkerTimeout < 0 {
			add(p+".stalled_worker_timeout", "%s is negative: give the web node's --stalled-worker-timeout (10m), or leave it out when the web node never removes stalled workers by itself", t.StalledWorkerTimeout)
		}
		if t.MaxInFlight < 0 || t.MaxInFlight > concourse.MaxMaxInFlight {
			add(p+".max_in_flight", "%d is out of range: use 1 to %d requests in flight (or leave it out for the default %d)",
				t.MaxInFlight, concourse.MaxMaxInFlight, concourse.DefaultMaxInFlight)
		}
		if t.CACert != "" {
			if _, err := os.Stat(t.CACert); err != nil {
				add(p+".ca_cert", "%v", err)
			}
		}
		if t.Database != nil {
			dsn, err := secret.Resolve(p+".database.dsn", t.Database.DSN, t.Database.DSNFile, EnvKey("target", name, "database", "dsn"))
			if err != nil {
				add(p+".database.dsn", "%v", err)
			} else if !dsn.IsSet() {
				add(p+".database", "has no dsn: set dsn_file (or %s)", EnvKey("target", name, "database", "dsn"))
			} else if err := (postgres.DatabaseConfig{DSN: dsn.Value()}).Validate(); err != nil {
				add(p+".database.dsn", "%v", err)
			}
			t.Database.DSN, t.Database.DSNFile = dsn, ""
		}
		if err := t.Workers.Validate(name, t.Vars); err != nil {
			add(p+".workers", "%v", err)
		}
		if t.Simulator != nil && t.Simulator.World != "" {
			if _, err := os.Stat(t.Simulator.World); err != nil {
				add(p+".simulator.world", "%v", err)
			}
		}
		switch t.Authority {
		case "", AuthorityConcourse:
		default:
			add(p+".authority", "%q: leave it out (the policy alone decides) or write concourse (a person's Concourse role on the team decides too)", t.Authority)
		}
	}
	for _, name := range sortedKeys(c.Users) {
		for _, id := range c.Users[name] {
			if conn, user, ok := strings.Cut(id, ":"); !ok || strings.TrimSpace(conn) == "" || strings.TrimSpace(user) == "" {
				add("users."+name, "%q is not a Concourse identity: write <connector>:<user> as the team's auth names it (local:alice, github:alice, oidc:alice@example.com)", id)
			}
		}
	}
	for i, d := range c.Digests {
		p := fmt.Sprintf("digests[%d]", i)
		if _, ok := c.Targets[d.Target]; !ok {
			add(p+".target", "%s", c.noTarget(d.Target))
		}
		if d.Channel == "" {
			add(p+".channel", "is required (e.g. \"#ci-ops\")")
		}
		if msg := c.postProblem(d.Channel, d.Target, "its digest"); msg != "" {
			add(p+".channel", "%s", msg)
		}
		if d.Timezone != "" {
			if _, err := time.LoadLocation(d.Timezone); err != nil {
				add(p+".timezone", "%q is not a time zone (e.g. Europe/Paris): %v", d.Timezone, err)
				continue
			}
		}
		// The scheduler's own parser: config check and serve agree.
		if _, _, err := digest.ParseSchedule(d.Schedule, d.Timezone); err != nil {
			add(p+".schedule", "%v", err)
		}
	}
	// The policy's values and target names; Check (config check and
	// serve) adds the names only known once runbooks, operations and the
	// chat platform are loaded.
	for _, p := range c.Approvals.Check(context.Background(), policy.Known{Targets: c.TargetNames()}) {
		add(p.Path, "%s", p.Msg)
	}
	for i, d := range c.Runbooks {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			add(fmt.Sprintf("runbooks[%d]", i), "%s is not a directory", d)
		}
	}
	if c.Audit.Every < 0 || c.Audit.Every > 0 && c.Audit.Every < time.Minute {
		add("audit.every", "%s: post checkpoints at most once a minute (e.g. 1h)", c.Audit.Every)
	}
	if c.Audit.Every > 0 && c.Audit.CheckpointChannel == "" {
		add("audit.every", "is set but audit.checkpoint_channel is not: say where to post the checkpoints (e.g. \"#ci-audit\")")
	}
	errs = append(errs, c.validateIncidents()...)
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		add("log.level", "%q: use debug, info, warn or error", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		add("log.format", "%q: use text or json", c.Log.Format)
	}
	return errs
}

// Check validates the configuration against what exists where it runs:
// every name in the approval policy (targets, runbooks, operations, users
// and groups where the platform can list them) and the runbooks' own
// approval settings. `config check` and `serve` both call it after Load,
// so they never disagree. Problems are returned as Errors; checks the
// platform could not answer come back as warnings.
func (c *Config) Check(ctx context.Context, k policy.Known) (warnings []string, err error) {
	var errs Errors
	problems := c.Approvals.Check(ctx, k)
	if k.User != nil {
		// users: names chat users the platform knows (ids pass as they are).
		for _, name := range sortedKeys(c.Users) {
			if _, _, err := k.User(ctx, name); errors.Is(err, policy.ErrUnknown) {
				problems = append(problems, policy.Problem{Path: "users." + name, Msg: fmt.Sprintf("no user %q on the chat platform: users: maps chat users (their name or id) to Concourse identities", name)})
			} else if err != nil {
				problems = append(problems, policy.Problem{Path: "users." + name, Warning: true, Msg: fmt.Sprintf("could not look up user %q: %v", name, err)})
			}
		}
	}
	problems = append(problems, c.postChannelProblems(ctx, k)...)
	if c.ConcourseAuthority() && len(c.Users) == 0 {
		problems = append(problems, policy.Problem{Path: "users", Warning: true,
			Msg: "a target's authority is concourse but users: maps no chat user to a Concourse identity: only people whose chat platform gives a verified e-mail the teams' auth lists can act there"})
	}
	for _, name := range c.TargetNames() {
		if t := c.Targets[name]; t == nil || t.Authority != AuthorityConcourse || k.ConcourseTeams == nil {
			continue
		}
		if _, all, err := k.ConcourseTeams(ctx, name); err == nil && !all {
			problems = append(problems, policy.Problem{Path: "targets." + name + ".authority", Warning: true,
				Msg: "the bot's Concourse account is not an admin: it cannot read the auth of teams where it has no role, so their people are refused there (log in as an owner of team main)"})
		} else if err != nil {
			problems = append(problems, policy.Problem{Path: "targets." + name + ".authority", Warning: true, Msg: fmt.Sprintf("could not read the teams' auth: %v", err)})
		}
	}
	for _, p := range problems {
		if p.Warning {
			warnings = append(warnings, p.String())
			continue
		}
		errs = append(errs, &Error{File: c.Path, Path: p.Path, Msg: p.Msg})
	}
	if len(errs) > 0 {
		return warnings, errs
	}
	return warnings, nil
}

// AuthorityConcourse is Target.Authority when Concourse's roles decide too.
const AuthorityConcourse = "concourse"

// ConcourseAuthority reports whether some target's authority is Concourse.
func (c *Config) ConcourseAuthority() bool {
	for _, t := range c.Targets {
		if t != nil && t.Authority == AuthorityConcourse {
			return true
		}
	}
	return false
}

// UserIdentities is users: as a map of chat user to Concourse identities.
func (c *Config) UserIdentities() map[string][]string {
	out := make(map[string][]string, len(c.Users))
	for k, v := range c.Users {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// postChannelProblems refuses a digest's or watch rule's channel written
// otherwise than the binding of the same channel ("#payments-ci" bound as
// its id): what the bot posts there on its own is scoped by the binding
// written the same way, so it would cover every team.
func (c *Config) postChannelProblems(ctx context.Context, k policy.Known) []policy.Problem {
	if k.Channel == nil || len(c.Channels.Bindings) == 0 {
		return nil
	}
	bound := map[string]string{} // channel id → binding key
	for _, key := range c.Channels.Keys() {
		if id, err := k.Channel(ctx, key); err == nil && id != "" {
			bound[id] = key
		}
	}
	var out []policy.Problem
	check := func(path, channel string) {
		if channel == "" || c.Channels.PostScope(channel).Bound() {
			return
		}
		if id, err := k.Channel(ctx, channel); err == nil && bound[id] != "" {
			out = append(out, policy.Problem{Path: path, Msg: fmt.Sprintf("%s is the channel bound as `channels.%s`: write it the same way (%q), so what is posted there covers only what the binding allows", channel, bound[id], bound[id])})
		}
	}
	for i, d := range c.Digests {
		check(fmt.Sprintf("digests[%d].channel", i), d.Channel)
	}
	for i, w := range c.Watch {
		check(fmt.Sprintf("watch[%d].channel", i), w.Channel)
	}
	return out
}

// NamesTeams reports whether the configuration names Concourse teams
// (approvals.teams, channels' teams) or reads their auth (authority:
// concourse), which `config check` asks the live targets about.
func (c *Config) NamesTeams() bool {
	if len(c.Approvals.Teams) > 0 || c.ConcourseAuthority() {
		return true
	}
	for _, b := range c.Channels.Bindings {
		if len(b.Teams) > 0 {
			return true
		}
	}
	return false
}

// SelfApprovalAt lists the policies that let requesters approve their own
// runs; the binary logs each one loudly at start.
func (c *Config) SelfApprovalAt() []string { return c.Approvals.SelfApprovalAt() }

// ConcourseTarget returns the client config of a target (secrets resolved).
func (c *Config) ConcourseTarget(name string) concourse.TargetConfig {
	t := c.Targets[name]
	return concourse.TargetConfig{Name: name, URL: t.URL, Team: t.Team, Username: t.Username, Password: t.Password.Value(),
		CACert: t.CACert, InsecureSkipVerify: t.Insecure, TSA: t.TSA, Vars: t.Vars, Workers: t.Workers,
		MaxInFlight: t.MaxInFlight, FlyTarget: c.FlyTargetOf(name), StalledWorkerTimeout: t.StalledWorkerTimeout}
}

// DatabaseConfig returns the PostgreSQL config of a target, if any.
func (c *Config) DatabaseConfig(name string) (postgres.DatabaseConfig, bool) {
	t := c.Targets[name]
	if t == nil || t.Database == nil {
		return postgres.DatabaseConfig{}, false
	}
	d := t.Database
	return postgres.DatabaseConfig{DSN: d.DSN.Value(), StatementTimeout: d.StatementTimeout, LockTimeout: d.LockTimeout, ConnectTimeout: d.ConnectTimeout}, true
}

// noTarget says that name is not a configured target, with a did-you-mean
// and the targets there are.
func (c *Config) noTarget(name string) string {
	names := c.TargetNames()
	sort.Strings(names)
	hint := ""
	if s := textmodel.Suggest(name, names); s != "" {
		hint = fmt.Sprintf("; did you mean %q?", s)
	}
	return fmt.Sprintf("no target %q is configured%s (targets: %s)", name, hint, strings.Join(names, ", "))
}
