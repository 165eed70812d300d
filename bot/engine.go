// Package bot is groundcrew's engine: it parses chat commands, runs
// runbooks step by step as a durable state machine, forces approval gates on
// destructive operations, and renders platform-neutral messages.
//
// It talks to chat, Concourse, PostgreSQL and the store only through the
// small interfaces it owns (Chat, Op providers, Store).
package bot

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/internal/retry"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// Library finds runbooks by name.
type Library interface {
	Get(name string) (*runbookmodel.Runbook, bool)
	List() []*runbookmodel.Runbook
	// Broken names the file that keeps a runbook unavailable (an override
	// that does not load: the built-in of that name is not used either).
	Broken(name string) (runbooks.Broken, bool)
	BrokenList() []runbooks.Broken
}

// AuthorityConcourse is TargetInfo.Authority when Concourse's own roles
// decide too.
const AuthorityConcourse = "concourse"

// TargetInfo is what the engine knows of a Concourse target.
type TargetInfo struct {
	// Vars are template variables for manual steps (zone, target kind…).
	Vars map[string]string
	// FlyTarget is the target's name in fly's config, which runbooks put
	// in the fly commands they show (`fly -t …`); "" means the target's
	// name.
	FlyTarget string
	// Team is the target's configured Concourse team (default "main"):
	// the team of a pipeline named without one.
	Team string
	// Authority is "concourse" when a person's own Concourse role on the
	// team decides too (Options.Roles says it); "" for chat groups only.
	Authority string
	// Description is shown in /runbook help.
	Description string
}

// Options configure an Engine.
type Options struct {
	Store runmodel.Store
	Chat  chatmodel.Chat
	// Delivery is the outbox every subsystem posts through (default: one
	// of its own on Chat and Store). The engine's Tick flushes it.
	Delivery  *delivery.Outbox
	Ops       *opmodel.Registry
	Library   Library
	Targets   map[string]TargetInfo
	Approvals policy.Config
	// Platform names the chat platform ("slack", "mattermost", "console").
	Platform string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger (default: discard).
	Logger *slog.Logger
	// TickInterval is how often timers are checked (default 1s).
	TickInterval time.Duration
	// OpTimeout bounds one operation call (default 10m).
	OpTimeout time.Duration
	// GroupTTL is how long group memberships and the user ids of names in
	// policies are cached (default 5m).
	GroupTTL time.Duration
	// BotName is shown in help texts (default "groundcrew").
	BotName string
	// Capabilities are the optional parts of Store and Chat the engine
	// uses (housekeeping, reaction hints, re-reading reactions, …), named
	// by the wiring: bot.CapabilitiesOf(store, chat) before anything wraps
	// them. The engine never type-asserts Store or Chat.
	Capabilities Capabilities
	// Digests posts health digests on demand (/runbook digest); optional.
	// teams, when not nil, are the only teams the digest may cover (the
	// command's channel is bound to them).
	Digests interface {
		DigestNow(ctx context.Context, target string, teams []string, to chatmodel.Conversation) error
	}
	// Threads adds what other subsystems know of a thread (an incident's
	// heading and timeline) to its summary; optional.
	Threads chatmodel.ThreadNoter
	// Commands are the "/runbook" commands subsystems answer (the
	// incidents'); the engine parses every command and hands them theirs.
	// Optional.
	Commands chatmodel.Commander
	// HousekeepEvery is how often Capabilities.Housekeeper forgets old
	// dedupe entries and finished runs past the retention (default 1h; the
	// first pass runs on the first Tick).
	HousekeepEvery time.Duration
	// RunLink, when set, gives the address of a run's web page (package
	// web, signed when it is configured so; "" for none): the run's root
	// message and its summaries on demand carry it as a link.
	RunLink func(id string, started time.Time) string
	// Roles says the Concourse role of a chat user on a team, for the
	// targets whose Authority is "concourse" (nil: none is; a target
	// asking for it refuses every change, saying why).
	Roles policy.Roles
	// Observer is told of every committed run change (metrics); default: none.
	Observer runmodel.Observer
	// Hook, when set, is called at step boundaries with a label such as
	// "before-apply:prune"; tests use it to simulate crashes.
	Hook func(point string)
	// Lease, when set, fences the calls that change the outside world: a
	// write or destructive call is made only while this process surely
	// holds the leader lease, in a context that ends when it would lapse
	// (fence.go). Set by serve with a PostgreSQL store; nil alone on bbolt.
	Lease opmodel.Lease
}

