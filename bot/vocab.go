package bot

// The vocabulary lives in the model packages (model/chatmodel,
// model/opmodel, model/runmodel); these re-exports keep every existing
// bot.X compiling. New code imports the model packages.

import (
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// From chatmodel.
type (
	User             = chatmodel.User
	UserKind         = chatmodel.UserKind
	Conversation     = chatmodel.Conversation
	MessageRef       = chatmodel.MessageRef
	Message          = chatmodel.Message
	File             = chatmodel.File
	Form             = chatmodel.Form
	FormField        = chatmodel.FormField
	FormOpener       = chatmodel.FormOpener
	FormChecker      = chatmodel.FormChecker
	FormRefresher    = chatmodel.FormRefresher
	MessageRole      = chatmodel.MessageRole
	Intent           = chatmodel.Intent
	ReactionHints    = chatmodel.ReactionHints
	Button           = chatmodel.Button
	Chat             = chatmodel.Chat
	PostChecker      = chatmodel.PostChecker
	GroupResolver    = chatmodel.GroupResolver
	IdentityResolver = chatmodel.IdentityResolver
	ReactionWatcher  = chatmodel.ReactionWatcher
	ThreadMessage    = chatmodel.ThreadMessage
	ThreadNotes      = chatmodel.ThreadNotes
	ThreadNoter      = chatmodel.ThreadNoter
	ThreadReader     = chatmodel.ThreadReader
	Commander        = chatmodel.Commander
	CommandSpec      = chatmodel.CommandSpec
	SubVerb          = chatmodel.SubVerb
	Invocation       = chatmodel.Invocation
	EventKind        = chatmodel.EventKind
	Event            = chatmodel.Event
	Handler          = chatmodel.Handler
	UserError        = chatmodel.UserError
	RateLimitedError = chatmodel.RateLimitedError
)

const (
	UserPerson        = chatmodel.UserPerson
	UserBot           = chatmodel.UserBot
	UserDeactivated   = chatmodel.UserDeactivated
	UserUnknown       = chatmodel.UserUnknown
	RoleRoot          = chatmodel.RoleRoot
	RoleStep          = chatmodel.RoleStep
	RoleGate          = chatmodel.RoleGate
	RoleDetail        = chatmodel.RoleDetail
	RoleBreakGlass    = chatmodel.RoleBreakGlass
	RoleReminder      = chatmodel.RoleReminder
	RoleSummary       = chatmodel.RoleSummary
	RoleFinal         = chatmodel.RoleFinal
	IntentApprove     = chatmodel.IntentApprove
	IntentReject      = chatmodel.IntentReject
	IntentDone        = chatmodel.IntentDone
	IntentSkip        = chatmodel.IntentSkip
	IntentFail        = chatmodel.IntentFail
	IntentAcknowledge = chatmodel.IntentAcknowledge
	IntentRun         = chatmodel.IntentRun
	EventCommand      = chatmodel.EventCommand
	EventReaction     = chatmodel.EventReaction
	EventButton       = chatmodel.EventButton
)

var (
	ErrNotFound      = chatmodel.ErrNotFound
	ErrNotApprover   = chatmodel.ErrNotApprover
	ErrNotConfigured = chatmodel.ErrNotConfigured
	ErrCannotPost    = chatmodel.ErrCannotPost
	RetryAfter       = chatmodel.RetryAfter
	UserMessage      = chatmodel.UserMessage
	Fresh            = chatmodel.Fresh
	WantsFresh       = chatmodel.WantsFresh
	Sanitize         = chatmodel.Sanitize
	FormCommand      = chatmodel.FormCommand
)

// From opmodel.
type (
	Class       = opmodel.Class
	ArgSpec     = opmodel.ArgSpec
	Op          = opmodel.Op
	Call        = opmodel.Call
	Args        = opmodel.Args
	PlanItem    = opmodel.PlanItem
	Plan        = opmodel.Plan
	Table       = opmodel.Table
	ItemResult  = opmodel.ItemResult
	ItemOutcome = opmodel.ItemOutcome
	Result      = opmodel.Result
	Provider    = opmodel.Provider
	Registry    = opmodel.Registry
)

const (
	ClassRead          = opmodel.ClassRead
	ClassWrite         = opmodel.ClassWrite
	ClassDestructive   = opmodel.ClassDestructive
	OutcomeSucceeded   = opmodel.OutcomeSucceeded
	OutcomeAlreadyDone = opmodel.OutcomeAlreadyDone
	OutcomeFailed      = opmodel.OutcomeFailed
)

var (
	NewRegistry = opmodel.NewRegistry
	PlanDiff    = opmodel.PlanDiff
)

// From runmodel.
type (
	AuditAction     = runmodel.AuditAction
	AuditHead       = runmodel.AuditHead
	Machine         = runmodel.Machine
	RunState        = runmodel.RunState
	StepStatus      = runmodel.StepStatus
	Run             = runmodel.Run
	StepState       = runmodel.StepState
	RawJSON         = runmodel.RawJSON
	Gate            = runmodel.Gate
	GateDecision    = runmodel.GateDecision
	VoteVia         = runmodel.VoteVia
	Vote            = runmodel.Vote
	Refusal         = runmodel.Refusal
	Withdrawal      = runmodel.Withdrawal
	JournalEntry    = runmodel.JournalEntry
	IntentData      = runmodel.IntentData
	CallOutcome     = runmodel.CallOutcome
	JournalType     = runmodel.JournalType
	AuditEntry      = runmodel.AuditEntry
	Batch           = runmodel.Batch
	MessageIndex    = runmodel.MessageIndex
	RunQuery        = runmodel.RunQuery
	RunCursor       = runmodel.RunCursor
	Runs            = runmodel.Runs
	Journals        = runmodel.Journals
	Dedupe          = runmodel.Dedupe
	OutboxItem      = runmodel.OutboxItem
	Outbox          = runmodel.Outbox
	Store           = runmodel.Store
	HousekeepResult = runmodel.HousekeepResult
	Housekeeper     = runmodel.Housekeeper
	StartRequest    = runmodel.StartRequest
	RunStarter      = runmodel.RunStarter
	Observer        = runmodel.Observer
)

const (
	ActionRunStarted           = runmodel.ActionRunStarted
	ActionRunRefused           = runmodel.ActionRunRefused
	ActionCancel               = runmodel.ActionCancel
	ActionApprovalRequested    = runmodel.ActionApprovalRequested
	ActionSelfApprovalAllowed  = runmodel.ActionSelfApprovalAllowed
	ActionApprove              = runmodel.ActionApprove
	ActionReject               = runmodel.ActionReject
	ActionVoteRefused          = runmodel.ActionVoteRefused
	ActionVoteWithdrawn        = runmodel.ActionVoteWithdrawn
	ActionVoteVoided           = runmodel.ActionVoteVoided
	ActionReactionRemoved      = runmodel.ActionReactionRemoved
	ActionApprovalGranted      = runmodel.ActionApprovalGranted
	ActionApprovalRejected     = runmodel.ActionApprovalRejected
	ActionApprovalExpired      = runmodel.ActionApprovalExpired
	ActionApprovalVoidDrift    = runmodel.ActionApprovalVoidDrift
	ActionBreakGlass           = runmodel.ActionBreakGlass
	ActionManualRefused        = runmodel.ActionManualRefused
	ActionExecute              = runmodel.ActionExecute
	ActionOutcome              = runmodel.ActionOutcome
	ActionIncidentOpened       = runmodel.ActionIncidentOpened
	ActionIncidentResolved     = runmodel.ActionIncidentResolved
	ActionIncidentReopened     = runmodel.ActionIncidentReopened
	ActionIncidentAcknowledged = runmodel.ActionIncidentAcknowledged
	ActionIncidentSilenced     = runmodel.ActionIncidentSilenced
	ActionIncidentUnsilenced   = runmodel.ActionIncidentUnsilenced
	RunRunning                 = runmodel.RunRunning
	RunAwaitingApproval        = runmodel.RunAwaitingApproval
	RunAwaitingManual          = runmodel.RunAwaitingManual
	RunWaiting                 = runmodel.RunWaiting
	RunSucceeded               = runmodel.RunSucceeded
	RunFailed                  = runmodel.RunFailed
	RunCancelled               = runmodel.RunCancelled
	StepPending                = runmodel.StepPending
	StepRunning                = runmodel.StepRunning
	StepExecuting              = runmodel.StepExecuting
	StepGated                  = runmodel.StepGated
	StepManual                 = runmodel.StepManual
	StepWaiting                = runmodel.StepWaiting
	StepSucceeded              = runmodel.StepSucceeded
	StepFailed                 = runmodel.StepFailed
	StepSkipped                = runmodel.StepSkipped
	StepCancelled              = runmodel.StepCancelled
	GatePending                = runmodel.GatePending
	GateApproved               = runmodel.GateApproved
	GateRejected               = runmodel.GateRejected
	GateExpired                = runmodel.GateExpired
	GateVoid                   = runmodel.GateVoid
	ViaReaction                = runmodel.ViaReaction
	ViaButton                  = runmodel.ViaButton
	ViaCommand                 = runmodel.ViaCommand
	CallSucceeded              = runmodel.CallSucceeded
	CallPartlyFailed           = runmodel.CallPartlyFailed
	CallFailed                 = runmodel.CallFailed
	CallUnchanged              = runmodel.CallUnchanged
	JRunStarted                = runmodel.JRunStarted
	JStepStarted               = runmodel.JStepStarted
	JStepDone                  = runmodel.JStepDone
	JStepSkipped               = runmodel.JStepSkipped
	JStepFailed                = runmodel.JStepFailed
	JIntent                    = runmodel.JIntent
	JOutcome                   = runmodel.JOutcome
	JGateOpened                = runmodel.JGateOpened
	JVote                      = runmodel.JVote
	JVoteRefused               = runmodel.JVoteRefused
	JGateDecided               = runmodel.JGateDecided
	JGateEscalated             = runmodel.JGateEscalated
	JManualDone                = runmodel.JManualDone
	JReconciled                = runmodel.JReconciled
	JRunFinished               = runmodel.JRunFinished
	JRunCancelled              = runmodel.JRunCancelled
	JVoteVoided                = runmodel.JVoteVoided
)

var (
	ActionManual         = runmodel.ActionManual
	ActionCall           = runmodel.ActionCall
	ActionRun            = runmodel.ActionRun
	ParseAuditHead       = runmodel.ParseAuditHead
	Moves                = runmodel.Moves
	ErrInvalidTransition = runmodel.ErrInvalidTransition
	ErrLocked            = runmodel.ErrLocked
	ErrExists            = runmodel.ErrExists
)
