package incident

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// ReopenWindow is how soon after being resolved a firing key reopens its
// incident (same thread) instead of opening a new one.
const ReopenWindow = time.Hour

// maxTimeline bounds the stored timeline; the oldest entries after the
// first go first.
const maxTimeline = 200

// BotUser is who autostarted (read-only) runs are started by.
var BotUser = chatmodel.User{ID: "groundcrew", Name: "groundcrew"}

// Options configure a Manager.
type Options struct {
	Store Store
	// Chat answers people (ephemeral replies) and re-reads reactions.
	Chat chatmodel.Chat
	// Outbox posts and edits every incident message (default: an outbox
	// of its own over Chat, in memory: nothing survives a restart).
	Outbox  Outbox
	Starter runmodel.RunStarter // optional: no run buttons without it
	Runs    Runs                // optional: linked runs in listings
	Audit   Auditor             // optional
	// Silencer, when set, adds a "silence 1 h" button to alert incidents.
	Silencer Silencer
	// KeepSilences keeps the silence of an incident that resolved
	// (alerts.silences.keep_after_resolve): its root says it is still in
	// force and offers to expire it. By default it is expired with the
	// incident, so the alerts notify again if they fire again.
	KeepSilences bool
	// Dedupe, when set, drops redelivered button presses (a second silence).
	Dedupe runmodel.Dedupe
	// Observer, when set, counts the incidents opened (metrics).
	Observer Observer
	// Runbooks, when set, checks a suggested run's parameters as the
	// engine will: a value it would refuse (10 KB, a bidi control) is not
	// offered as a Run button.
	Runbooks interface {
		Get(name string) (*runbookmodel.Runbook, bool)
	}
	Platform string
	// Targets, when set, are the configured target names: a listing
	// filtered by a target that is not one of them says so.
	Targets []string
	// Channel, when set, is where every incident is posted whatever its
	// route says (the console has one channel).
	Channel string
	// Link, when set, gives the address of an incident's web page (package
	// web; "" for none): the incident's root message carries it.
	Link   func(id string, opened time.Time) string
	Now    func() time.Time
	Logger *slog.Logger
}

// Manager opens, updates, acknowledges and resolves incidents. It is safe
// for concurrent use.
type Manager struct {
	o   Options
	log *slog.Logger

	mu    sync.Mutex
	locks map[string]*keyLock
	// work is the background work in flight (Wait).
	work sync.WaitGroup
}

type keyLock struct {
	mu   sync.Mutex
	refs int
}

// New returns a manager.
func New(o Options) (*Manager, error) {
	if o.Store == nil || o.Chat == nil {
		return nil, errors.New("incident manager: Store and Chat are required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Outbox == nil {
		o.Outbox = delivery.New(delivery.Options{Chat: o.Chat, Logger: o.Logger, Now: o.Now})
	}
	m := &Manager{o: o, log: o.Logger, locks: map[string]*keyLock{}}
	o.Outbox.Register(deliveryFrom, delivery.Receiver{Delivered: m.delivered})
	return m, nil
}

// deliveryFrom names the incident's messages in the outbox; a root's key
// is rootKey + the incident id.
const (
	deliveryFrom = "incident"
	rootKey      = "root:"
)

// delivered records the reference of a root the outbox posted (queued
// when the incident opened), and starts the route's read-only steps in its
// thread.
func (m *Manager) delivered(ctx context.Context, it runmodel.OutboxItem, ref chatmodel.MessageRef) {
	id, ok := strings.CutPrefix(it.Key, rootKey)
	if !ok {
		return
	}
	in, err := m.o.Store.UpdateIncident(ctx, id, func(x *Incident) error {
		if x.Root.IsZero() {
			x.Root, x.RootPending = ref, ""
		}
		return nil
	})
	if err != nil {
		m.log.Error("recording the incident's message; its buttons and 👀 will not find it", "incident", id, "err", err)
		return
	}
	m.log.Info("incident posted", "incident", id, "title", in.Title, "channel", in.Channel, "queued_for", m.o.Now().Sub(in.OpenedAt).Round(time.Millisecond))
	if w, ok := m.o.Chat.(chatmodel.ReactionWatcher); ok && in.State == StateOpen {
		w.WatchReactions(ref)
	}
	m.maybeAutostart(in)
}

// lock serializes the handling of one key (store update, then chat posts).
func (m *Manager) lock(key string) func() {
	m.mu.Lock()
	l := m.locks[key]
	if l == nil {
		l = &keyLock{}
		m.locks[key] = l
	}
	l.refs++
	m.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		m.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(m.locks, key)
		}
		m.mu.Unlock()
	}
}

func newID() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "i-" + hex.EncodeToString(b)
}

// change is what a signal did to an incident.
type change int

const (
	changeNone     change = iota // nothing new (a repeat notification)
	changeOpened                 // a new incident
	changeReopened               // firing again soon after it resolved
	changeUpdated                // the evidence changed
	changeResolved               // the condition is over
)

