package chatmodel

import (
	"context"
	"time"
)

// User is a chat user as identified by the platform. ID is the platform's
// stable id (Slack U…, Mattermost 26-char id, console name); it is what
// approvals and separation of duties compare. Name is for display only.
type User struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Kind is what the platform says this account is. Adapters set it from
	// the platform's user record (never from the request); the zero value
	// is an active person. Only active people vote, start runs or answer
	// manual steps.
	Kind UserKind `json:"kind,omitempty"`
}

// UserKind says what kind of account a User is, as the platform knows it.
type UserKind string

// User kinds. The zero value is an active person.
const (
	UserPerson      UserKind = ""            // an active human account
	UserBot         UserKind = "bot"         // a bot or integration account
	UserDeactivated UserKind = "deactivated" // deactivated, deleted or archived
	UserUnknown     UserKind = "unknown"     // the platform does not know this id
)

// NotAPerson returns why u may not act (vote, start a run, answer a
// manual step), or "" when u is an active person with an id.
func (u User) NotAPerson() string {
	switch {
	case u.ID == "":
		return "the platform did not say who you are"
	case u.Kind == UserBot:
		return "bot accounts cannot act on runs"
	case u.Kind == UserDeactivated:
		return "this account is deactivated"
	case u.Kind == UserUnknown:
		return "the platform does not know this account"
	case u.Kind != UserPerson:
		return "this account is not an active person (" + string(u.Kind) + ")"
	}
	return ""
}

// Display returns "@name" (or the id when no name is known).
func (u User) Display() string {
	switch {
	case u.Name != "":
		return "@" + u.Name
	case u.ID == "":
		return "an unidentified user"
	}
	return "@" + u.ID
}

// Conversation says where a message goes: a channel, and optionally the
// thread (root message id) inside it.
type Conversation struct {
	Platform string `json:"platform,omitempty"`
	Channel  string `json:"channel"`
	Thread   string `json:"thread,omitempty"`
}

// MessageRef identifies a posted message.
type MessageRef struct {
	Platform string `json:"platform,omitempty"`
	Channel  string `json:"channel"`
	ID       string `json:"id"`
	Thread   string `json:"thread,omitempty"`
}

// IsZero reports whether the ref points to nothing.
func (r MessageRef) IsZero() bool { return r.ID == "" }

// File is a message attachment.
type File struct {
	// Name is the file name ("digest-infra-prd-20261202-0800.png").
	Name string `json:"name"`
	// Alt says in words what the file shows (alt text, title).
	Alt  string `json:"alt"`
	Data []byte `json:"data"`
}

// MaxFileBytes is the largest attachment a message carries; Clean drops
// larger ones.
const MaxFileBytes = 4 << 20

// Message is a platform-neutral chat message. Text uses a small Markdown
// subset every adapter renders: *bold*, `code`, ```blocks```, and lines.
// Adapters truncate to platform limits and put Detail where the platform
// allows long content (a thread reply, a collapsed attachment).
type Message struct {
	Text string `json:"text"`
	// Detail is long content (a full table, 300 build ids) shown one tap away.
	Detail string `json:"detail,omitempty"`
	// Buttons are interactive actions; adapters that cannot render buttons
	// tell users to react or type the command instead.
	Buttons []Button `json:"buttons,omitempty"`
	// Broadcast asks the adapter to make a thread reply visible in the channel
	// too (approval needed, run finished).
	Broadcast bool `json:"broadcast,omitempty"`
	// Mentions are platform user ids to notify: the adapter puts a mention
	// that pings each of them before Text (Slack <@U…>, Mattermost
	// @username, the console @name).
	Mentions []string `json:"mentions,omitempty"`
	// Files are attachments (a digest's chart). They are extra: Text is
	// complete without them, and an adapter that cannot upload one still
	// posts the message (and logs why).
	Files []File `json:"files,omitempty"`
	// Link, when set, is the address of a page about the message's
	// subject (its run's or incident's web page): adapters show it as a
	// link named Label (Slack <url|label>, Mattermost [label](url), the
	// console the address itself).
	Link *Link `json:"link,omitempty"`
	// RunID is the run the message belongs to ("" for none); Role and Step
	// say which of its messages it is. Adapters may use them (the console
	// remembers the latest run); they never need to parse Text for them.
	RunID string      `json:"run_id,omitempty"`
	Role  MessageRole `json:"role,omitempty"`
	Step  string      `json:"step,omitempty"`
	// PostKey names one post across its retries (the outbox sets it). A
	// post whose outcome is unknown (the server took the request and did
	// not answer in time) is sent again with the same key; an adapter
	// whose platform can tell (Mattermost's pending_post_id) returns the
	// post made the first time instead of posting it twice.
	PostKey string `json:"post_key,omitempty"`
}

