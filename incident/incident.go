// Package incident keeps incidents: one durable thread per alert group or
// per watch rule and object, opened by a Signal (an Alertmanager
// notification, a detected condition), updated by later signals, never
// duplicated, acknowledged by a person and resolved when the source says
// so. An incident offers its suggested runbook as a button and as the
// exact command; it never approves or changes anything by itself (at most
// a route's read-only steps start as a dry run).
//
// It talks to chat through chatmodel.Chat, to the store through Store, and starts
// runs through Starter (the engine's StartRun, a typed request).
package incident

import (
	"context"
	"errors"
	"time"

	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// State is an incident's state: open → acknowledged → resolved.
type State string

// Incident states.
const (
	StateOpen         State = "open"
	StateAcknowledged State = "acknowledged"
	StateResolved     State = "resolved"
)

// SourceKind says what opened an incident.
type SourceKind string

// Source kinds.
const (
	SourceAlert SourceKind = "alert" // an Alertmanager alert group
	SourceWatch SourceKind = "watch" // a watch rule on a target
)

// Source identifies where an incident comes from.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Name is the alert route or the watch rule ("routes[0]", "worker_stalled_for").
	Name string `json:"name"`
	// Ref is the group key (Alertmanager) or the object (worker name).
	Ref string `json:"ref,omitempty"`
}

// Entry is one line of an incident's timeline.
type Entry struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"` // opened, changed, resolved, reopened, acknowledged, run, silenced, autostart
	Actor string    `json:"actor,omitempty"`
	Text  string    `json:"text"`
	// Evidence is the whole evidence of the notification an opened,
	// changed or reopened entry records (Text says what changed, in
	// short): the timeline keeps every set the source sent.
	Evidence []string `json:"evidence,omitempty"`
}

// Incident is one incident and its thread.
type Incident struct {
	ID string `json:"id"`
	// Key de-duplicates: one incident (and thread) per key while it is
	// not resolved, and again when it fires within ReopenWindow.
	Key    string `json:"key"`
	Source Source `json:"source"`
	Title  string `json:"title"`
	Target string `json:"target,omitempty"`
	// Channel is where the incident's root message is posted.
	Channel  string `json:"channel"`
	Platform string `json:"platform,omitempty"`
	// Root is the incident's root message: its thread is the incident thread.
	Root chatmodel.MessageRef `json:"root,omitzero"`
	// RootPending is the outbox item that will post the root while chat
	// cannot take it (delivery.Handle.Pending); Root is set when it goes out.
	RootPending string `json:"root_pending,omitempty"`
	State       State  `json:"state"`
	// Evidence are the current facts, one line each (alerts with their
	// summary, the stalled worker and for how long).
	Evidence []string `json:"evidence,omitempty"`
	// EvidenceKeys are the identities of the evidence lines
	// (Signal.EvidenceKeys); none in an incident stored before they
	// existed: its lines are then compared by their text.
	EvidenceKeys []string `json:"evidence_keys,omitempty"`
	// Alerts is how many alerts fire (Signal.Alerts); 0 when resolved or
	// when the source does not count them.
	Alerts int `json:"alerts,omitempty"`
	// Runbook and Params are the suggested run; Command is the exact command.
	Runbook   string            `json:"runbook,omitempty"`
	Params    map[string]string `json:"params,omitempty"`
	Autostart bool              `json:"autostart,omitempty"`
	// Silence are the label matchers a "silence for 1 h" would use (alerts only).
	Silence map[string]string `json:"silence,omitempty"`
	// Notifications counts the source's deliveries (Alertmanager's
	// notifications, a watch's polls); a retried delivery counts once,
	// and what groundcrew found out itself (ResolvedByCheck) not at all.
	Notifications int `json:"notifications"`
	// LastDelivery identifies the last delivery counted (Signal.Delivery);
	// LastUnanswered is set when the source gave up waiting for the answer
	// to it (Manager.Unanswered): the same delivery again is its retry.
	LastDelivery   string `json:"last_delivery,omitempty"`
	LastUnanswered bool   `json:"last_unanswered,omitempty"`
	// ResolvedByCheck is set when groundcrew found the resolution by
	// asking the source (Alertmanager's API while a silence lasted), not
	// by being notified.
	ResolvedByCheck bool            `json:"resolved_by_check,omitempty"`
	Since           time.Time       `json:"since,omitzero"` // when the condition started (startsAt)
	OpenedAt        time.Time       `json:"opened_at"`
	UpdatedAt       time.Time       `json:"updated_at"`
	AckedAt         time.Time       `json:"acked_at,omitzero"`
	AckedBy         *chatmodel.User `json:"acked_by,omitempty"`
	ResolvedAt      time.Time       `json:"resolved_at,omitzero"`
	Timeline        []Entry         `json:"timeline,omitempty"`
	// Autostarted is set once the route's read-only autostart was requested.
	Autostarted bool `json:"autostarted,omitempty"`
	// The incident's silence in Alertmanager (one at most): its id, until
	// when, and who created it. While it lasts Alertmanager sends nothing
	// for these alerts, not even their resolve: groundcrew asks its API.
	SilenceID     string          `json:"silence_id,omitempty"`
	SilencedUntil time.Time       `json:"silenced_until,omitzero"`
	SilencedBy    *chatmodel.User `json:"silenced_by,omitempty"`
	// A resolved incident's silence is expired (Options.KeepSilences
	// unset); until that is done SilenceID stays. SilenceKept: it is kept
	// by configuration; SilenceExpireErr: expiring it failed (the root
	// says the silence is still in force and offers to expire it).
	SilenceKept      bool   `json:"silence_kept,omitempty"`
	SilenceExpireErr string `json:"silence_expire_error,omitempty"`
	// ReopenedAt is when the incident last opened again; its age counts
	// from then (or from a Since after the previous resolve).
	ReopenedAt time.Time `json:"reopened_at,omitzero"`
	// SinceAfter is the previous resolve of a reopened incident: a Since
	// before it belongs to the earlier firing.
	SinceAfter time.Time `json:"since_after,omitzero"`
	// Instance is the alert's instance (Signal.Instance); a run started
	// from the incident carries it.
	Instance string `json:"instance,omitempty"`
}