// Signal applies a signal: a firing signal opens the key's incident or
// updates it (never a second one); a resolved signal resolves it. The
// incident is stored before anything is posted; an error means the signal
// was not recorded (the caller should answer so that it is retried).
func (m *Manager) Signal(ctx context.Context, s Signal) (*Incident, error) {
	if s.Key == "" {
		return nil, errors.New("signal without a key")
	}
	if m.o.Channel != "" {
		s.Channel = m.o.Channel
	}
	s = m.checkParams(s)
	unlock := m.lock(s.Key)
	defer unlock()
	now := m.o.Now()
	keys := s.EvidenceKeys[:min(len(s.EvidenceKeys), len(s.Evidence))]
	var what change
	var diff evidenceDiff
	var expire string // the silence to expire now the incident resolved
	var retried bool  // a retry of the last delivery: nothing to say
	in, err := m.o.Store.UpsertIncident(ctx, s.Key, func(cur *Incident) (*Incident, error) {
		what, diff, expire, retried = changeNone, evidenceDiff{}, "", false
		// The same delivery again, when the source gave up waiting for
		// our answer to it, is its retry: counted once, it changes
		// nothing. (The same content otherwise is a repeat: counted.)
		retry := s.Delivery != "" && cur != nil && cur.LastDelivery == s.Delivery && cur.LastUnanswered
		if s.Delivery != "" && cur != nil {
			cur.LastDelivery, cur.LastUnanswered = s.Delivery, false
		}
		switch {
		case !s.Firing && (cur == nil || cur.State == StateResolved):
			return nil, nil // resolved and nothing open: nothing to do
		case !s.Firing:
			what = changeResolved
			cur.State, cur.ResolvedAt, cur.UpdatedAt = StateResolved, now, now
			cur.Alerts = 0
			cur.ResolvedByCheck = s.Checked
			if !s.Checked && !retry {
				cur.Notifications++
			}
			switch {
			case cur.SilenceID == "":
			case m.o.KeepSilences:
				cur.SilenceKept = true
			default:
				expire = cur.SilenceID // ended with the incident, below
			}
			if len(s.Evidence) > 0 {
				cur.Evidence, cur.EvidenceKeys = s.Evidence, keys
			}
			cur.add(Entry{Time: now, Kind: "resolved", Text: "resolved after " + human.Duration(cur.Duration(now))})
			return cur, nil
		case cur == nil || cur.State == StateResolved && now.Sub(cur.ResolvedAt) > ReopenWindow:
			what = changeOpened
			in := &Incident{ID: newID(), Key: s.Key, Source: s.Source, Title: s.Title, Target: s.Target,
				Channel: s.Channel, Platform: m.o.Platform, State: StateOpen, Evidence: s.Evidence, EvidenceKeys: keys, Alerts: s.Alerts,
				Runbook: s.Runbook, Params: s.Params, Autostart: s.Autostart, Silence: s.Silence,
				Notifications: observations(s), Since: s.Since, OpenedAt: now, UpdatedAt: now, Instance: s.Instance}
			in.LastDelivery = s.Delivery
			if cur != nil {
				in.add(Entry{Time: now, Kind: "opened", Text: "previous incident " + cur.ID})
			}
			in.add(Entry{Time: now, Kind: "opened", Text: s.Title + firingSince(s.Since, now), Evidence: s.Evidence})
			return in, nil
		case cur.State == StateResolved:
			what = changeReopened
			// Compared with the alerts that fired last time.
			diff = diffEvidence(s.Evidence, keys, cur.Evidence, cur.EvidenceKeys)
			// Its age counts from the reopening, not the first opening.
			cur.SinceAfter, cur.ReopenedAt = cur.ResolvedAt, now
			cur.State, cur.ResolvedAt, cur.AckedAt, cur.AckedBy = StateOpen, time.Time{}, time.Time{}, nil
			cur.ResolvedByCheck = false
			if !cur.Silenced(now) {
				cur.clearSilence() // a kept silence that ended meanwhile
			}
			cur.SilenceKept, cur.SilenceExpireErr = false, "" // open again: CheckSilences watches it
			cur.Evidence, cur.EvidenceKeys, cur.UpdatedAt = s.Evidence, keys, now
			cur.Notifications += observations(s)
			cur.Since, cur.OpenedAt = time.Time{}, now
			cur.refresh(s)
			cur.add(Entry{Time: now, Kind: "reopened", Text: againSummary(cur, diff), Evidence: s.Evidence})
			return cur, nil
		case retry:
			retried = true
			return cur, nil // the flag cleared; nothing else
		default:
			cur.Notifications++
			cur.refresh(s)
			if !slices.Equal(cur.Evidence, s.Evidence) || !slices.Equal(cur.EvidenceKeys, keys) {
				// Only what a message would say is a change: the same
				// alerts in another order, or shown with other labels,
				// are not.
				if diff = diffEvidence(s.Evidence, keys, cur.Evidence, cur.EvidenceKeys); !diff.empty() {
					what = changeUpdated
					cur.add(Entry{Time: now, Kind: "changed", Text: changeSummary(cur, diff, false), Evidence: s.Evidence})
				}
				cur.Evidence, cur.EvidenceKeys = s.Evidence, keys
			}
			cur.UpdatedAt = now
			return cur, nil
		}
	})
	if err != nil {
		return nil, fmt.Errorf("recording incident %s: %w", s.Key, err)
	}
	if in == nil || what == changeNone && retried {
		return in, nil
	}
	switch what {
	case changeOpened:
		if m.o.Observer != nil {
			m.o.Observer.IncidentOpened(string(in.Source.Kind))
		}
		m.audit(ctx, in, "", runmodel.ActionIncidentOpened, in.Title)
	case changeResolved:
		m.audit(ctx, in, "", runmodel.ActionIncidentResolved, human.Duration(in.Duration(now)))
	case changeReopened:
		m.audit(ctx, in, "", runmodel.ActionIncidentReopened, in.Title)
	}
	in = m.publish(ctx, in, what, diff, s.Why)
	if expire != "" {
		m.expireAtResolve(in, expire)
	}
	if (what == changeOpened || what == changeReopened) && !in.Root.IsZero() {
		// A new root is not posted yet: its delivery starts it.
		m.maybeAutostart(in)
	}
	return in, nil
}

