package runmodel

import (
	"context"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// RunQuery selects runs. Zero fields match everything.
type RunQuery struct {
	Active bool   // only runs in a non-terminal state
	Thread string // runs started in this thread (Conversation.Thread or root id)
	Limit  int    // most recent first; 0 = no limit
	Since  time.Time
	// States: only runs in one of these states (none: any state).
	States []RunState `json:",omitempty"`
	// Runbook and Target: only the runs of this runbook, on this target.
	Runbook string `json:",omitempty"`
	Target  string `json:",omitempty"`
	// After continues a listing page by page: only the runs that come
	// after this one in the listing's order (most recent first). Set it to
	// the CreatedAt and ID of the last run of the previous page.
	After RunCursor `json:",omitzero"`
}

// RunCursor is a position in a listing of runs: a run's creation time and
// id (the zero value: the start).
type RunCursor struct {
	CreatedAt time.Time `json:"created_at,omitzero"`
	ID        string    `json:"id,omitempty"`
}

// Runs stores runs. UpdateRun is the only way to change a run: fn runs
// inside one transaction together with the batch it fills; when fn returns
// an error nothing is written.
type Runs interface {
	CreateRun(ctx context.Context, r *Run, b *Batch) error
	UpdateRun(ctx context.Context, id string, fn func(r *Run, b *Batch) error) (*Run, error)
	GetRun(ctx context.Context, id string) (*Run, error)
	ListRuns(ctx context.Context, q RunQuery) ([]*Run, error)
	RunByMessage(ctx context.Context, ref chatmodel.MessageRef) (MessageIndex, error)
}

// Journals reads run journals and the audit log.
type Journals interface {
	Journal(ctx context.Context, runID string) ([]JournalEntry, error)
	AuditEntries(ctx context.Context, runID string) ([]AuditEntry, error)
	AppendAudit(ctx context.Context, e AuditEntry) error
}

// Dedupe remembers inbound event ids.
type Dedupe interface {
	// SeenEvent records id and reports whether it was already recorded.
	SeenEvent(ctx context.Context, id string, now time.Time) (bool, error)
}

// OutboxItem is a chat post that failed and will be retried.
type OutboxItem struct {
	ID       string                 `json:"id"`
	To       chatmodel.Conversation `json:"to"`
	Message  chatmodel.Message      `json:"message"`
	Update   chatmodel.MessageRef   `json:"update,omitzero"` // set for an update rather than a post
	RunID    string                 `json:"run_id,omitempty"`
	Step     string                 `json:"step,omitempty"`
	Role     chatmodel.MessageRole  `json:"role,omitempty"`
	Attempts int                    `json:"attempts"`
	NextTry  time.Time              `json:"next_try"`
	LastErr  string                 `json:"last_error,omitempty"`
	// Queued is when the first attempt failed (the age of the backlog).
	Queued time.Time `json:"queued,omitzero"`
	// From names the sender (delivery.Meta.From: "run", "incident",
	// "digest", "checkpoint"; "" is the engine's, before there were others)
	// and Key its own reference, handed back on delivery.
	From string `json:"from,omitempty"`
	Key  string `json:"key,omitempty"`
	// After is the id of the queued root post this reply waits for; its
	// thread is filled in once the root is posted.
	After string `json:"after,omitempty"`
	// Coalesce marks an edit held back so that a message is edited at most
	// once every few seconds (the latest state wins).
	Coalesce bool `json:"coalesce,omitempty"`
	// GaveUp is set once the post failed too often (or cannot succeed):
	// it is kept to be shown in /runbook status, never retried.
	GaveUp bool `json:"gave_up,omitempty"`
}

// Outbox keeps failed chat posts durably until they go through.
type Outbox interface {
	PutOutbox(ctx context.Context, it OutboxItem) error
	ListOutbox(ctx context.Context) ([]OutboxItem, error)
	DeleteOutbox(ctx context.Context, id string) error
}

// Store is everything the engine persists.
type Store interface {
	Runs
	Journals
	Dedupe
	Outbox
}

// HousekeepResult says what one housekeeping pass removed and what it cost.
type HousekeepResult struct {
	Events   int // inbound event ids past their TTL
	Runs     int // finished runs past the retention
	Messages int // message references of the deleted runs
	// Batches is the number of write transactions the pass took; each is
	// bounded, so other writes (votes, run updates) wait at most one.
	Batches int
	// WriterTime is the time the pass held the store's writer, summed
	// over its batches (0 when the store cannot tell).
	WriterTime time.Duration
	// LongestBatch is the longest a single batch held the writer.
	LongestBatch time.Duration
}

// Housekeeper is implemented by a store that can forget what it no longer
// needs (old dedupe entries, finished runs past the retention). The wiring
// hands it to the engine as Capabilities.Housekeeper; the engine calls it
// on its first tick and then every Options.HousekeepEvery.
type Housekeeper interface {
	Housekeep(ctx context.Context, now time.Time) (HousekeepResult, error)
}

// StartRequest asks the engine to start a run on behalf of a person, as
// if they had typed `/runbook run <runbook> target=<target> k=v` in
// Thread (an incident's Run button): the same checks apply (who may run
// it, the parameters, the gates).
type StartRequest struct {
	Runbook string
	Target  string            // "" when only one target is configured
	Params  map[string]string // without target
	DryRun  bool
	// Thread is where the run posts (an incident's thread).
	Thread chatmodel.Conversation
	User   chatmodel.User
	// EventID, when set, is the platform event that asked for it: the
	// engine starts one run per id, however often it is delivered.
	EventID string
	Time    time.Time
	// AlertInstance is the instance of the alert the run is started from
	// (Run.AlertInstance), "" when none.
	AlertInstance string
}

// RunStarter starts runs (the engine implements it). A refusal is a
// *chatmodel.UserError, also told privately to the request's User.
type RunStarter interface {
	StartRun(ctx context.Context, req StartRequest) error
}

// Observer learns of every run change the store committed, with the
// journal and audit entries it appended (run started, steps done, gates
// opened and decided, run finished). It is called synchronously after the
// write and must return quickly; r and b must not be modified.
type Observer interface {
	RunCommitted(r *Run, b *Batch)
}
