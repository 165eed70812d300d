package runmodel

import "github.com/groundcrew/groundcrew/model/opmodel"

// AuditAction names what an audit entry records. Stored as a string.
type AuditAction string

// Audit actions. Per-step outcomes are built from the status
// (ActionManual, ActionCall, ActionRun).
const (
	ActionRunStarted          AuditAction = "run_started"
	ActionRunRefused          AuditAction = "run_refused"
	ActionCancel              AuditAction = "cancel"
	ActionApprovalRequested   AuditAction = "approval_requested"
	ActionSelfApprovalAllowed AuditAction = "self_approval_allowed"
	ActionApprove             AuditAction = "approve"
	ActionReject              AuditAction = "reject"
	ActionVoteRefused         AuditAction = "vote_refused"
	ActionVoteWithdrawn       AuditAction = "vote_withdrawn"
	// ActionVoteVoided is a counted approval that no longer qualified when
	// checked again right before executing.
	ActionVoteVoided AuditAction = "vote_voided"
	// ActionReactionRemoved is a removed reaction whose vote stands,
	// because the same person cast it by command or button too.
	ActionReactionRemoved   AuditAction = "reaction_removed"
	ActionApprovalGranted   AuditAction = "approval_granted"
	ActionApprovalRejected  AuditAction = "approval_rejected"
	ActionApprovalExpired   AuditAction = "approval_expired"
	ActionApprovalVoidDrift AuditAction = "approval_void_drift"
	// ActionNothingToDo is an approved destructive step whose plan,
	// resolved again right before executing, was empty: the objects had
	// moved first (Detail says what was found of each); no call was made.
	ActionNothingToDo   AuditAction = "nothing_to_do"
	ActionBreakGlass    AuditAction = "break_glass"
	ActionManualRefused AuditAction = "manual_refused"
	// ActionChangeRefused is a change a run was about to make (a gate, a
	// write call, an approved call) refused because the person who
	// started it may not act on the Concourse teams it touches.
	ActionChangeRefused AuditAction = "change_refused"
	ActionExecute       AuditAction = "execute"
	ActionOutcome       AuditAction = "outcome"
)

// ActionManual is the audit action of a manual step answered with status
// ("manual_succeeded", "manual_skipped", "manual_failed").
func ActionManual(status StepStatus) AuditAction { return AuditAction("manual_" + string(status)) }

// ActionCall is the audit action of a call of an operation of that class ("call_write").
func ActionCall(class opmodel.Class) AuditAction { return AuditAction("call_" + string(class)) }

// ActionRun is the audit action of a run's end ("run_succeeded").
func ActionRun(state RunState) AuditAction { return AuditAction("run_" + string(state)) }

// Audit actions of incidents (package incident).
const (
	ActionIncidentOpened       AuditAction = "incident_opened"
	ActionIncidentResolved     AuditAction = "incident_resolved"
	ActionIncidentReopened     AuditAction = "incident_reopened"
	ActionIncidentAcknowledged AuditAction = "incident_acknowledged"
	ActionIncidentSilenced     AuditAction = "incident_silenced"
	ActionIncidentUnsilenced   AuditAction = "incident_unsilenced"
)