func (o *Options) validate() error {
	if o.Store == nil {
		return errors.New("engine: Store is required")
	}
	if o.Chat == nil {
		return errors.New("engine: Chat is required")
	}
	if o.Ops == nil {
		return errors.New("engine: Ops registry is required")
	}
	if o.Library == nil {
		return errors.New("engine: Library is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.TickInterval <= 0 {
		o.TickInterval = time.Second
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 10 * time.Minute
	}
	if o.GroupTTL <= 0 {
		o.GroupTTL = 5 * time.Minute
	}
	if o.HousekeepEvery <= 0 {
		o.HousekeepEvery = time.Hour
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.BotName == "" {
		o.BotName = "groundcrew"
	}
	return nil
}

type nopObserver struct{}

func (nopObserver) RunCommitted(*runmodel.Run, *runmodel.Batch) {}

// Engine runs runbooks. It implements Handler. All methods are safe for
// concurrent use. It is the coordinator: it handles events (command.go),
// advances runs (exec.go), opens and decides gates (gate.go, vote.go), and
// wires the subsystems below, each a small type with one concern.
type Engine struct {
	opts Options
	log  *slog.Logger

	// The subsystems the engine wires (each in its own file):
	writes       *durableWriter // every store write succeeds, is retried, or fails loudly
	out          *poster        // renders and posts the run's messages
	hints        hints          // how people answer on this platform
	work         *workers       // the goroutines that advance runs; calls in flight
	moves        machine        // the run state machine's moves inside an update
	housekeeping *housekeeping  // the store's housekeeping
	tickFailing  *failing       // Tick's listing of the active runs, logged once per outage
	summaries    *summaries     // /runbook summary: a run's or a whole thread's
	dir          directory      // user ids and group members for the approval policy
	gateEdits    gateEdits      // how often an open gate's message is edited
	fence        fence          // outside calls only while the leader lease surely holds
	set          *settings      // the approval policy, swapped by Reload; runs keep theirs
	auth         *authority     // who may change the things of which Concourse teams
	chans        *channelIDs    // which binding of channels: a channel has
	offers       *offers        // which runbooks a channel is offered
}

var _ chatmodel.Handler = (*Engine)(nil)

// New returns an engine.
func New(o Options) (*Engine, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		opts: o,
		log:  o.Logger,
	}
	e.set = newSettings(o.Approvals)
	d := o.Delivery
	if d == nil {
		d = delivery.New(delivery.Options{Chat: o.Chat, Store: o.Store, Logger: o.Logger, Now: o.Now})
	}
	e.writes = newDurableWriter(o.Store, d, o.Logger, o.Now)
	e.out = newPoster(d, o.Capabilities, o.Store, e.writes, o.Logger, o.Now)
	e.out.runLink = o.RunLink
	e.hints = e.out.hints
	e.work = newWorkers(o.Logger, o.OpTimeout, e.advance)
	e.moves = machine{now: o.Now, bot: o.BotName}
	e.fence = fence{lease: o.Lease, log: o.Logger, poll: 50 * time.Millisecond}
	e.tickFailing = &failing{what: "listing active runs"}
	e.housekeeping = &housekeeping{store: o.Capabilities.Housekeeper, log: o.Logger, every: o.HousekeepEvery}
	e.summaries = &summaries{store: o.Store, reader: o.Capabilities.Threads, notes: o.Threads, out: e.out, log: o.Logger, now: o.Now}
	e.dir = directory{log: o.Logger, ttl: o.GroupTTL, now: o.Now, ids: map[string]idEntry{}, members: map[string]groupEntry{},
		groups: o.Capabilities.Groups, users: o.Capabilities.Identities}
	e.chans = &channelIDs{resolver: o.Capabilities.Channels, log: o.Logger, ids: map[string]string{}}
	e.offers = &offers{ops: o.Ops, log: o.Logger, targets: func() []string { return targetNames(o.Targets) }}
	concourse := map[string]bool{}
	for n, t := range o.Targets {
		concourse[n] = t.Authority == AuthorityConcourse
	}
	e.dir.roles = o.Roles
	e.auth = &authority{set: e.set, dir: &e.dir, writes: e.writes, now: o.Now, concourse: concourse, roles: o.Roles,
		fail: func(ctx context.Context, runID, stepID string, cause error) {
			e.stepFail(ctx, runID, stepID, cause, nil)
		}}
	return e, nil
}

// Run resumes the stored runs, then checks timers (gate expiry, reminders,
// wait polls, the outbox) until ctx ends. It returns nil on cancellation.
func (e *Engine) Run(ctx context.Context) error {
	e.work.setContext(ctx)
	// Warming the name cache asks the platform: a chat server that does
	// not answer must not hold up resuming the runs and the timers.
	e.work.background(func() { e.dir.resolveNames(ctx, e.set.approvals(), e.opts.Library) })
	// A store that is briefly away as the process starts (PostgreSQL
	// restarting under a new leader) delays resuming; it does not end
	// the process.
	if err := retry.Until(ctx, e.log, "loading the active runs", e.Resume); err != nil {
		return nil // ctx ended
	}
	t := time.NewTicker(e.opts.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			e.work.wait()
			return nil
		case <-t.C:
			e.Tick(ctx)
		}
	}
}