// Silenced reports whether the incident's silence lasts at now.
func (in *Incident) Silenced(now time.Time) bool {
	return in.SilenceID != "" && now.Before(in.SilencedUntil)
}

func (in *Incident) clearSilence() {
	in.SilenceID, in.SilencedUntil, in.SilencedBy = "", time.Time{}, nil
	in.SilenceKept, in.SilenceExpireErr = false, ""
}

// root is the root message as the outbox names it.
func (in *Incident) root() delivery.Handle {
	return delivery.Handle{Ref: in.Root, Pending: in.RootPending}
}

// Outbox is the durable outbox the incident's messages go through
// (*delivery.Outbox): a chat outage or a restart loses none of them, a
// thread keeps its order, and root edits are coalesced.
type Outbox interface {
	Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message, meta delivery.Meta) (delivery.Handle, error)
	Reply(ctx context.Context, to chatmodel.Conversation, root delivery.Handle, m chatmodel.Message, meta delivery.Meta) (delivery.Handle, error)
	Update(ctx context.Context, h delivery.Handle, m chatmodel.Message, meta delivery.Meta) error
	Register(from string, r delivery.Receiver)
	// Pending lists the queued posts (an incident whose root waits there
	// is not posted again).
	Pending(ctx context.Context) []runmodel.OutboxItem
}

// Thread is the incident thread's conversation.
func (in *Incident) Thread() chatmodel.Conversation {
	return chatmodel.Conversation{Platform: in.Platform, Channel: in.Channel, Thread: in.Root.ID}
}

// Duration is how long the incident has been (or was) open.
func (in *Incident) Duration(now time.Time) time.Duration {
	start := in.OpenedAt
	if !in.Since.IsZero() && in.Since.Before(start) {
		start = in.Since
	}
	end := now
	if in.State == StateResolved {
		end = in.ResolvedAt
	}
	if end.Before(start) {
		return 0
	}
	return end.Sub(start)
}

