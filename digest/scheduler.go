package digest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Schedule is one configured digest: a target's health posted to a
// channel on a cron schedule.
type Schedule struct {
	Target  string
	Channel string
	// Schedule is a cron spec (minute hour day-of-month month day-of-week,
	// e.g. "0 8 * * 1-5") or a descriptor (@daily, @every 6h).
	Schedule string
	// Timezone is an IANA zone (Europe/Paris); "" means the bot's local zone.
	Timezone string
	// Window is how far back builds are counted (default 24h).
	Window time.Duration
	// CatchUp is how late a digest missed while the bot was down may still
	// be posted (default: one period of the schedule).
	CatchUp time.Duration
	// Teams, when not nil, are the only Concourse teams the digest covers:
	// its channel is bound to them (channels:).
	Teams []string
}

// State is the state of a schedule's latest settled fire time.
type State string

// Digest states, as stored.
const (
	// Armed: the schedule was first seen; fires up to Fire are not owed.
	Armed State = "armed"
	// Posting: the intent to post Fire was recorded and the outcome
	// was not. After a crash this counts as posted (at most once).
	Posting State = "posting"
	Posted  State = "posted"
	// Failed: posting failed; Retry is the fire being retried, or
	// Fire when the attempts ran out.
	Failed State = "failed"
	// Skipped: Fire was missed by more than the catch-up allowance.
	Skipped State = "skipped"
)

// Record is what the history keeps per schedule: the ledger of fire
// times and the data of the last digest that had figures (the base of
// trends and ages).
type Record struct {
	// Fire is the latest settled fire time: fires up to it are never posted again.
	Fire  time.Time `json:"fire"`
	State State     `json:"state"`
	// Retry is a fire time whose post failed and is retried; Attempts counts them.
	Retry     time.Time            `json:"retry,omitzero"`
	Attempts  int                  `json:"attempts,omitempty"`
	LastError string               `json:"last_error,omitempty"`
	Posted    time.Time            `json:"posted,omitzero"`
	Ref       chatmodel.MessageRef `json:"ref,omitzero"`
	// Data is the last digest with figures (nil before the first).
	Data *Data `json:"data,omitempty"`
	// Series are the last ChartPoints digests with figures, oldest first
	// (the chart).
	Series []Point `json:"series,omitempty"`
}

// History stores one record per digest schedule. The store
// implements it.
type History interface {
	// LastDigest returns the record of key, or nil (and no error) when there is none.
	LastDigest(ctx context.Context, key string) (*Record, error)
	// SaveDigest replaces the record of key durably before returning.
	SaveDigest(ctx context.Context, key string, rec Record) error
}

// HistoryKey is the key of a scheduled digest's record in the History.
// A digest of some teams only (teams) has its own: its figures are not
// compared with those of every team.
func HistoryKey(target, channel, schedule, timezone string, teams ...string) string {
	return strings.Join([]string{target, channel, schedule, timezone}, "|") + teamsKey(teams)
}

// NowKey is the key of the record of the digests of target asked for
// with /runbook digest (when no schedule of that target is configured),
// for some teams only (teams) or every team.
func NowKey(target string, teams ...string) string { return "now:" + target + teamsKey(teams) }

func teamsKey(teams []string) string {
	if len(teams) == 0 {
		return ""
	}
	return "|teams=" + strings.Join(teams, ",")
}