// Link is a link shown with a message.
type Link struct {
	URL   string `json:"url"`
	Label string `json:"label"`
}

// MessageRole says which message of a run a message is.
type MessageRole string

// Message roles. Reactions and buttons are answered on RoleGate (votes)
// and RoleStep (manual steps) messages; the others are informational.
const (
	RoleRoot       MessageRole = "root"       // the run's first message, updated with its status
	RoleStep       MessageRole = "step"       // one step, updated as it progresses
	RoleGate       MessageRole = "gate"       // an approval request
	RoleDetail     MessageRole = "detail"     // long content of a step or plan
	RoleBreakGlass MessageRole = "breakglass" // a break-glass announcement
	RoleReminder   MessageRole = "reminder"   // an approval reminder
	RoleSummary    MessageRole = "summary"    // a run's summary
	RoleFinal      MessageRole = "final"      // the run's end
)

// Indexed reports whether reactions on messages of the role are looked up
// (their references are stored in the message index).
func (r MessageRole) Indexed() bool { return r == RoleRoot || r == RoleStep || r == RoleGate }

// Intent is what a person means by a reaction or a button press. Adapters
// translate their platform's emoji and buttons into intents; the engine
// never sees an emoji name.
type Intent string

// Intents. On a manual step's message, a reaction read as IntentApprove
// means done and IntentReject means failed (✅/❌ are both "yes/no"
// answers); buttons name the exact intent.
const (
	IntentApprove     Intent = "approve"
	IntentReject      Intent = "reject"
	IntentDone        Intent = "done"
	IntentSkip        Intent = "skip"
	IntentFail        Intent = "fail"
	IntentAcknowledge Intent = "acknowledge" // "I am on it" (incidents)
	// IntentRun is the ▶ Run button of `/runbook show`: it opens the run
	// form of the runbook its Value names.
	IntentRun Intent = "run"
)

// ReactionHints is implemented by chat adapters where people answer with
// reactions: Symbol returns what to show in hints for an intent ("React <symbol>
// to approve"), or "" when the intent has no reaction there. Without it the
// engine's hints name the commands only.
type ReactionHints interface {
	Symbol(Intent) string
}

// Button is an interactive button. Action is the intent that comes back in
// the button's Event; Value carries opaque data (run id, step id).
type Button struct {
	Action Intent `json:"action"`
	Label  string `json:"label"`
	Value  string `json:"value,omitempty"`
	Style  string `json:"style,omitempty"` // "primary", "danger" or ""
}

// Chat is the port the engine posts through. Implementations must be safe for
// concurrent use. Post into a Conversation with a Thread posts a thread reply.
type Chat interface {
	// Post posts a message and returns its reference.
	Post(ctx context.Context, to Conversation, m Message) (MessageRef, error)
	// Update replaces the content of a posted message in place.
	Update(ctx context.Context, ref MessageRef, m Message) error
	// Ephemeral shows a message to one user only (command errors, refusals).
	// Adapters without ephemeral messages post a normal message.
	Ephemeral(ctx context.Context, to Conversation, user User, m Message) error
}

// PostChecker is implemented by chat adapters that can tell whether the
// bot may post in a conversation. The engine asks before starting a run and
// refuses it, privately, when the answer is an error (a *UserError says how
// to fix it, e.g. how to invite the bot).
type PostChecker interface {
	CanPost(ctx context.Context, to Conversation) error
}

// GroupResolver is implemented by chat adapters that can expand approver
// groups ("group:ci-oncall") into user ids.
type GroupResolver interface {
	GroupMembers(ctx context.Context, group string) ([]string, error)
}

// IdentityResolver is implemented by chat adapters that can look up the
// user names written in policies and runbooks ("alice", "@alice") through
// the platform's API. The engine resolves every name to an id once at
// start (and `config check` does where credentials allow); votes and
// runner checks then compare ids only. Without a resolver (console),
// names are ids.
type IdentityResolver interface {
	// ResolveUser returns the user a name or id denotes, with its
	// platform id and Kind. It returns an error wrapping ErrNotFound when
	// the platform has no such user.
	ResolveUser(ctx context.Context, nameOrID string) (User, error)
	// UserByID returns what the platform says of the account with this
	// id, by the same look-up that names the user of an event: its name
	// and Kind (UserUnknown when the platform has no such account). The
	// engine counts an approval with what it returns, when the vote is
	// cast (through the event) and again right before the approved call
	// (asked afresh: Fresh), so the two count the same account.
	UserByID(ctx context.Context, id string) (User, error)
}

