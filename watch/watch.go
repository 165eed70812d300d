// Package watch polls each target on a schedule and turns detected
// conditions into incidents: a worker stalled too long, too many pending
// builds or a too old one, build-log tables too large, and the target
// itself unreachable or refusing the login. One incident per rule and
// object (worker, queue, database, target), with hysteresis: a condition
// opens its incident when it holds on two polls in a row and resolves it
// when it has been clear for two polls in a row. A poll is one collection
// of a digest.Source; serve gives the watch concourse.WatchSource, which
// after a target's first poll reads only what changed (new builds, the
// pending ones). Rules start at a stable offset within their period, so
// rules with the same period do not poll together.
package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/human"
)

// Rule is one entry of watch: in the config.
type Rule struct {
	Target  string `yaml:"target"`
	Channel string `yaml:"channel"`
	// Every is the poll period (default 1m).
	Every time.Duration `yaml:"every"`
	// WorkerStalledFor opens an incident per worker stalled at least this long.
	WorkerStalledFor time.Duration `yaml:"worker_stalled_for"`
	// PendingBuilds opens an incident when more builds than this are pending.
	PendingBuilds int `yaml:"pending_builds"`
	// OldestPending opens one when the oldest pending build waits this long.
	OldestPending time.Duration `yaml:"oldest_pending"`
	// BuildLogsBytes opens one when the build-log tables are larger.
	BuildLogsBytes ByteSize `yaml:"build_logs_bytes"`
	// Teams, when not nil, are the only Concourse teams the rule watches:
	// its channel is bound to them (channels:, set by the configuration,
	// not written in the rule). Its polls count their builds and tables,
	// its worker incidents are of their own workers, and its incidents'
	// keys are its own.
	Teams []string `yaml:"-"`
}

// DefaultEvery is the default poll period.
const DefaultEvery = time.Minute

// Polls is how many polls in a row a condition must hold to open its
// incident, and be clear to resolve it.
const Polls = 2

// window is the build window a poll collects (pending builds are counted
// in it).
const window = 24 * time.Hour

// ByteSize is a size in bytes written as "20GiB", "500MB" or a number.
type ByteSize int64

var sizeRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGT]i?B|B)?$`)

// UnmarshalText implements encoding.TextUnmarshaler.
func (b *ByteSize) UnmarshalText(text []byte) error {
	m := sizeRe.FindStringSubmatch(strings.TrimSpace(string(text)))
	if m == nil {
		return fmt.Errorf("%q is not a size (e.g. 20GiB, 500MB)", text)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return err
	}
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}[m[2]]
	*b = ByteSize(n * mult)
	return nil
}

func (b ByteSize) String() string {
	f := float64(b)
	for _, u := range []string{"B", "KiB", "MiB", "GiB", "TiB"} {
		if f < 1024 || u == "TiB" {
			if u == "B" {
				return fmt.Sprintf("%d B", int64(b))
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
		f /= 1024
	}
	return ""
}

// Validate checks a rule (targets are checked by the config).
func (r Rule) Validate() []error {
	var errs []error
	if r.Channel == "" {
		errs = append(errs, errors.New("channel: is required (e.g. \"#ci-ops\")"))
	}
	if r.Every != 0 && r.Every < 10*time.Second {
		errs = append(errs, fmt.Errorf("every: %s is too often (at least 10s: a poll costs one digest)", r.Every))
	}
	if r.WorkerStalledFor < 0 || r.OldestPending < 0 || r.PendingBuilds < 0 || r.BuildLogsBytes < 0 {
		errs = append(errs, errors.New("thresholds must not be negative"))
	}
	return errs
}

// Sink takes the signals and knows the open incidents (the incident manager).
type Sink interface {
	Signal(ctx context.Context, s incident.Signal) (*incident.Incident, error)
	Open(ctx context.Context) ([]*incident.Incident, error)
}

// Options configure a Watcher.
type Options struct {
	Rules  []Rule
	Source digest.Source
	Sink   Sink
	Now    func() time.Time
	Logger *slog.Logger
	// Observer is told of every scheduled poll (metrics); optional.
	Observer Observer
	// State keeps each rule's hysteresis (conditions held or clear, since
	// when workers are stalled) across restarts; optional (the store).
	State State
}

// State is a small key-value store (the store's kv bucket).
type State interface {
	GetKV(ctx context.Context, key string) ([]byte, error)
	PutKV(ctx context.Context, key string, value []byte) error
}

// ErrUnreadable marks a poll that could not read its target (the target
// is unreachable or refuses the login): the poll counts as an error.
var ErrUnreadable = errors.New("could not read the target")

// Observer learns how each scheduled poll of a rule went: lag is how late
// it started after its due time (0 when on time), took how long it ran.
type Observer interface {
	WatchPolled(target string, lag, took time.Duration, err error)
}

type nopObserver struct{}

func (nopObserver) WatchPolled(string, time.Duration, time.Duration, error) {}

// Watcher polls the rules. Poll is safe for concurrent use.
type Watcher struct {
	o   Options
	log *slog.Logger

	mu     sync.Mutex
	rules  []*ruleState
	seeded bool
}

type ruleState struct {
	rule Rule
	prev *digest.Data
	// stalledSince is when a poll first saw each worker stalled.
	stalledSince map[string]time.Time
	// running counts the polls in a row a worker of stalledSince was not stalled.
	running map[string]int
	conds   map[string]*cond
}

// cond is the hysteresis state of one key.
type cond struct {
	Active bool            `json:"active"`
	Hold   int             `json:"hold"`
	Clear  int             `json:"clear"`
	Last   incident.Signal `json:"last"`
}

// savedRule is what State keeps of a rule.
type savedRule struct {
	StalledSince map[string]time.Time `json:"stalled_since"`
	Running      map[string]int       `json:"running"`
	Conds        map[string]*cond     `json:"conds"`
}

// stateKey is where State keeps rule i.
func stateKey(r Rule, i int) string {
	return fmt.Sprintf("watch:state:%s:%s:%d", r.Target, r.Channel, i)
}

// Offset is how long after the watcher starts rule i polls first, then
// every period: a stable spread over the period (a hash of the rule), so
// that rules with the same period do not all poll at the same instant.
func Offset(r Rule, i int) time.Duration {
	every := r.Every
	if every <= 0 {
		every = DefaultEvery
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d", r.Target, r.Channel, i)
	// the golden ratio spreads consecutive rules evenly as well
	frac := math.Mod(float64(h.Sum64()%1e9)/1e9+float64(i)*0.6180339887, 1)
	return time.Duration(frac * float64(every))
}

// New returns a watcher.
func New(o Options) (*Watcher, error) {
	if o.Source == nil || o.Sink == nil {
		return nil, errors.New("watch: Source and Sink are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	w := &Watcher{o: o, log: o.Logger}
	for _, r := range o.Rules {
		if r.Every == 0 {
			r.Every = DefaultEvery
		}
		w.rules = append(w.rules, &ruleState{rule: r, stalledSince: map[string]time.Time{}, running: map[string]int{}, conds: map[string]*cond{}})
	}
	return w, nil
}

// Run polls every rule at its period until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	if len(w.rules) == 0 {
		<-ctx.Done()
		return nil
	}
	var wg sync.WaitGroup
	for i, rs := range w.rules {
		wg.Add(1)
		go func() {
			defer wg.Done()
			due := time.Now().Add(Offset(rs.rule, i))
			first := time.NewTimer(time.Until(due))
			select {
			case <-ctx.Done():
				first.Stop()
				return
			case <-first.C:
			}
			t := time.NewTicker(rs.rule.Every)
			defer t.Stop()
			for {
				start := time.Now()
				err := w.Poll(ctx, i)
				if ctx.Err() != nil {
					return
				}
				w.o.Observer.WatchPolled(rs.rule.Target, max(start.Sub(due), 0), time.Since(start), err)
				due = start.Add(rs.rule.Every)
				if err != nil {
					w.log.Error("watch poll", "target", rs.rule.Target, "err", err)
				}
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// Key is the incident key of a rule's object. A rule of some teams only
// (teams) has keys of its own, "watch:infra-prd[payments]:pending_builds":
// its figures are not every team's, and its incidents go to its channel.
func Key(target, cond, object string, teams ...string) string {
	k := "watch:" + target
	if len(teams) > 0 {
		k += "[" + strings.Join(teams, ",") + "]"
	}
	k += ":" + cond
	if object != "" {
		k += ":" + object
	}
	return k
}

// prefix is what the keys of rule r's incidents start with.
func prefix(r Rule) string { return strings.TrimSuffix(Key(r.Target, "", "", r.Teams...), ":") + ":" }

// seed marks the keys of open watch incidents active, so that a condition
// that cleared while the bot was down still resolves its incident.
func (w *Watcher) seed(ctx context.Context) error {
	if w.seeded {
		return nil
	}
	if w.o.State != nil {
		for i, rs := range w.rules {
			b, err := w.o.State.GetKV(ctx, stateKey(rs.rule, i))
			if err != nil {
				return fmt.Errorf("reading the watch state of %s: %w", rs.rule.Target, err)
			}
			if len(b) == 0 {
				continue
			}
			var sv savedRule
			if err := json.Unmarshal(b, &sv); err != nil {
				w.log.Error("watch state unreadable; starting afresh", "target", rs.rule.Target, "err", err)
				continue
			}
			for k, v := range sv.StalledSince {
				rs.stalledSince[k] = v
			}
			for k, v := range sv.Running {
				rs.running[k] = v
			}
			for k, c := range sv.Conds {
				if c != nil {
					rs.conds[k] = c
				}
			}
		}
	}
	open, err := w.o.Sink.Open(ctx)
	if err != nil {
		return fmt.Errorf("listing open incidents: %w", err)
	}
	for _, in := range open {
		if in.Source.Kind != incident.SourceWatch {
			continue
		}
		for _, rs := range w.rules {
			if c := rs.conds[in.Key]; c != nil && c.Active {
				continue // the saved state knows it
			}
			if strings.HasPrefix(in.Key, prefix(rs.rule)) {
				rs.conds[in.Key] = &cond{Active: true, Last: incident.Signal{Key: in.Key, Source: in.Source, Title: in.Title, Target: in.Target, Channel: in.Channel}}
			}
		}
	}
	w.seeded = true
	return nil
}

// Poll collects rule i's target once and applies what it found.
func (w *Watcher) Poll(ctx context.Context, i int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.seed(ctx); err != nil {
		return err
	}
	rs := w.rules[i]
	r := rs.rule
	data, err := w.o.Source.Collect(ctx, r.Target, r.Teams, window, rs.prev)
	if err == nil && data.Err != "" {
		err = errors.New(data.Err)
	}
	now := w.o.Now()
	found := map[string]incident.Signal{}
	unreachable := Key(r.Target, "unreachable", "", r.Teams...)
	if err != nil {
		found[unreachable] = w.unreachable(r, err)
	} else {
		d := data
		rs.prev = &d
		w.evaluate(rs, d, now, found)
	}
	var errs []error
	// Conditions seen on this poll.
	for key, s := range found {
		c := rs.conds[key]
		if c == nil {
			c = &cond{}
			rs.conds[key] = c
		}
		c.Clear, c.Last = 0, s
		c.Hold++
		if !c.Active && c.Hold >= Polls {
			c.Active = true
			s.Firing = true
			s.Observations = c.Hold // it held on that many polls in a row
			if _, err := w.o.Sink.Signal(ctx, s); err != nil {
				errs = append(errs, err)
				c.Active = false
			}
		}
	}
	// Conditions not seen. While the target cannot be read, only its
	// unreachable incident is known: the others keep their state.
	for key, c := range rs.conds {
		if _, ok := found[key]; ok || (err != nil && key != unreachable) {
			continue
		}
		c.Hold = 0
		c.Clear++
		if c.Active && c.Clear >= Polls {
			s := c.Last
			s.Firing = false
			s.Evidence = nil
			if name, ok := strings.CutPrefix(key, Key(r.Target, "worker_stalled", "", r.Teams...)+":"); ok && rs.prev != nil {
				s.Why = stalledCleared(name, rs.prev.Workers)
			}
			if _, err := w.o.Sink.Signal(ctx, s); err != nil {
				errs = append(errs, err)
				continue
			}
			c.Active = false
		}
		if !c.Active {
			delete(rs.conds, key)
		}
	}
	if w.o.State != nil {
		b, merr := json.Marshal(savedRule{StalledSince: rs.stalledSince, Running: rs.running, Conds: rs.conds})
		if merr == nil {
			merr = w.o.State.PutKV(ctx, stateKey(r, i), b)
		}
		if merr != nil {
			errs = append(errs, fmt.Errorf("saving the watch state of %s: %w", r.Target, merr))
		}
	}
	if err != nil {
		// a poll that could not read its target is an error, not "ok"
		errs = append(errs, fmt.Errorf("%w %s: %w", ErrUnreadable, r.Target, err))
	}
	return errors.Join(errs...)
}

// stalledCleared says why a stalled worker's incident resolves: the worker
// is listed in another state, or no longer at all — removed by Concourse
// itself (--stalled-worker-timeout, an ephemeral worker) or by someone.
func stalledCleared(name string, w digest.WorkerFigures) string {
	for _, n := range w.Names {
		if n == name {
			return fmt.Sprintf("`%s` is no longer stalled.", name)
		}
	}
	return fmt.Sprintf("`%s` is no longer registered: Concourse removed it by itself (stalled-worker-timeout, or it was ephemeral) or someone pruned it.", name)
}

var loginRe = regexp.MustCompile(`(?i)\b401\b|unauthori[sz]ed|login|password|forbidden|\b403\b`)

func (w *Watcher) unreachable(r Rule, err error) incident.Signal {
	s := incident.Signal{Key: Key(r.Target, "unreachable", "", r.Teams...), Source: incident.Source{Kind: incident.SourceWatch, Name: "unreachable", Ref: r.Target},
		Target: r.Target, Channel: r.Channel}
	// The line names the target once (the client's errors start with it).
	msg := strings.TrimPrefix(oneLine(err.Error()), r.Target+": ")
	if loginRe.MatchString(msg) {
		s.Title, s.Source.Name = "Login to Concourse fails", "login"
		line := fmt.Sprintf("`%s`: %s", r.Target, msg)
		if !strings.Contains(msg, "password_file") { // the client's login error already says what to check
			line += fmt.Sprintf(" — check `targets.%s.username` and `password_file`", r.Target)
		}
		s.Evidence = []string{line}
		return s
	}
	s.Title = "Concourse does not answer"
	s.Evidence = []string{fmt.Sprintf("`%s`: %s", r.Target, msg)}
	s.Runbook = "web-restart"
	return s
}

func (w *Watcher) evaluate(rs *ruleState, d digest.Data, now time.Time, found map[string]incident.Signal) {
	r := rs.rule
	sig := func(cond, object, title string) incident.Signal {
		return incident.Signal{Key: Key(r.Target, cond, object, r.Teams...), Source: incident.Source{Kind: incident.SourceWatch, Name: cond, Ref: object},
			Target: r.Target, Channel: r.Channel, Title: title}
	}
	// Stalled workers, by name.
	stalled := map[string]bool{}
	for _, sw := range d.Workers.Stalled {
		if len(r.Teams) > 0 && sw.Team == "" {
			// A rule of some teams alerts on what their channel may act
			// on: a global worker is no team's (the digest shows it).
			continue
		}
		stalled[sw.Name] = true
		since, ok := rs.stalledSince[sw.Name]
		if !ok {
			since = now
			if !sw.Since.IsZero() && sw.Since.Before(now) {
				since = sw.Since
			}
			rs.stalledSince[sw.Name] = since
		}
		if r.WorkerStalledFor <= 0 || now.Sub(since) < r.WorkerStalledFor {
			continue
		}
		s := sig("worker_stalled", sw.Name, "Worker stalled")
		s.Since = since
		s.Evidence = []string{fmt.Sprintf("`%s` stalled for ≥ %s, %d containers", sw.Name, roundMin(r.WorkerStalledFor), sw.Containers)}
		if sw.AutoRemove != "" {
			// the target's stalled_worker_timeout: a prune may not be needed
			s.Evidence = append(s.Evidence, sw.AutoRemove)
		}
		// the digest's fix: one situation, one first suggestion
		fix := digest.StalledWorkerFix(sw.Name, sw.Ref)
		s.Runbook, s.Params = fix.Runbook, fix.ParamMap()
		if alt := fix.AltCommand(r.Target); alt != "" {
			s.Evidence = append(s.Evidence, fmt.Sprintf("or `%s` (%s)", alt, fix.AltWhy))
		}
		found[s.Key] = s
	}
	// A worker seen running for one poll keeps its age (hysteresis).
	for name := range rs.stalledSince {
		if stalled[name] {
			delete(rs.running, name)
			continue
		}
		if rs.running[name]++; rs.running[name] >= Polls {
			delete(rs.stalledSince, name)
			delete(rs.running, name)
		}
	}
	// The build queue.
	pending := d.Builds.Count("pending")
	var queue []string
	if r.PendingBuilds > 0 && pending > r.PendingBuilds {
		queue = append(queue, fmt.Sprintf("%d pending builds (more than %d)", pending, r.PendingBuilds))
	}
	if r.OldestPending > 0 && pending > 0 && !d.Builds.PendingSince.IsZero() && now.Sub(d.Builds.PendingSince) >= r.OldestPending {
		queue = append(queue, fmt.Sprintf("oldest pending build queued ≥ %s ago (limit %s)", roundMin(r.OldestPending), roundMin(r.OldestPending)))
	}
	if len(queue) > 0 {
		s := sig("pending_builds", "", "Workers saturated")
		s.Evidence = queue
		team, pipeline := "", ""
		if top := d.Builds.PendingByPipeline; len(top) > 0 && 2*top[0].Count >= pending {
			team, pipeline = top[0].Team, top[0].Pipeline
			s.Evidence = append(s.Evidence, fmt.Sprintf("%d of them in `%s`", top[0].Count, top[0].Ref()))
		}
		// the digest's fix: abort-pending for one pipeline, else the guided runbook
		fix := digest.PendingFix("24h", team, pipeline)
		s.Runbook, s.Params = fix.Runbook, fix.ParamMap()
		if alt := fix.AltCommand(r.Target); alt != "" {
			s.Evidence = append(s.Evidence, fmt.Sprintf("or `%s` (%s)", alt, fix.AltWhy))
		}
		found[s.Key] = s
	}
	// The database.
	if db := d.DB; r.BuildLogsBytes > 0 && db != nil && db.Err == "" && db.BuildLogBytes > int64(r.BuildLogsBytes) {
		s := sig("build_logs", "database", "Build logs fill the database")
		s.Evidence = []string{fmt.Sprintf("build-log tables take %s (limit %s)", ByteSize(db.BuildLogBytes), r.BuildLogsBytes)}
		s.Runbook = "postgres-build-logs-full"
		if len(db.Tables) > 0 {
			t := db.Tables[0]
			s.Evidence = append(s.Evidence, fmt.Sprintf("largest: `%s` %s", t.Label, ByteSize(t.Bytes)))
			if t.Pipeline != "" {
				s.Params = map[string]string{"team": t.Team, "pipeline": t.Pipeline}
			}
		}
		found[s.Key] = s
	}
}

func roundMin(d time.Duration) string {
	if d < time.Minute {
		return d.String()
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.Round(time.Minute).String(), "0s"), "0m")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:299] + "…"
	}
	return s
}

// Keys lists the active keys of rule i (tests, status).
func (w *Watcher) Keys(i int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for k, c := range w.rules[i].conds {
		if c.Active {
			out = append(out, k)
		}
	}
	human.Sort(out)
	return out
}

// Rules returns the rules the watcher polls, defaults applied.
func (w *Watcher) Rules() []Rule {
	out := make([]Rule, 0, len(w.rules))
	for _, rs := range w.rules {
		out = append(out, rs.rule)
	}
	return out
}