// ConfigError is a bad digest schedule, named by its index in the
// configuration.
type ConfigError struct {
	Index int
	Field string
	Err   error
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("digests[%d].%s: %v", e.Index, e.Field, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// Outbox is what the scheduler needs of the outbox (*delivery.Outbox).
type Outbox interface {
	Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message, meta delivery.Meta) (delivery.Handle, error)
	Flush(ctx context.Context)
}

// From names the digests' posts in the outbox.
const From = "digest"

// Options configure NewScheduler.
type Options struct {
	Digests []Schedule
	Source  Source
	History History
	// Outbox is the durable outbox digests are posted through
	// (*delivery.Outbox; its owner flushes it): a digest chat does not take
	// goes out once chat is back, across restarts. Without it, Chat is
	// used through an outbox of the scheduler's own, kept in memory.
	Outbox Outbox
	Chat   chatmodel.Chat
	// Platform is set on the conversations digests are posted to.
	Platform string
	// Targets are the targets /runbook digest accepts (default: those of Digests).
	Targets []string
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// CollectTimeout bounds one collection (default 2m).
	CollectTimeout time.Duration
	// MaxAttempts bounds the posts of one fire time the outbox gave up
	// (the platform said it can never succeed there) (default 3).
	MaxAttempts int
	// Observer is told how each due digest settled (metrics); optional.
	Observer Observer
	// NoCharts posts digests without their chart.
	NoCharts bool
	// MaxSleep is the longest Run sleeps between evaluations, so clock
	// jumps and retries are noticed (default 1m).
	MaxSleep time.Duration
}

// Observer learns how each due fire time settled: Posted (lag is how late
// after the fire time it was posted), Failed (the attempts ran out),
// Skipped (too late to catch up) or Posting (interrupted by a stop: maybe
// not posted). Failed, Skipped and Posting are missed digests.
type Observer interface {
	DigestSettled(target string, state State, lag time.Duration)
}

type nopObserver struct{}

func (nopObserver) DigestSettled(string, State, time.Duration) {}

// Scheduler posts digests on their schedules and on demand. It is safe for
// concurrent use.
//
// Delivery is at most once per fire time: the fire time is recorded as
// "posting" before the post and as "posted" after it, so a crash in between
// never leads to a second post after restart (the digest is then lost and
// a warning logged). A post the chat adapter reports as failed was not
// delivered, and is retried up to MaxAttempts times while it is within the
// catch-up allowance.
type Scheduler struct {
	o   Options
	log *slog.Logger
	// base is Options.Targets; targets adds those of the digests.
	base []string
	// wake tells Run the schedules changed.
	wake chan struct{}

	mu      sync.RWMutex // guards jobs and targets (SetDigests)
	jobs    []*digestJob
	targets []string
	tickMu  sync.Mutex
	// ownOutbox: the outbox is the scheduler's own (built on Chat); Tick flushes it.
	ownOutbox bool
}

// current returns the jobs and the targets /runbook digest accepts.
func (s *Scheduler) current() ([]*digestJob, []string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.jobs, s.targets
}

func (s *Scheduler) logScheduled(j *digestJob, now time.Time) {
	s.log.Info("digest scheduled", "digest", j.index, "target", j.cfg.Target, "channel", j.cfg.Channel,
		"schedule", j.cfg.Schedule, "next", j.sched.Next(now).In(j.loc).Format(time.RFC3339))
}

type digestJob struct {
	index int
	cfg   Schedule
	sched cron.Schedule
	loc   *time.Location
	key   string
}

var digestParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseSchedule parses a cron spec in a time zone ("" = local). A
// spec may carry its own CRON_TZ= prefix instead, not both.
func ParseSchedule(spec, timezone string) (cron.Schedule, *time.Location, error) {
	loc := time.Local
	if timezone != "" {
		l, err := time.LoadLocation(timezone)
		if err != nil {
			return nil, nil, fmt.Errorf("%q is not a time zone (e.g. Europe/Paris): %w", timezone, err)
		}
		loc = l
	}
	prefixed := strings.HasPrefix(spec, "CRON_TZ=") || strings.HasPrefix(spec, "TZ=")
	if prefixed && timezone != "" {
		return nil, nil, fmt.Errorf("%q has a time zone prefix and timezone is %q too: give it once", spec, timezone)
	}
	s, err := digestParser.Parse(spec)
	if err != nil {
		return nil, nil, fmt.Errorf("%q is not a cron schedule (minute hour day month weekday, e.g. \"0 8 * * 1-5\"): %w", spec, err)
	}
	if ss, ok := s.(*cron.SpecSchedule); ok {
		if prefixed {
			loc = ss.Location
		} else {
			ss.Location = loc
		}
	}
	return s, loc, nil
}

// NewScheduler checks the schedules and returns a scheduler. Errors are
// *ConfigError values (joined), naming the digest's index.
func NewScheduler(o Options) (*Scheduler, error) {
	if o.Source == nil || o.History == nil || o.Chat == nil && o.Outbox == nil {
		return nil, errors.New("digest scheduler: Source, History and Outbox (or Chat) are required")
	}
	own := false
	if o.Outbox == nil {
		o.Outbox, own = delivery.New(delivery.Options{Chat: o.Chat, Logger: o.Logger, Now: o.Now}), true
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.CollectTimeout <= 0 {
		o.CollectTimeout = 2 * time.Minute
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 3
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.MaxSleep <= 0 {
		o.MaxSleep = time.Minute
	}
	s := &Scheduler{o: o, log: o.Logger, wake: make(chan struct{}, 1), base: slices.Clone(o.Targets), ownOutbox: own}
	jobs, known, err := s.build(o.Digests)
	if err != nil {
		return nil, err
	}
	s.jobs, s.targets = jobs, known
	return s, nil
}

// build checks the schedules ds and returns their jobs and the targets
// /runbook digest accepts.
func (s *Scheduler) build(ds []Schedule) ([]*digestJob, []string, error) {
	base := s.base
	known := slices.Clone(base)
	var jobs []*digestJob
	var errs []error
	for i, d := range ds {
		bad := func(field string, err error) {
			errs = append(errs, &ConfigError{Index: i, Field: field, Err: err})
		}
		if d.Target == "" {
			bad("target", errors.New("is required"))
		} else if len(base) > 0 && !slices.Contains(base, d.Target) {
			bad("target", fmt.Errorf("no target %q is configured (targets: %s)", d.Target, strings.Join(base, ", ")))
		}
		if d.Channel == "" {
			bad("channel", errors.New(`is required (e.g. "#ci-ops")`))
		}
		if d.Window < 0 || d.CatchUp < 0 {
			bad("window", errors.New("window and catch_up must be positive"))
		}
		if d.Timezone != "" {
			if _, err := time.LoadLocation(d.Timezone); err != nil {
				bad("timezone", fmt.Errorf("%q is not a time zone (e.g. Europe/Paris): %w", d.Timezone, err))
				continue
			}
		}
		sched, loc, err := ParseSchedule(d.Schedule, d.Timezone)
		if err != nil {
			bad("schedule", err)
			continue
		}
		if d.Window == 0 {
			d.Window = 24 * time.Hour
		}
		jobs = append(jobs, &digestJob{index: i, cfg: d, sched: sched, loc: loc,
			key: HistoryKey(d.Target, d.Channel, d.Schedule, d.Timezone, d.Teams...)})
		if !slices.Contains(known, d.Target) {
			known = append(known, d.Target)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	sort.Strings(known)
	return jobs, known, nil
}

// SetDigests replaces the schedules (a configuration reload): they are
// checked as NewScheduler checks them, and nothing changes on an error.
// A schedule kept as it was keeps its history (what was posted, what is
// owed); a new one owes nothing from before it was set. Run picks the
// new schedules up at once. The targets /runbook digest accepts stay
// those given in Options.Targets.
func (s *Scheduler) SetDigests(ds []Schedule) error {
	jobs, known, err := s.build(ds)
	if err != nil {
		return err
	}
	s.tickMu.Lock() // not while a tick evaluates the old ones
	s.mu.Lock()
	s.jobs, s.targets = jobs, known
	s.mu.Unlock()
	s.tickMu.Unlock()
	now := s.o.Now()
	for _, j := range jobs {
		s.logScheduled(j, now)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

// FireTimes returns the fire times t of s with after < t <= now, oldest
// first. When there are more than max (>= 1), only the newest max are
// returned and older counts the rest.
func FireTimes(s cron.Schedule, after, now time.Time, max int) (fires []time.Time, older int) {
	max = clamp(max, 1, 1<<20)
	for t, n := s.Next(after), 0; !t.IsZero() && !t.After(now) && n < 1_000_000; t, n = s.Next(t), n+1 {
		if len(fires) == max {
			fires = fires[1:]
			older++
		}
		fires = append(fires, t)
	}
	return fires, older
}

func clamp(n, lo, hi int) int { return min(max(n, lo), hi) }

// Decision says what to do about a schedule at a given time.
type Decision struct {
	// Fire is the latest fire time not yet settled (zero: nothing is due).
	Fire time.Time
	// Late is how long after Fire the decision is taken.
	Late time.Duration
	// Allowed is the catch-up allowance Late was compared with.
	Allowed time.Duration
	// Post is true when the digest of Fire is to be posted now; false with
	// a non-zero Fire means it is too late and is skipped.
	Post bool
	// Skipped counts older missed fire times, never posted.
	Skipped int
}

// Decide decides, from the last settled fire time, whether a digest is
// due at now. Only the latest missed fire time is ever posted, and only if
// it is less than catchUp late (0: one period of the schedule, i.e. until
// the next fire time).
func Decide(s cron.Schedule, last, now time.Time, catchUp time.Duration) Decision {
	fires, older := FireTimes(s, last, now, 1)
	if len(fires) == 0 {
		return Decision{}
	}
	f := fires[0]
	allow := catchUp
	if allow <= 0 {
		allow = s.Next(f).Sub(f)
	}
	late := now.Sub(f)
	return Decision{Fire: f, Late: late, Allowed: allow, Post: late < allow, Skipped: older}
}

// Run evaluates the schedules at start (catching up) and whenever one is
// due, until ctx ends; it returns nil then.
func (s *Scheduler) Run(ctx context.Context) error {
	now := s.o.Now()
	jobs, _ := s.current()
	for _, j := range jobs {
		s.logScheduled(j, now)
	}
	for {
		s.Tick(ctx)
		t := time.NewTimer(s.untilNext(s.o.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// untilNext is how long to sleep before the next evaluation.
func (s *Scheduler) untilNext(now time.Time) time.Duration {
	d := s.o.MaxSleep
	jobs, _ := s.current()
	for _, j := range jobs {
		if n := j.sched.Next(now); !n.IsZero() {
			d = min(d, n.Sub(now)+10*time.Millisecond)
		}
	}
	return max(d, 10*time.Millisecond)
}

// Tick evaluates every schedule once at Now() and posts what is due, then
// returns. Run calls it; tests call it with a fake clock.
func (s *Scheduler) Tick(ctx context.Context) {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	if s.ownOutbox {
		s.o.Outbox.Flush(ctx)
	}
	now := s.o.Now()
	jobs, _ := s.current()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					s.log.Error("panic in digest", "digest", j.index, "target", j.cfg.Target, "panic", p)
				}
			}()
			s.evaluate(ctx, j, now)
		}()
	}
	wg.Wait()
}

func (s *Scheduler) evaluate(ctx context.Context, j *digestJob, now time.Time) {
	log := s.log.With("digest", j.index, "target", j.cfg.Target, "channel", j.cfg.Channel)
	rec, err := s.o.History.LastDigest(ctx, j.key)
	if err != nil {
		log.Error("reading digest history", "err", err)
		return
	}
	if rec == nil {
		// A new schedule owes nothing from before it was first seen.
		if err := s.o.History.SaveDigest(ctx, j.key, Record{Fire: now, State: Armed}); err != nil {
			log.Error("recording digest schedule", "err", err)
		}
		return
	}
	if rec.State == Posting && rec.Posted.IsZero() && rec.LastError == "" && !rec.Fire.IsZero() {
		log.Warn("a digest may not have been posted: the bot stopped while posting it; not posting it twice",
			"fire", rec.Fire.In(j.loc).Format(time.RFC3339))
		rec.LastError = "interrupted while posting"
		s.o.Observer.DigestSettled(j.cfg.Target, Posting, 0)
		_ = s.o.History.SaveDigest(ctx, j.key, *rec)
	}
	d := Decide(j.sched, rec.Fire, now, j.cfg.CatchUp)
	if d.Fire.IsZero() {
		return
	}
	if d.Skipped > 0 {
		log.Info("missed digests not posted (only the latest is caught up)", "count", d.Skipped)
	}
	if !d.Post {
		log.Warn("missed digest not posted: too late", "fire", d.Fire.In(j.loc).Format(time.RFC3339), "late", d.Late, "catch_up", d.Allowed)
		next := *rec
		next.Fire, next.State, next.Retry, next.Attempts = d.Fire, Skipped, time.Time{}, 0
		s.o.Observer.DigestSettled(j.cfg.Target, Skipped, d.Late)
		if err := s.o.History.SaveDigest(ctx, j.key, next); err != nil {
			log.Error("recording skipped digest", "err", err)
		}
		return
	}
	if d.Late > time.Minute {
		log.Info("catching up a missed digest", "fire", d.Fire.In(j.loc).Format(time.RFC3339), "late", d.Late)
	}
	s.post(ctx, log, j, *rec, d.Fire, now)
}

// post collects, renders and posts the digest of fire, recording the
// intent first and the outcome after.
func (s *Scheduler) post(ctx context.Context, log *slog.Logger, j *digestJob, rec Record, fire, now time.Time) {
	data := s.collect(ctx, j.cfg.Target, j.cfg.Teams, j.cfg.Window, rec.Data, now)
	if ctx.Err() != nil {
		return
	}
	msg := Render(j.cfg.Target, data, rec.Data, now.In(j.loc))
	series := rec.Series
	if data.Err == "" {
		series = appendPoint(series, PointOf(data))
		s.attachChart(log, &msg, j.cfg.Target, series, now)
	}
	intent := rec
	intent.Fire, intent.State, intent.Posted, intent.LastError = fire, Posting, time.Time{}, ""
	if err := s.o.History.SaveDigest(ctx, j.key, intent); err != nil {
		log.Error("recording digest intent; not posting", "err", err)
		return
	}
	h, err := s.o.Outbox.Post(ctx, chatmodel.Conversation{Platform: s.o.Platform, Channel: j.cfg.Channel}, msg, delivery.Meta{From: From, Key: j.key})
	ref := h.Ref // zero when chat did not take it: the outbox posts it once it does
	if err != nil {
		if ctx.Err() != nil {
			return // stopping mid-post: the intent stands (at most once)
		}
		out := rec
		out.State, out.LastError = Failed, chatmodel.UserMessage(err)
		if !out.Retry.Equal(fire) {
			out.Retry, out.Attempts = fire, 0
		}
		out.Attempts++
		if out.Attempts >= s.o.MaxAttempts {
			out.Fire = fire
			log.Error("posting digest failed; giving up", "attempts", out.Attempts, "err", err)
			s.o.Observer.DigestSettled(j.cfg.Target, Failed, now.Sub(fire))
		} else {
			log.Warn("posting digest failed; will retry", "attempts", out.Attempts, "err", err)
		}
		if err := s.o.History.SaveDigest(ctx, j.key, out); err != nil {
			log.Error("recording digest failure", "err", err)
		}
		return
	}
	done := intent
	done.State, done.Posted, done.Ref, done.Retry, done.Attempts = Posted, now, ref, time.Time{}, 0
	s.o.Observer.DigestSettled(j.cfg.Target, Posted, s.o.Now().Sub(fire))
	if data.Err == "" {
		done.Data, done.Series = &data, series
	}
	if err := s.o.History.SaveDigest(ctx, j.key, done); err != nil {
		log.Error("recording posted digest", "err", err)
	}
}

// attachChart adds the chart of series to msg; a chart that cannot be
// drawn is logged and left out (the text is the digest).
func (s *Scheduler) attachChart(log *slog.Logger, msg *chatmodel.Message, target string, series []Point, now time.Time) {
	if s.o.NoCharts {
		return
	}
	f, err := chartFile(target, series, now)
	if err != nil {
		log.Warn("digest chart not drawn; posting the text alone", "err", err)
		return
	}
	msg.Files = append(msg.Files, *f)
}

// collect reads the target (the things of teams only, when not nil); an
// error becomes a digest that says so.
func (s *Scheduler) collect(ctx context.Context, target string, teams []string, window time.Duration, prev *Data, now time.Time) Data {
	cctx, cancel := context.WithTimeout(ctx, s.o.CollectTimeout)
	defer cancel()
	data, err := s.o.Source.Collect(cctx, target, teams, window, prev)
	if err != nil {
		data = Data{Err: chatmodel.UserMessage(err), LoginRefused: loginRefused(err)}
	}
	data.Target, data.Teams, data.Window = target, slices.Clone(teams), window
	if data.At.IsZero() {
		data.At = now
	}
	carryHistory(&data, prev)
	return data
}

// DigestNow collects target's digest at once and posts it to `to` (the
// conversation of a `/runbook digest` command), of the things of teams
// only when not nil (the command's channel is bound to them). Trends
// compare with the last scheduled digest of the target of the same teams
// (of the same channel when there is one), else with the last on-demand
// digest of the target and teams, which is kept for that (key
// "now:<target>"). target may be empty when only one target is known.
// Unknown targets give a *UserError.
func (s *Scheduler) DigestNow(ctx context.Context, target string, teams []string, to chatmodel.Conversation) error {
	jobs, targets := s.current()
	if target == "" {
		if len(targets) != 1 {
			return userErrorf("Usage: `/runbook digest <target>` (targets: %s)", strings.Join(targets, ", "))
		}
		target = targets[0]
	}
	if len(targets) > 0 && !slices.Contains(targets, target) {
		return userErrorf("Unknown target %q. Targets: %s", target, strings.Join(targets, ", "))
	}
	window, loc := 24*time.Hour, time.Local
	var prev *Data
	var series []Point
	var best *digestJob
	for _, j := range jobs {
		if j.cfg.Target == target && slices.Equal(j.cfg.Teams, teams) && (best == nil || j.cfg.Channel == to.Channel && best.cfg.Channel != to.Channel) {
			best = j
		}
	}
	if best != nil {
		window, loc = best.cfg.Window, best.loc
		rec, err := s.o.History.LastDigest(ctx, best.key)
		if err != nil {
			return fmt.Errorf("reading digest history of %s: %w", target, err)
		}
		if rec != nil {
			prev, series = rec.Data, rec.Series
		}
	}
	nowKey := NowKey(target, teams...)
	if prev == nil {
		// no scheduled digest to compare with: compare with the last
		// on-demand one, so that only the first says "First digest"
		rec, err := s.o.History.LastDigest(ctx, nowKey)
		if err != nil {
			return fmt.Errorf("reading digest history of %s: %w", target, err)
		}
		if rec != nil {
			prev, series = rec.Data, rec.Series
		}
	}
	now := s.o.Now()
	data := s.collect(ctx, target, teams, window, prev, now)
	msg := Render(target, data, prev, now.In(loc))
	if data.Err == "" {
		s.attachChart(s.log.With("target", target), &msg, target, appendPoint(series, PointOf(data)), now)
	}
	if _, err := s.o.Outbox.Post(ctx, to, msg, delivery.Meta{From: From, Key: nowKey}); err != nil {
		return fmt.Errorf("posting the digest of %s: %w", target, err)
	}
	if best == nil && data.Err == "" {
		if err := s.o.History.SaveDigest(ctx, nowKey, Record{Posted: now, Data: &data, Series: appendPoint(series, PointOf(data))}); err != nil {
			return fmt.Errorf("recording the digest of %s for the next one's trends: %w", target, err)
		}
	}
	return nil
}