// ChannelResolver is implemented by chat adapters that can turn a
// channel's name ("#payments-ci") into the platform's channel id, the id
// events carry. The engine resolves the channels bound under `channels:`
// with it and compares ids only (a renamed channel keeps its binding; a
// channel renamed to a bound name does not get it). Without a resolver
// (console), names are ids. An id is returned as it is; a name the
// platform does not know wraps ErrNotFound.
type ChannelResolver interface {
	ChannelID(ctx context.Context, nameOrID string) (string, error)
}

// EmailResolver is implemented by chat adapters that can say a user's
// e-mail address as the platform vouches for it (Mattermost: verified;
// Slack: the address the account signs in with). It returns "" when the
// platform has none it vouches for. groundcrew matches it against the
// users of a Concourse team's auth config (authority: concourse).
type EmailResolver interface {
	VerifiedEmail(ctx context.Context, userID string) (string, error)
}

// ReactionWatcher is implemented by chat adapters that must be told which
// messages still wait for reactions (to re-read them after a reconnect);
// the engine calls it on start for every open gate and manual step.
type ReactionWatcher interface {
	WatchReactions(ref MessageRef)
}

// ThreadMessage is one message of a thread, read back for incident summaries.
type ThreadMessage struct {
	Time   time.Time `json:"time"`
	Author User      `json:"author"`
	Text   string    `json:"text"`
	Bot    bool      `json:"bot,omitempty"`
	// From, when set, names the subsystem that recorded this item (an
	// "incident" timeline entry) rather than a person: Text is shown as is.
	From string `json:"from,omitempty"`
}

// ThreadNotes is what a subsystem that owns a thread (an incident) adds to
// that thread's summary: a heading shown first and its own timeline items
// (From set), merged by time with the runs and people's messages.
type ThreadNotes struct {
	Heading string
	Items   []ThreadMessage
}

// ThreadNoter is a subsystem that knows some threads (the incidents); the
// engine asks it when summarising a thread. ok is false for a thread it
// does not know.
type ThreadNoter interface {
	ThreadNotes(ctx context.Context, thread Conversation) (notes ThreadNotes, ok bool)
}

// ThreadReader is implemented by chat adapters that can read a thread back.
type ThreadReader interface {
	ReadThread(ctx context.Context, c Conversation) ([]ThreadMessage, error)
}

// EventKind is the kind of an inbound chat event.
type EventKind string

// Inbound event kinds.
const (
	EventCommand  EventKind = "command"  // "/runbook …" typed by a user
	EventReaction EventKind = "reaction" // emoji added to / removed from a message
	EventButton   EventKind = "button"   // interactive button pressed
)

// Event is an inbound chat event. Adapters resolve User from the platform's
// event (never from message text) and have already verified signatures.
type Event struct {
	Kind EventKind `json:"kind"`
	// ID is the platform's event id when it has one; the engine drops an
	// event whose ID it has already handled (retries, redeliveries).
	ID           string       `json:"id,omitempty"`
	User         User         `json:"user"`
	Conversation Conversation `json:"conversation"`
	// Text is the command text after the command word ("run worker-stalled target=x").
	Text string `json:"text,omitempty"`
	// Message is the message a reaction or a button press refers to.
	Message MessageRef `json:"message,omitempty"`
	// Intent is what a reaction or a pressed button means. Adapters leave
	// it empty for a reaction that means nothing to groundcrew.
	Intent Intent `json:"intent,omitempty"`
	// Removed is true for a removed reaction.
	Removed bool `json:"removed,omitempty"`
	// Value comes from a pressed Button.
	Value string    `json:"value,omitempty"`
	Time  time.Time `json:"time,omitempty"`
	// AlertInstance is the instance of the alert an incident's run was
	// started from ("worker-7:9100"); the run carries it (Run.AlertInstance)
	// and its find-worker step refuses another machine. Never set from chat.
	AlertInstance string `json:"alert_instance,omitempty"`
}

// Handler receives inbound events. The engine implements it; adapters call
// it from their receive loops. Handle returns quickly: long work continues
// in the engine's own goroutines.
type Handler interface {
	Handle(ctx context.Context, e Event) error
}