// Resume reloads non-terminal runs after a start: reads in flight are
// redone, write/destructive calls found with intent but no outcome are
// reconciled, and runs that can proceed are continued.
func (e *Engine) Resume(ctx context.Context) error {
	runs, err := e.opts.Store.ListRuns(ctx, runmodel.RunQuery{Active: true})
	if err != nil {
		return fmt.Errorf("loading active runs: %w", err)
	}
	watcher := e.opts.Capabilities.Rewatch
	for _, r := range runs {
		if watcher != nil {
			if r.Gate != nil && r.Gate.Decision == runmodel.GatePending && !r.Gate.Message.IsZero() {
				watcher.WatchReactions(r.Gate.Message)
			}
			if st := r.Current(); st != nil && st.Status == runmodel.StepManual && !st.Message.IsZero() {
				watcher.WatchReactions(st.Message)
			}
		}
		if r.State == runmodel.RunRunning || r.State == runmodel.RunWaiting {
			if err := e.recover(ctx, r.ID); err != nil {
				// Retried until it works (the run is not advanced before:
				// reconciling comes first), not left until a restart.
				e.log.Error("resuming run; retrying", "run", r.ID, "err", err)
				id := r.ID
				e.work.background(func() {
					if retry.Until(ctx, e.log, "resuming run "+id, func(ctx context.Context) error { return e.recover(ctx, id) }) == nil {
						e.work.kick(id)
					}
				})
				continue
			}
		}
		e.work.kick(r.ID)
	}
	return nil
}

// Tick checks every active run's timers once. Run calls it every
// TickInterval; tests call it with a fake clock.
func (e *Engine) Tick(ctx context.Context) {
	runs, err := e.opts.Store.ListRuns(ctx, runmodel.RunQuery{Active: true})
	now := e.opts.Now()
	if err != nil {
		if ctx.Err() == nil { // not the engine stopping (a replica stepping down)
			e.tickFailing.fail(e.log, now, err)
		}
		return
	}
	e.tickFailing.ok(e.log, now)
	for _, r := range runs {
		switch r.State {
		case runmodel.RunAwaitingApproval:
			e.checkGateTimers(ctx, r, now)
		case runmodel.RunWaiting:
			if st := r.Current(); st != nil && !st.NextPoll.After(now) {
				e.work.kick(r.ID)
			}
		case runmodel.RunAwaitingManual:
			if st := r.Current(); st != nil && !st.Deadline.IsZero() && !now.Before(st.Deadline) {
				e.manualTimeout(ctx, r.ID, st.ID)
			}
		}
	}
	e.out.flush(ctx)
	e.housekeeping.maybe(ctx, now, e.work.background)
}

// WaitIdle blocks until no run is being advanced and no run is in the
// running state (every run is finished or waits for a person or a timer).
func (e *Engine) WaitIdle(ctx context.Context) error {
	for {
		e.work.wait()
		runs, err := e.opts.Store.ListRuns(ctx, runmodel.RunQuery{Active: true})
		if err != nil {
			return err
		}
		running := false
		for _, r := range runs {
			if r.State == runmodel.RunRunning {
				running = true
				e.work.kick(r.ID)
			}
		}
		if !running {
			e.work.wait()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (e *Engine) hook(point string) {
	if e.opts.Hook != nil {
		e.opts.Hook(point)
	}
}

// runIDAlphabet is Crockford's base32 in lower case: no i, l, o, u, so an
// id read aloud or retyped is not mistaken.
const runIDAlphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// RunIDLength is the number of random base32 characters after "r-": 50
// bits, so among 10⁶ runs the chance that any two ids collide is about
// 4·10⁻⁴ (and CreateRun refuses a taken id, so a collision only retries).
const RunIDLength = 10

func newRunID() string {
	b := make([]byte, RunIDLength)
	_, _ = rand.Read(b)
	out := make([]byte, 0, 2+RunIDLength)
	out = append(out, "r-"...)
	for _, c := range b {
		out = append(out, runIDAlphabet[c&31])
	}
	return string(out)
}

// targetNames returns the configured target names, sorted.
func targetNames(targets map[string]TargetInfo) []string {
	out := make([]string, 0, len(targets))
	for t := range targets {
		out = append(out, t)
	}
	human.Sort(out)
	return out
}
