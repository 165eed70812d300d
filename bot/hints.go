package bot

import "fmt"

// symbol is what people react with for an intent on this platform ("" when
// the adapter names none). The engine knows no emoji: adapters do.
func (e *Engine) symbol(i Intent) string {
	if h, ok := e.o.Chat.(ReactionHints); ok {
		return h.Symbol(i)
	}
	return ""
}

// manualHint tells people how to answer a manual step.
func (e *Engine) manualHint(runID string) string {
	yes, skip, no := e.symbol(IntentDone), e.symbol(IntentSkip), e.symbol(IntentFail)
	if yes == "" || skip == "" || no == "" {
		return fmt.Sprintf("Answer with `/runbook done %s` (or `skip`, `fail`).", runID)
	}
	return fmt.Sprintf("React %s when done, %s to skip, %s if it failed — or `/runbook done %s`.", yes, skip, no, runID)
}

// gateHint tells people how to vote on an approval request.
func (e *Engine) gateHint(runID string) string {
	yes, no := e.symbol(IntentApprove), e.symbol(IntentReject)
	if yes == "" || no == "" {
		return fmt.Sprintf("Vote with `/runbook approve %s` / `/runbook reject %s <reason>`", runID, runID)
	}
	return fmt.Sprintf("React %s to approve or %s to reject — or `/runbook approve %s` / `/runbook reject %s <reason>`", yes, no, runID, runID)
}

// reminderHint ends an approval reminder.
func (e *Engine) reminderHint(runID string) string {
	if yes := e.symbol(IntentApprove); yes != "" {
		return fmt.Sprintf("React %s on the request or `/runbook approve %s`.", yes, runID)
	}
	return fmt.Sprintf("Approve with `/runbook approve %s`.", runID)
}

// helpHint is the last line of /runbook help.
func (e *Engine) helpHint() string {
	yes, no, skip, done, fail := e.symbol(IntentApprove), e.symbol(IntentReject), e.symbol(IntentSkip), e.symbol(IntentDone), e.symbol(IntentFail)
	if yes == "" || no == "" || skip == "" || done == "" || fail == "" {
		return "Vote with `approve`/`reject`; answer manual steps with `done`, `skip` or `fail`."
	}
	return fmt.Sprintf("Approve by reacting %s (reject %s) on the request; mark manual steps done with %s (%s skip, %s failed).", yes, no, done, skip, fail)
}
