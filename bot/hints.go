package bot

import (
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// hints has one concern: telling people how to answer. Where the chat
// adapter names a reaction for an intent (ReactionHints) the hint shows it,
// else the typed command. The engine knows no emoji: adapters do.
type hints struct{ reactions chatmodel.ReactionHints }

// hintsFor returns the hints for a chat whose reactions are h (typed
// commands only when h is nil).
func hintsFor(h chatmodel.ReactionHints) hints { return hints{reactions: h} }

// symbol is what people react with for an intent on this platform ("" when
// the adapter names none).
func (h hints) symbol(i chatmodel.Intent) string {
	if h.reactions == nil {
		return ""
	}
	return h.reactions.Symbol(i)
}

// manual tells people how to answer a manual step whose instructions are
// text. Where the text already says what the reactions lead to ("✅ it
// will never come back → prune it · ⏭ …"), the hint does not give them
// other meanings ("✅ when done, ❌ if it failed").
func (h hints) manual(runID, text string) string {
	yes, skip, no := h.symbol(chatmodel.IntentDone), h.symbol(chatmodel.IntentSkip), h.symbol(chatmodel.IntentFail)
	if yes == "" || skip == "" || no == "" {
		return fmt.Sprintf("Answer with `/runbook done %s` (or `skip`, `fail`).", runID)
	}
	if strings.Contains(text, yes) {
		return fmt.Sprintf("React %s, %s or %s as said above — or `/runbook done %s` (or `skip`, `fail`).", yes, skip, no, runID)
	}
	return fmt.Sprintf("React %s when done, %s to skip, %s if it failed — or `/runbook done %s`.", yes, skip, no, runID)
}

// gate tells people how to vote on an approval request.
func (h hints) gate(runID string) string {
	yes, no := h.symbol(chatmodel.IntentApprove), h.symbol(chatmodel.IntentReject)
	if yes == "" || no == "" {
		return fmt.Sprintf("Vote with `/runbook approve %s` / `/runbook reject %s <reason>`", runID, runID)
	}
	return fmt.Sprintf("React %s to approve or %s to reject — or `/runbook approve %s` / `/runbook reject %s <reason>`", yes, no, runID, runID)
}

// reminder ends an approval reminder.
func (h hints) reminder(runID string) string {
	if yes := h.symbol(chatmodel.IntentApprove); yes != "" {
		return fmt.Sprintf("React %s on the request or `/runbook approve %s`.", yes, runID)
	}
	return fmt.Sprintf("Approve with `/runbook approve %s`.", runID)
}

// help is the last line of /runbook help.
func (h hints) help() string {
	yes, no, skip, done, fail := h.symbol(chatmodel.IntentApprove), h.symbol(chatmodel.IntentReject), h.symbol(chatmodel.IntentSkip), h.symbol(chatmodel.IntentDone), h.symbol(chatmodel.IntentFail)
	if yes == "" || no == "" || skip == "" || done == "" || fail == "" {
		return "Vote with `approve`/`reject`; answer manual steps with `done`, `skip` or `fail`."
	}
	return fmt.Sprintf("Approve by reacting %s (reject %s) on the request; mark manual steps done with %s (%s skip, %s failed).", yes, no, done, skip, fail)
}
