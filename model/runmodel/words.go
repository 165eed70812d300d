package runmodel

import "strings"

// Human says what a run state means, in words ("waiting for a person").
func (s RunState) Human() string {
	switch s {
	case RunRunning:
		return "running"
	case RunAwaitingApproval:
		return "waiting for approval"
	case RunAwaitingManual:
		return "waiting for a person"
	case RunWaiting:
		return "waiting"
	case RunSucceeded:
		return "succeeded"
	case RunFailed:
		return "failed"
	case RunCancelled:
		return "cancelled"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}

// Human says what a step status means, in words.
func (s StepStatus) Human() string {
	switch s {
	case StepPending:
		return "not started"
	case StepRunning:
		return "running"
	case StepExecuting:
		return "executing"
	case StepGated:
		return "waiting for approval"
	case StepManual:
		return "waiting for a person"
	case StepWaiting:
		return "waiting"
	case StepSucceeded:
		return "succeeded"
	case StepFailed:
		return "failed"
	case StepSkipped:
		return "skipped"
	case StepCancelled:
		return "cancelled"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}
