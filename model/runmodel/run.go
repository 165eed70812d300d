package runmodel

import (
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// RunState is the state of a run. Stored as a string.
type RunState string

// Run states.
const (
	RunRunning          RunState = "running"           // the engine is working on it
	RunAwaitingApproval RunState = "awaiting_approval" // a gate is open
	RunAwaitingManual   RunState = "awaiting_manual"   // a manual step waits for a person
	RunWaiting          RunState = "waiting"           // a wait step polls
	RunSucceeded        RunState = "succeeded"
	RunFailed           RunState = "failed"
	RunCancelled        RunState = "cancelled"
)

// Terminal reports whether the state is final.
func (s RunState) Terminal() bool {
	return s == RunSucceeded || s == RunFailed || s == RunCancelled
}

// StepStatus is the status of one step of a run.
type StepStatus string

// Step statuses.
const (
	StepPending   StepStatus = "pending"
	StepRunning   StepStatus = "running"   // a read call is in flight (safe to redo)
	StepExecuting StepStatus = "executing" // intent recorded, write/destructive call in flight
	StepGated     StepStatus = "awaiting_approval"
	StepManual    StepStatus = "awaiting_manual"
	StepWaiting   StepStatus = "waiting"
	StepSucceeded StepStatus = "succeeded"
	StepFailed    StepStatus = "failed"
	StepSkipped   StepStatus = "skipped"
	StepCancelled StepStatus = "cancelled"
)

// Done reports whether the step reached a final status.
func (s StepStatus) Done() bool {
	return s == StepSucceeded || s == StepFailed || s == StepSkipped || s == StepCancelled
}

// Run is one execution of a runbook. It is stored whole, as JSON, and
// changed only inside Store.UpdateRun.
type Run struct {
	ID      string            `json:"id"`
	Runbook string            `json:"runbook"`
	Title   string            `json:"title"`
	Target  string            `json:"target"`
	Params  map[string]string `json:"params"`
	Vars    map[string]string `json:"vars,omitempty"`
	// FlyTarget is the target's name in fly's config (templates'
	// .fly_target); "" in runs stored before it existed: the target's name.
	FlyTarget string `json:"fly_target,omitempty"`
	// Scope is what the channel the run was started from may act on
	// (channels: in groundcrew.yaml), kept for the run's life; nil for a
	// channel bound to nothing.
	Scope *ChannelScope `json:"scope,omitempty"`
	// Team is the target's configured Concourse team: the team of a
	// pipeline named without one. "" in runs stored before it existed.
	Team         string                 `json:"team,omitempty"`
	Requester    chatmodel.User         `json:"requester"`
	Conversation chatmodel.Conversation `json:"conversation"`
	// Root is the run's root message, kept up to date with the status.
	Root chatmodel.MessageRef `json:"root"`
	// RootPending is the outbox item of the root message while chat has
	// not taken it: the run's replies wait for it and go in its thread.
	RootPending string      `json:"root_pending,omitempty"`
	State       RunState    `json:"state"`
	Cursor      int         `json:"cursor"`
	DryRun      bool        `json:"dry_run,omitempty"`
	Steps       []StepState `json:"steps"`
	// Spec is the runbook as it was when the run started, so editing a
	// runbook never changes a run in flight.
	Spec *runbookmodel.Runbook `json:"spec"`
	// Gate is the open approval gate, if any.
	Gate *Gate `json:"gate,omitempty"`
	// GateSeq numbers the gates of the run, so every gate has its own id.
	GateSeq int `json:"gate_seq,omitempty"`
	// PendingApproval carries an explicit approval step's policy to the gate
	// of the destructive step that follows it.
	PendingApproval *Policy   `json:"pending_approval,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	FinishedAt      time.Time `json:"finished_at,omitzero"`
	Error           string    `json:"error,omitempty"`
	// ApprovalWait is the time the run's gates waited for a decision, so
	// that a duration can say how much of it was waiting for people.
	ApprovalWait time.Duration `json:"approval_wait,omitempty"`
	// AlertInstance is the instance of the alert the run was started from
	// (an incident's Run button), "" otherwise. Runbooks see it as
	// .run.alert_instance; the find-worker steps refuse a worker on
	// another machine.
	AlertInstance string `json:"alert_instance,omitempty"`
}

// ChannelScope is what a bound channel may act on: its binding's key
// ("#payments-ci"), targets and Concourse teams (empty: every one). The
// run's calls read and change only those teams' things.
type ChannelScope struct {
	Key     string   `json:"key"`
	Targets []string `json:"targets,omitempty"`
	Teams   []string `json:"teams,omitempty"`
}

// StepState is the state of one step of a run.
type StepState struct {
	ID         string               `json:"id"`
	Kind       runbookmodel.Kind    `json:"kind"`
	Title      string               `json:"title"`
	Op         string               `json:"op,omitempty"`
	Status     StepStatus           `json:"status"`
	StartedAt  time.Time            `json:"started_at,omitzero"`
	FinishedAt time.Time            `json:"finished_at,omitzero"`
	Summary    string               `json:"summary,omitempty"`
	Result     RawJSON              `json:"result,omitempty"`
	Table      *opmodel.Table       `json:"table,omitempty"`
	Detail     string               `json:"detail,omitempty"`
	Text       string               `json:"text,omitempty"` // rendered manual instructions
	Warn       bool                 `json:"warn,omitempty"`
	Items      []opmodel.ItemResult `json:"items,omitempty"`
	// Progress is how far a long call has got ("aborting 1,200 / 5,000 ·
	// 310/s"), written every few seconds while the step runs, so the run's
	// page (on any replica) follows it; "" once the step is done.
	Progress string               `json:"progress,omitempty"`
	Error    string               `json:"error,omitempty"`
	Message  chatmodel.MessageRef `json:"message,omitzero"`
	Plan     *opmodel.Plan        `json:"plan,omitempty"`
	PlanHash string               `json:"plan_hash,omitempty"`
	// Teams are the Concourse teams whose things the step's change
	// touches (write and destructive calls; see Gate.Teams).
	Teams []string     `json:"teams,omitempty"`
	Args  opmodel.Args `json:"args,omitempty"`
	// NextPoll and Deadline drive wait steps (and manual step timeouts).
	NextPoll time.Time `json:"next_poll,omitzero"`
	Deadline time.Time `json:"deadline,omitzero"`
	Polls    int       `json:"polls,omitempty"`
	// By is who completed a manual step.
	By *chatmodel.User `json:"by,omitempty"`
	// ApprovedBy lists who approved the gate this step executed under.
	ApprovedBy []chatmodel.User `json:"approved_by,omitempty"`
	Note       string           `json:"note,omitempty"`
	// Branch marks a step skipped because its `when` was false: a branch
	// not taken is not posted in the thread (it shows in status and summary).
	Branch bool `json:"branch,omitempty"`
}

// RawJSON is stored JSON that stays JSON across encode/decode.
type RawJSON = json.RawMessage

// Gate is an open approval request.
type Gate struct {
	ID     string `json:"id"` // unique per gate ("r-7f3a/prune/2")
	StepID string `json:"step_id"`
	// Plan is nil for an explicit approval step with no destructive action after it.
	Plan     *opmodel.Plan `json:"plan,omitempty"`
	PlanHash string        `json:"plan_hash,omitempty"`
	// Teams are the Concourse teams whose things the gated change touches
	// (its plan's items, or what a write call names), sorted; empty when
	// none (a global worker, a table, an approval step).
	Teams  []string `json:"teams,omitempty"`
	Policy Policy   `json:"policy"`
	// StepApproval is the explicit approval step's settings this gate
	// carries (Run.PendingApproval when it opened), so a gate asked again
	// for a changed plan keeps them.
	StepApproval *Policy              `json:"step_approval,omitempty"`
	Votes        []Vote               `json:"votes,omitempty"`
	Refusals     []Refusal            `json:"refusals,omitempty"`
	Withdrawals  []Withdrawal         `json:"withdrawals,omitempty"`
	RequestedAt  time.Time            `json:"requested_at"`
	ExpiresAt    time.Time            `json:"expires_at"`
	Message      chatmodel.MessageRef `json:"message,omitzero"`
	Reason       string               `json:"reason,omitempty"` // why this gate was (re)opened: drift, interrupted
	Reminded     bool                 `json:"reminded,omitempty"`
	// Escalated counts the policy's escalation steps taken (each once).
	Escalated int          `json:"escalated,omitempty"`
	Decision  GateDecision `json:"decision,omitempty"`
	// Voided are counted approvals that no longer qualified when they were
	// checked again right before executing (removed from a group,
	// deactivated, handle given to another account).
	Voided []Refusal `json:"voided,omitempty"`
}

// GateDecision is the outcome of a gate. Stored as a string.
type GateDecision string

// Gate decisions.
const (
	GatePending  GateDecision = ""
	GateApproved GateDecision = "approved"
	GateRejected GateDecision = "rejected"
	GateExpired  GateDecision = "expired"
	GateVoid     GateDecision = "void" // the plan changed before execution
)

// VoteVia says how a vote was cast. Stored as a string.
type VoteVia string

// How votes are cast.
const (
	ViaReaction VoteVia = "reaction"
	ViaButton   VoteVia = "button"
	ViaCommand  VoteVia = "command"
)

// Vote is one approve/reject by one person.
type Vote struct {
	User    chatmodel.User `json:"user"`
	Approve bool           `json:"approve"`
	Reason  string         `json:"reason,omitempty"`
	At      time.Time      `json:"at"`
	Via     VoteVia        `json:"via"`
	// AlsoVia are the other channels the same vote was cast through (an
	// approval by command, then a ✅ reaction): removing that reaction
	// takes its channel away, and the vote stands while one is left.
	AlsoVia  []VoteVia `json:"also_via,omitempty"`
	PlanHash string    `json:"plan_hash,omitempty"`
	// Groups are the policy's required groups the voter belonged to when voting.
	Groups []string `json:"groups,omitempty"`
	// BreakGlass marks an override by a break-glass user.
	BreakGlass bool `json:"break_glass,omitempty"`
}

// Refusal is a vote that did not count, with why.
type Refusal struct {
	User   chatmodel.User `json:"user"`
	Reason string         `json:"reason"`
	At     time.Time      `json:"at"`
	// Action is what was Refused ("approval", "rejection", "break-glass approval").
	Action string `json:"action,omitempty"`
}

// Withdrawal is a vote taken back (its reaction removed).
type Withdrawal struct {
	User    chatmodel.User `json:"user"`
	Approve bool           `json:"approve"`
	Via     VoteVia        `json:"via"`
	At      time.Time      `json:"at"`
}

// Step returns the state of the step with the given id.
func (r *Run) Step(id string) *StepState {
	for i := range r.Steps {
		if r.Steps[i].ID == id {
			return &r.Steps[i]
		}
	}
	return nil
}

// Teams are the Concourse teams whose things the run's changes concern
// (planned, asked for, made or refused: its steps' Teams), sorted; nil
// when none says a team.
func (r *Run) Teams() []string {
	var out []string
	for _, st := range r.Steps {
		for _, t := range st.Teams {
			if t != "" && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Duration is how long the run has been going (or went).
func (r *Run) Duration(now time.Time) time.Duration {
	end := now
	if !r.FinishedAt.IsZero() {
		end = r.FinishedAt
	}
	return end.Sub(r.CreatedAt)
}

// NoteGateDecided adds the wait of the run's gate, decided at now, to
// ApprovalWait. Call it where the gate's decision is set.
func (r *Run) NoteGateDecided(now time.Time) {
	if r.Gate != nil && !r.Gate.RequestedAt.IsZero() && now.After(r.Gate.RequestedAt) {
		r.ApprovalWait += now.Sub(r.Gate.RequestedAt)
	}
}

// JournalEntry is one line of a run's journal: what the engine intended,
// did, and saw, in order. Intent is written before every write/destructive
// call and an outcome after it.
type JournalEntry struct {
	RunID string      `json:"run_id"`
	Seq   uint64      `json:"seq"`
	Time  time.Time   `json:"time"`
	Step  string      `json:"step,omitempty"`
	Type  JournalType `json:"type"`
	Actor string      `json:"actor,omitempty"`
	// ActorName is the actor's name when the entry was written, so the
	// entry can name them after the run forgot them (a refused voter once
	// the gate executed).
	ActorName string `json:"actor_name,omitempty"`
	PlanHash  string `json:"plan_hash,omitempty"`
	Message   string `json:"message,omitempty"`
	// Intent is what an intent entry announces: the operation, the
	// objects of its plan and who approved it (stored as "data").
	Intent *IntentData `json:"data,omitempty"`
	// Outcome is how the call ended, on JOutcome entries.
	Outcome CallOutcome `json:"outcome,omitempty"`
}

// IntentData is what a journal's intent entry records of the call it
// announces, before the call is made.
type IntentData struct {
	Op         string   `json:"op"`
	Items      []string `json:"items,omitempty"` // "kind:id" of each object of the plan
	ApprovedBy string   `json:"approved_by,omitempty"`
}

// CallOutcome is how a write or destructive call ended. Stored as a string.
type CallOutcome string

// Call outcomes.
const (
	CallSucceeded    CallOutcome = "succeeded"
	CallPartlyFailed CallOutcome = "partly_failed" // some items of the plan did not succeed
	CallFailed       CallOutcome = "failed"        // the call returned an error; it may have changed part of its plan
	CallUnchanged    CallOutcome = "unchanged"     // the call returned an error before changing anything (opmodel.ErrUnchanged)
	// CallNotMade: the approved plan, resolved again right before the
	// call, was empty (its objects had moved first); the call was not made.
	CallNotMade CallOutcome = "not_made"
)

// JournalType says what a journal entry records. Stored as a string;
// shown to people only through journalLine.
type JournalType string

// Journal entry types.
const (
	JRunStarted  JournalType = "run_started"
	JStepStarted JournalType = "step_started"
	JStepDone    JournalType = "step_done"
	JStepSkipped JournalType = "step_skipped"
	JStepFailed  JournalType = "step_failed"
	JIntent      JournalType = "intent"
	JOutcome     JournalType = "outcome"
	JGateOpened  JournalType = "gate_opened"
	JVote        JournalType = "vote"
	JVoteRefused JournalType = "vote_refused"
	JGateDecided JournalType = "gate_decided"
	// JGateEscalated: an escalation step of the gate's policy mentioned
	// more people (Message says whom, after how long).
	JGateEscalated JournalType = "gate_escalated"
	JManualDone    JournalType = "manual_done"
	JReconciled    JournalType = "reconciled"
	JRunFinished   JournalType = "run_finished"
	JRunCancelled  JournalType = "run_cancelled"

	// JVoteVoided is a counted approval that no longer qualified when it
	// was checked again right before the call it approved.
	JVoteVoided JournalType = "vote_voided"
)

// AuditEntry is one line of the append-only, hash-chained audit log.
type AuditEntry struct {
	Seq    uint64      `json:"seq"`
	Time   time.Time   `json:"time"`
	Actor  string      `json:"actor"`
	Action AuditAction `json:"action"`
	RunID  string      `json:"run_id,omitempty"`
	Step   string      `json:"step,omitempty"`
	Target string      `json:"target,omitempty"`
	// Teams are the Concourse teams the action concerns (a gate's, the
	// teams a run's parameters name).
	Teams    []string `json:"teams,omitempty"`
	PlanHash string   `json:"plan_hash,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	Via      string   `json:"via,omitempty"`
	// Prev is the hash of the previous entry; Hash covers this entry and Prev.
	Prev string `json:"prev"`
	Hash string `json:"hash"`
}

// Batch collects what one run update appends besides the run itself; the
// store writes all of it in the same transaction as the run.
type Batch struct {
	Journal  []JournalEntry
	Audit    []AuditEntry
	Messages []MessageIndex
}

// MessageIndex maps a posted message to the run (and step) it belongs to, so
// reactions and button presses find their run.
type MessageIndex struct {
	Ref   chatmodel.MessageRef  `json:"ref"`
	RunID string                `json:"run_id"`
	Step  string                `json:"step,omitempty"`
	Role  chatmodel.MessageRole `json:"role"`
}

// Note appends a journal entry to the batch.
func (b *Batch) Note(e JournalEntry) { b.Journal = append(b.Journal, e) }

// AuditLog appends an audit entry to the batch.
func (b *Batch) AuditLog(e AuditEntry) { b.Audit = append(b.Audit, e) }

// Errors of the run model and its stores.
var (
	ErrInvalidTransition = errors.New("invalid state transition")
	ErrLocked            = errors.New("store is locked by another process")
	ErrExists            = errors.New("already exists")
)