// Signal is what a source says about one key: firing (open or update) or
// resolved.
type Signal struct {
	Key    string
	Source Source
	// Firing is false when the source says the condition is over.
	Firing bool
	Title  string
	Target string
	// Channel is where a new incident is posted.
	Channel   string
	Runbook   string
	Params    map[string]string
	Autostart bool
	Evidence  []string
	// EvidenceKeys, when the source gives them, say which alert each
	// evidence line is: EvidenceKeys[i] identifies the alert (or the
	// identical alerts) of Evidence[i] — Alertmanager: its fingerprint,
	// a hash of its whole label set. Lines past its end (a count, a
	// warning) or with "" name no alert. An update is compared by these
	// keys: an alert whose line reads differently only because another
	// label is shown (a label no longer common to the group) is the same
	// alert, not one new and one gone. Without keys lines are compared by
	// their text.
	EvidenceKeys []string
	// Alerts is how many alerts fire, those the evidence does not list
	// included (Alertmanager: the group's firing alerts and the ones it
	// left out); 0 when the source does not count alerts (a watch).
	Alerts int
	// Since is when the condition started (zero: now).
	Since   time.Time
	Silence map[string]string
	// Why, for a resolve, says how groundcrew knows (default: the source said so).
	Why string
	// Instance is the alert's instance label ("worker-7:9100"), "" for a
	// watch: a run started from the incident carries it, and its
	// find-worker step refuses a worker on another machine.
	Instance string
	// Observations is how many notifications or polls this signal stands
	// for (0 counts as 1): a watch opens an incident after Polls polls in
	// a row, and its header says so.
	Observations int
	// Delivery identifies the delivery this signal came in (a hash of
	// Alertmanager's notification): when the source gave up waiting for
	// the answer to it (Manager.Unanswered), the same delivery again is its
	// retry — not counted again, and it changes nothing.
	Delivery string
	// Checked is set when groundcrew found this out itself (asking
	// Alertmanager's API while a silence lasts): it is not a notification.
	Checked bool
}

// observations is how many notifications s counts for.
func observations(s Signal) int { return max(1, s.Observations) }

// Query selects incidents.
type Query struct {
	Open  bool // only incidents not resolved
	Limit int  // most recent first; 0 = all
}

// Store persists incidents. Every method is one transaction.
type Store interface {
	// UpsertIncident loads the latest incident with key (nil when there is
	// none) and calls fn with it; fn returns the incident to write (nil:
	// write nothing). The returned incident is what was written (or nil).
	// Two calls for the same key are serialized by the store.
	UpsertIncident(ctx context.Context, key string, fn func(cur *Incident) (*Incident, error)) (*Incident, error)
	// UpdateIncident changes the incident with id inside one transaction.
	UpdateIncident(ctx context.Context, id string, fn func(in *Incident) error) (*Incident, error)
	GetIncident(ctx context.Context, id string) (*Incident, error)
	ListIncidents(ctx context.Context, q Query) ([]*Incident, error)
	// IncidentByMessage finds the incident whose root message is ref
	// (ErrNotFound when none).
	IncidentByMessage(ctx context.Context, ref chatmodel.MessageRef) (*Incident, error)
}

// Runs lists runs; the incident's linked runs are the runs of its thread.
type Runs interface {
	ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error)
}

// Auditor appends to the audit log.
type Auditor interface {
	AppendAudit(ctx context.Context, e runmodel.AuditEntry) error
}

// Silencer creates and expires silences and counts firing alerts
// (Alertmanager's v2 API).
type Silencer interface {
	// Silence silences the alerts matching the labels for d and returns
	// the silence id.
	Silence(ctx context.Context, matchers map[string]string, d time.Duration, by, comment string) (string, error)
	// Expire ends the silence with id now.
	Expire(ctx context.Context, id string) error
	// Firing counts the alerts matching the labels that still fire,
	// silenced or not.
	Firing(ctx context.Context, matchers map[string]string) (int, error)
}

// Observer is told when an incident opens (metrics).
type Observer interface {
	IncidentOpened(source string)
}

// ErrNotFound is returned for an unknown incident.
var ErrNotFound = errors.New("incident not found")