// Unanswered records that the source gave up waiting for the answer to
// delivery (Alertmanager's webhook timed out before groundcrew answered):
// when it sends it again, that is its retry, not a new notification.
func (m *Manager) Unanswered(ctx context.Context, key, delivery string) error {
	if delivery == "" {
		return nil
	}
	unlock := m.lock(key)
	defer unlock()
	_, err := m.o.Store.UpsertIncident(ctx, key, func(cur *Incident) (*Incident, error) {
		if cur == nil || cur.LastDelivery != delivery || cur.LastUnanswered {
			return nil, nil
		}
		cur.LastUnanswered = true
		return cur, nil
	})
	return err
}

// checkParams empties the suggested parameters the engine would refuse
// (too long, invisible or control characters, a pattern they do not
// match): the suggestion shows a placeholder, no Run button is offered,
// and the evidence says why. Without the runbook, the default limits apply.
func (m *Manager) checkParams(s Signal) Signal {
	if s.Runbook == "" || len(s.Params) == 0 {
		return s
	}
	bad := map[string]string{}
	var rb *runbookmodel.Runbook
	if m.o.Runbooks != nil {
		rb, _ = m.o.Runbooks.Get(s.Runbook)
	}
	if rb != nil {
		if _, err := runbooks.ValidateParams(rb, s.Params); err != nil {
			for _, e := range unjoin(err) {
				var pe *runbooks.ParamError
				if errors.As(e, &pe) {
					if _, given := s.Params[pe.Param]; given && s.Params[pe.Param] != "" {
						bad[pe.Param] = pe.Msg
					}
				}
			}
		}
	} else {
		for k, v := range s.Params {
			if err := runbooks.CheckValue(runbookmodel.Param{Name: k}, v); v != "" && err != nil {
				bad[k] = err.Error()
			}
		}
	}
	if len(bad) == 0 {
		return s
	}
	params := maps.Clone(s.Params)
	ev := slices.Clone(s.Evidence)
	for _, k := range slices.Sorted(maps.Keys(bad)) {
		params[k] = ""
		ev = append(ev, fmt.Sprintf("⚠️ parameter `%s` from this alert would be refused (%s): fill it in the suggested command", k, oneLine(bad[k], 200)))
	}
	s.Params, s.Evidence = params, ev
	return s
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// refresh takes the suggestion and title of a newer signal.
func (in *Incident) refresh(s Signal) {
	if s.Title != "" {
		in.Title = s.Title
	}
	if s.Runbook != "" {
		in.Runbook, in.Params = s.Runbook, s.Params
	}
	if s.Instance != "" {
		in.Instance = s.Instance
	}
	if s.Alerts > 0 {
		in.Alerts = s.Alerts
	}
	if len(s.Silence) > 0 {
		in.Silence = s.Silence
	}
	if !s.Since.IsZero() && s.Since.After(in.SinceAfter) && (in.Since.IsZero() || s.Since.Before(in.Since)) {
		in.Since = s.Since
	}
}

func (in *Incident) add(e Entry) {
	in.Timeline = append(in.Timeline, e)
	if len(in.Timeline) > maxTimeline {
		in.Timeline = append(in.Timeline[:1], in.Timeline[len(in.Timeline)-maxTimeline+1:]...)
	}
}

// publish posts the root message (when there is none yet: a new incident,
// or one whose root was given up) or updates it, and says what changed in
// the thread — all through the outbox, queued (Meta.Queue): the caller (an
// Alertmanager webhook, a poll) never waits for chat; the outbox's
// goroutine posts them in order, at once when chat answers, and when chat
// is down or hangs they wait in the store (restarts included).
func (m *Manager) publish(ctx context.Context, in *Incident, what change, diff evidenceDiff, why string) *Incident {
	root := m.render(in)
	if in.root().IsZero() {
		h, err := m.o.Outbox.Post(ctx, chatmodel.Conversation{Platform: in.Platform, Channel: in.Channel}, root,
			delivery.Meta{From: deliveryFrom, Key: rootKey + in.ID, Queue: true})
		if err != nil {
			m.log.Error("posting incident: chat refused it for good; the next signal tries again", "incident", in.ID, "channel", in.Channel, "err", err)
			return in
		}
		up, err := m.o.Store.UpdateIncident(ctx, in.ID, func(x *Incident) error {
			if x.Root.IsZero() {
				x.Root, x.RootPending = h.Ref, h.Pending
			}
			return nil
		})
		if err != nil {
			m.log.Error("recording the incident's message", "incident", in.ID, "err", err)
			in.Root, in.RootPending = h.Ref, h.Pending
		} else {
			in = up
		}

		// The root is the summary; its thread says what it leaves out.
		if text := firingText(in.Evidence); text != "" {
			m.postThread(ctx, in, chatmodel.Message{Text: text})
		}
		if what != changeResolved {
			return in
		}
	} else {
		m.edit(ctx, in, root)
	}
	switch what {
	case changeUpdated:
		if text := changedText(in, diff); text != "" {
			m.postThread(ctx, in, chatmodel.Message{Text: text})
		}
	case changeReopened:
		m.postThread(ctx, in, chatmodel.Message{Text: firingAgainText(in, diff), Broadcast: true})
	case changeResolved:
		text := fmt.Sprintf("✅ Resolved after %s — %s", human.Duration(in.Duration(in.ResolvedAt)), nonEmpty(why, sourceName(in)))
		var open []string
		for _, r := range m.LinkedRuns(ctx, in) {
			if !r.State.Terminal() {
				open = append(open, fmt.Sprintf("`%s` %s (%s)", r.ID, r.Runbook, r.State))
			}
		}
		if len(open) > 0 {
			text += "\nStill open in this thread: " + strings.Join(open, ", ") + " — finish or `/runbook cancel <run>` them."
		}
		m.postThread(ctx, in, chatmodel.Message{Text: text, Broadcast: true})
	}
	return in
}

// edit replaces the root message, coalesced: a storm of repeats edits it
// at most once every few seconds, the latest state winning.
func (m *Manager) edit(ctx context.Context, in *Incident, msg chatmodel.Message) {
	if in.root().IsZero() {
		return
	}
	if err := m.o.Outbox.Update(ctx, in.root(), msg, delivery.Meta{From: deliveryFrom, Key: in.ID, Coalesce: true, Queue: true}); err != nil {
		m.log.Warn("updating incident message", "incident", in.ID, "err", err)
	}
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sourceName(in *Incident) string {
	if in.Source.Kind == SourceAlert {
		return "Alertmanager says the alerts are resolved."
	}
	return "the condition cleared."
}

// postThread replies in the incident's thread, through the outbox: after
// the root and the earlier replies, however long chat is down.
func (m *Manager) postThread(ctx context.Context, in *Incident, msg chatmodel.Message) {
	if in.root().IsZero() {
		return
	}
	to := chatmodel.Conversation{Platform: in.Platform, Channel: in.Channel}
	if _, err := m.o.Outbox.Reply(ctx, to, in.root(), msg, delivery.Meta{From: deliveryFrom, Key: in.ID, Queue: true}); err != nil {
		m.log.Error("posting in incident thread: chat refused it for good", "incident", in.ID, "err", err)
	}
}

// audit records an incident's change in the audit log and in the bot's
// log (an operator reading the log sees incidents open and resolve, not
// only runs).
func (m *Manager) audit(ctx context.Context, in *Incident, actor string, action runmodel.AuditAction, detail string) {
	if actor == "" {
		actor = string(in.Source.Kind)
	}
	m.log.Info(strings.ReplaceAll(string(action), "_", " "), "incident", in.ID, "title", in.Title, "target", in.Target,
		"channel", in.Channel, "source", string(in.Source.Kind)+":"+in.Source.Name, "by", actor, "detail", detail)
	if m.o.Audit == nil {
		return
	}
	err := m.o.Audit.AppendAudit(ctx, runmodel.AuditEntry{Time: m.o.Now(), Actor: actor, Action: action, Target: in.Target,
		Detail: in.ID + " " + in.Key + ": " + detail})
	if err != nil {
		m.log.Error("writing the audit log", "incident", in.ID, "action", action, "err", err)
	}
}

// Command returns the exact command of the incident's suggested run.
func (in *Incident) Command() string {
	if in.Runbook == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("/runbook run " + in.Runbook)
	if in.Target != "" {
		b.WriteString(" target=" + in.Target)
	}
	for _, k := range slices.Sorted(maps.Keys(in.Params)) {
		v := in.Params[k]
		if v == "" {
			// A parameter the source could not fill stays visible as a
			// placeholder: without it the runbook might act on
			// another object. A command with a placeholder gets no Run
			// button and is not started.
			v = "<" + k + ">"
		}
		if strings.ContainsAny(v, " \t\"'") {
			v = `"` + strings.ReplaceAll(v, `"`, "") + `"`
		}
		b.WriteString(" " + k + "=" + v)
	}
	return b.String()
}

// Acknowledge marks an incident acknowledged by who; via says how
// ("reaction", "button", "command"). Acknowledging twice keeps the first.
func (m *Manager) Acknowledge(ctx context.Context, id string, who chatmodel.User, via string) (*Incident, bool, error) {
	now := m.o.Now()
	changed := false
	in, err := m.o.Store.UpdateIncident(ctx, id, func(in *Incident) error {
		if in.State != StateOpen {
			return nil
		}
		changed = true
		u := who
		in.State, in.AckedAt, in.AckedBy, in.UpdatedAt = StateAcknowledged, now, &u, now
		in.add(Entry{Time: now, Kind: "acknowledged", Actor: who.ID, Text: who.Display() + " acknowledged (" + via + ")"})
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if !changed {
		return in, false, nil
	}
	m.audit(ctx, in, who.ID, runmodel.ActionIncidentAcknowledged, via)
	m.edit(ctx, in, m.render(in))
	m.postThread(ctx, in, chatmodel.Message{Text: fmt.Sprintf("👀 %s acknowledged — %s after it started.", who.Display(), human.Duration(in.Duration(now)))})
	return in, true, nil
}

// Run starts the incident's suggested runbook as who, in the incident
// thread, exactly as if who had typed the command there: the engine checks
// who may run it and gates every destructive step as always.
func (m *Manager) Run(ctx context.Context, in *Incident, who chatmodel.User, eventID string, dryRun bool) error {
	if m.o.Starter == nil || in.Runbook == "" {
		return errors.New("no runbook to start")
	}
	if in.Root.IsZero() {
		return errors.New("the incident has no thread yet")
	}
	text := strings.TrimPrefix(in.Command(), "/runbook ")
	if strings.Contains(text, "<") {
		return fmt.Errorf("the suggested command is incomplete (%s): type it with the missing values", text)
	}
	if dryRun {
		text += " --dry-run"
	}
	now := m.o.Now()
	kind := "run"
	if dryRun {
		kind = "autostart"
	}
	if _, err := m.o.Store.UpdateIncident(ctx, in.ID, func(x *Incident) error {
		x.add(Entry{Time: now, Kind: kind, Actor: who.ID, Text: who.Display() + " started `" + text + "`"})
		if dryRun {
			x.Autostarted = true
		}
		return nil
	}); err != nil {
		return err
	}
	req := runmodel.StartRequest{Runbook: in.Runbook, Target: in.Target, Params: maps.Clone(in.Params), DryRun: dryRun,
		Thread: in.Thread(), User: who, Time: now, AlertInstance: in.Instance}
	if eventID != "" {
		req.EventID = eventID + "/run"
	}
	return m.o.Starter.StartRun(ctx, req)
}

// maybeAutostart starts the route's read-only steps (a dry run by
// @groundcrew) in the incident's thread, once, in the background: starting
// a run posts to chat, and nobody who signalled the incident waits for
// that. The thread must exist (the root posted).
func (m *Manager) maybeAutostart(in *Incident) {
	if !in.Autostart || in.Autostarted || in.Runbook == "" || in.State != StateOpen || in.Root.IsZero() || m.o.Starter == nil {
		return
	}
	m.background(func(ctx context.Context) {
		unlock := m.lock(in.Key)
		cur, err := m.o.Store.GetIncident(ctx, in.ID)
		unlock()
		if err != nil || cur.Autostarted || cur.State != StateOpen {
			return
		}
		if err := m.Run(ctx, cur, BotUser, "", true); err != nil {
			m.log.Error("autostarting the read-only steps", "incident", in.ID, "err", err)
		}
	})
}

// backgroundTimeout bounds the manager's background work (an autostart).
const backgroundTimeout = 5 * time.Minute

// background runs fn in a goroutine Wait waits for, with a context of its
// own (not the request's that started it).
func (m *Manager) background(fn func(ctx context.Context)) {
	m.work.Add(1)
	go func() {
		defer m.work.Done()
		defer func() {
			if p := recover(); p != nil {
				m.log.Error("panic in incident background work", "panic", p)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), backgroundTimeout)
		defer cancel()
		fn(ctx)
	}()
}

// Wait waits for the manager's background work (autostarts) to finish.
func (m *Manager) Wait() { m.work.Wait() }

// ErrSilenced is returned when an incident already has a silence.
var ErrSilenced = errors.New("already silenced")

// Silence silences the incident's alerts for d through the Silencer: one
// silence per incident (a second press says who silenced it and until
// when). While it lasts, CheckSilences asks Alertmanager whether the
// alerts still fire.
func (m *Manager) Silence(ctx context.Context, in *Incident, who chatmodel.User, d time.Duration) (string, error) {
	if m.o.Silencer == nil || len(in.Silence) == 0 {
		return "", errors.New("silences are not available for this incident")
	}
	unlock := m.lock(in.Key)
	defer unlock()
	now := m.o.Now()
	cur, err := m.o.Store.GetIncident(ctx, in.ID)
	if err != nil {
		return "", fmt.Errorf("reading incident %s: %w", in.ID, err)
	}
	if cur.Silenced(now) {
		return cur.SilenceID, fmt.Errorf("%w until %s by %s (silence `%s`)", ErrSilenced, hm(cur.SilencedUntil), cur.SilencedBy.Display(), cur.SilenceID)
	}
	if cur.State == StateResolved {
		return "", errors.New("the incident is resolved")
	}
	id, err := m.o.Silencer.Silence(ctx, cur.Silence, d, who.Display(), "groundcrew incident "+cur.ID)
	if err != nil {
		return "", err
	}
	until := now.Add(d)
	u := who
	in, err = m.o.Store.UpdateIncident(ctx, cur.ID, func(x *Incident) error {
		x.SilenceID, x.SilencedUntil, x.SilencedBy, x.UpdatedAt = id, until, &u, now
		x.add(Entry{Time: now, Kind: "silenced", Actor: who.ID, Text: fmt.Sprintf("%s silenced for %s, until %s (silence %s)", who.Display(), human.Duration(d), hm(until), id)})
		return nil
	})
	if err != nil {
		return id, fmt.Errorf("recording silence %s of incident %s: %w", id, cur.ID, err)
	}
	m.audit(ctx, in, who.ID, runmodel.ActionIncidentSilenced, id)
	m.updateRoot(ctx, in)
	m.postThread(ctx, in, chatmodel.Message{Text: fmt.Sprintf("🔕 %s silenced these alerts for %s (until %s) in Alertmanager (silence `%s`). Alertmanager sends nothing for them meanwhile, not even their resolve: groundcrew asks it every %s and resolves the incident when they are gone.",
		who.Display(), human.Duration(d), hm(until), id, human.Duration(SilenceCheckEvery))})
	return id, nil
}

// ExpireSilence ends the incident's silence now (DELETE
// /api/v2/silence/{id}); Alertmanager notifies again.
func (m *Manager) ExpireSilence(ctx context.Context, in *Incident, who chatmodel.User) error {
	if m.o.Silencer == nil {
		return errors.New("silences are not available (alerts.alertmanager.url is not set)")
	}
	unlock := m.lock(in.Key)
	defer unlock()
	now := m.o.Now()
	cur, err := m.o.Store.GetIncident(ctx, in.ID)
	if err != nil {
		return fmt.Errorf("reading incident %s: %w", in.ID, err)
	}
	if cur.SilenceID == "" {
		return fmt.Errorf("incident %s has no silence", cur.ID)
	}
	id := cur.SilenceID
	if err := m.o.Silencer.Expire(ctx, id); err != nil {
		return err
	}
	in, err = m.o.Store.UpdateIncident(ctx, cur.ID, func(x *Incident) error {
		if x.SilenceID != id {
			return nil
		}
		x.clearSilence()
		x.UpdatedAt = now
		x.add(Entry{Time: now, Kind: "unsilenced", Actor: who.ID, Text: fmt.Sprintf("%s expired the silence (silence %s)", who.Display(), id)})
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording the end of silence %s: %w", id, err)
	}
	m.audit(ctx, in, who.ID, runmodel.ActionIncidentUnsilenced, id)
	m.updateRoot(ctx, in)
	m.postThread(ctx, in, chatmodel.Message{Text: fmt.Sprintf("🔔 %s expired the silence `%s`: Alertmanager notifies about these alerts again.", who.Display(), id)})
	return nil
}

// expireTries are the waits before each try to expire a resolved
// incident's silence (Alertmanager briefly away).
var expireTries = []time.Duration{0, 2 * time.Second, 8 * time.Second}

// expireAtResolve expires the silence groundcrew made for an incident that
// resolved, in the background (the resolve may come in Alertmanager's own
// webhook, which does not wait for its API), and says so in the thread.
// When Alertmanager refuses every try, the root says the silence is still
// in force and offers to expire it.
func (m *Manager) expireAtResolve(in *Incident, id string) {
	m.background(func(ctx context.Context) {
		var err error
		for _, wait := range expireTries {
			if !sleep(ctx, wait) {
				return
			}
			if err = m.o.Silencer.Expire(ctx, id); err == nil {
				break
			}
			m.log.Warn("expiring the silence of a resolved incident", "incident", in.ID, "silence", id, "err", err)
		}
		unlock := m.lock(in.Key)
		now := m.o.Now()
		cur, uerr := m.o.Store.UpdateIncident(ctx, in.ID, func(x *Incident) error {
			if x.SilenceID != id {
				return nil // expired or replaced meanwhile
			}
			if err != nil {
				x.SilenceExpireErr = oneLine(err.Error(), 200)
				return nil
			}
			x.clearSilence()
			x.UpdatedAt = now
			x.add(Entry{Time: now, Kind: "unsilenced", Text: fmt.Sprintf("silence %s expired: the incident resolved", id)})
			return nil
		})
		unlock()
		if uerr != nil {
			m.log.Error("recording the end of a resolved incident's silence", "incident", in.ID, "silence", id, "err", uerr)
			return
		}
		m.updateRoot(ctx, cur)
		if err != nil {
			m.log.Error("the silence of a resolved incident is still in force", "incident", in.ID, "silence", id, "until", cur.SilencedUntil, "err", err)
			m.postThread(ctx, cur, chatmodel.Message{Text: fmt.Sprintf("⚠️ The silence `%s` could not be expired (%s): it is still in force until %s — press 🔔 Expire silence, or expire it in Alertmanager.",
				id, oneLine(err.Error(), 200), hm(cur.SilencedUntil))})
			return
		}
		m.audit(ctx, cur, "", runmodel.ActionIncidentUnsilenced, id+" (resolved)")
		m.postThread(ctx, cur, chatmodel.Message{Text: fmt.Sprintf("🔔 Silence `%s` expired with the incident: Alertmanager notifies again if these alerts fire.", id)})
	})
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// SilenceCheckEvery is how often WatchSilences asks Alertmanager about
// the silenced incidents.
const SilenceCheckEvery = 15 * time.Second

// WatchSilences runs CheckSilences every SilenceCheckEvery until ctx ends.
func (m *Manager) WatchSilences(ctx context.Context) error {
	if m.o.Silencer == nil {
		return nil
	}
	t := time.NewTicker(SilenceCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := m.CheckSilences(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("checking the silenced incidents", "err", err)
			}
		}
	}
}

// CheckSilences looks at every silenced incident: when Alertmanager has
// no firing alert for it any more, it is resolved (Alertmanager sends no
// resolve for silenced alerts); when its silence has ended and the alerts
// still fire, it is open again. It returns the first error of the API
// (every incident is still checked).
func (m *Manager) CheckSilences(ctx context.Context) error {
	if m.o.Silencer == nil {
		return nil
	}
	ins, err := m.o.Store.ListIncidents(ctx, Query{Open: true})
	if err != nil {
		return fmt.Errorf("listing open incidents: %w", err)
	}
	var first error
	for _, in := range ins {
		if in.SilenceID == "" || len(in.Silence) == 0 {
			continue
		}
		n, err := m.o.Silencer.Firing(ctx, in.Silence)
		if err != nil {
			m.log.Warn("asking Alertmanager for a silenced incident's alerts", "incident", in.ID, "err", err)
			if first == nil {
				first = err
			}
			continue
		}
		if n == 0 {
			_, err := m.Signal(ctx, Signal{Key: in.Key, Source: in.Source, Firing: false, Checked: true,
				Why: "Alertmanager has no firing alert for it any more (groundcrew asked it: it sends no resolve while a silence lasts)."})
			if err != nil && first == nil {
				first = err
			}
			continue
		}
		if !m.o.Now().Before(in.SilencedUntil) {
			if err := m.silenceEnded(ctx, in, n); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// silenceEnded opens the incident again: its silence is over and n alerts
// still fire.
func (m *Manager) silenceEnded(ctx context.Context, in *Incident, n int) error {
	unlock := m.lock(in.Key)
	defer unlock()
	now := m.o.Now()
	id := in.SilenceID
	changed := false
	in, err := m.o.Store.UpdateIncident(ctx, in.ID, func(x *Incident) error {
		if x.SilenceID != id || x.State == StateResolved {
			return nil
		}
		changed = true
		x.clearSilence()
		x.State, x.AckedAt, x.AckedBy, x.UpdatedAt = StateOpen, time.Time{}, nil, now
		x.add(Entry{Time: now, Kind: "reopened", Text: fmt.Sprintf("the silence ended and %d alert%s still fire%s", n, plural(n), map[bool]string{true: "s"}[n == 1])})
		return nil
	})
	if err != nil {
		return fmt.Errorf("recording the end of silence %s: %w", id, err)
	}
	if !changed {
		return nil
	}
	m.audit(ctx, in, "", runmodel.ActionIncidentReopened, "silence "+id+" ended")
	m.updateRoot(ctx, in)
	m.postThread(ctx, in, chatmodel.Message{Text: fmt.Sprintf("🔔 The silence ended and %d alert%s still fire%s: the incident is open again.", n, plural(n), map[bool]string{true: "s"}[n == 1]), Broadcast: true})
	if w, ok := m.o.Chat.(chatmodel.ReactionWatcher); ok && !in.Root.IsZero() {
		w.WatchReactions(in.Root)
	}
	return nil
}

// updateRoot renders the root message again.
func (m *Manager) updateRoot(ctx context.Context, in *Incident) {
	m.edit(ctx, in, m.render(in))
}

func hm(t time.Time) string { return t.UTC().Format("15:04") + " UTC" }

// Rewatch asks the chat adapter (when it is a chatmodel.ReactionWatcher) to
// re-read the reactions of every open incident's message after a restart,
// so that a 👀 given while groundcrew was down still acknowledges.
func (m *Manager) Rewatch(ctx context.Context) error {
	w, ok := m.o.Chat.(chatmodel.ReactionWatcher)
	if !ok {
		return nil
	}
	ins, err := m.Open(ctx)
	if err != nil {
		return fmt.Errorf("listing open incidents: %w", err)
	}
	for _, in := range ins {
		if !in.Root.IsZero() && in.State == StateOpen {
			w.WatchReactions(in.Root)
		}
	}
	return nil
}

// Republish posts the root of every open incident that has none and none
// waiting in the outbox (chat refused it for good before a restart): an
// open incident always gets its thread, not only at its next signal.
func (m *Manager) Republish(ctx context.Context) error {
	ins, err := m.Open(ctx)
	if err != nil {
		return fmt.Errorf("listing open incidents: %w", err)
	}
	queued := map[string]bool{}
	for _, it := range m.o.Outbox.Pending(ctx) {
		if id, ok := strings.CutPrefix(it.Key, rootKey); ok && it.From == deliveryFrom && !it.GaveUp {
			queued[id] = true
		}
	}
	for _, in := range ins {
		if !in.root().IsZero() || queued[in.ID] {
			continue // posted, or its root waits in the outbox
		}
		unlock := m.lock(in.Key)
		if cur, err := m.o.Store.GetIncident(ctx, in.ID); err == nil && cur.root().IsZero() && cur.State != StateResolved {
			m.log.Info("posting an open incident that has no message yet", "incident", cur.ID, "title", cur.Title)
			m.publish(ctx, cur, changeOpened, evidenceDiff{}, "")
		}
		unlock()
	}
	return nil
}

// Open lists the incidents that are not resolved, oldest first.
func (m *Manager) Open(ctx context.Context) ([]*Incident, error) {
	ins, err := m.o.Store.ListIncidents(ctx, Query{Open: true})
	if err != nil {
		return nil, err
	}
	sort.Slice(ins, func(i, j int) bool { return ins[i].OpenedAt.Before(ins[j].OpenedAt) })
	return ins, nil
}

// Counts is how many unresolved incidents are in each state (open,
// acknowledged, silenced), for the metrics.
func (m *Manager) Counts(ctx context.Context) (map[string]int, error) {
	ins, err := m.o.Store.ListIncidents(ctx, Query{Open: true})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, in := range ins {
		if in.SilenceID != "" {
			out["silenced"]++
			continue
		}
		out[string(in.State)]++
	}
	return out, nil
}

// maxListedResolved bounds how many resolved incidents `all` reads.
const maxListedResolved = 500

// list reads the incidents a listing filter may show: the open ones, and
// with All the most recent resolved ones too.
func (m *Manager) list(ctx context.Context, f ListFilter) ([]*Incident, error) {
	if !f.All {
		return m.Open(ctx)
	}
	open, err := m.Open(ctx)
	if err != nil {
		return nil, err
	}
	recent, err := m.o.Store.ListIncidents(ctx, Query{Limit: len(open) + maxListedResolved})
	if err != nil {
		return nil, err
	}
	for _, in := range recent {
		if in.State == StateResolved {
			open = append(open, in)
		}
	}
	return open, nil
}

// LinkedRuns returns the runs of the incident's thread.
func (m *Manager) LinkedRuns(ctx context.Context, in *Incident) []*runmodel.Run {
	if m.o.Runs == nil || in.Root.IsZero() {
		return nil
	}
	runs, err := m.o.Runs.ListRuns(ctx, runmodel.RunQuery{Thread: in.Root.ID})
	if err != nil {
		m.log.Warn("listing an incident's runs", "incident", in.ID, "err", err)
		return nil
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.Before(runs[j].CreatedAt) })
	return runs
}

// firingSince says when the condition started if that was a minute or more
// before the incident opened (an alert that fired before Alertmanager
// notified), so "resolved after 15 min" next to a timeline that opens 12 min
// before the resolution reads true.
func firingSince(since, opened time.Time) string {
	if since.IsZero() || opened.Sub(since) < time.Minute {
		return ""
	}
	return " (firing since " + since.UTC().Format("15:04") + ")"
}
