package bot_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// C3 is #security-ci, bound to team security, which owns no worker.
var chan3 = chatmodel.Conversation{Platform: "test", Channel: "C3"}

func offersHarness(t *testing.T) *harness {
	w := teamWorld()
	h := newHarness(t, w, func(o *bot.Options) {
		withBindings("")(o)
		o.Approvals.Channels.Bindings["#security-ci"] = policy.Binding{Teams: []string{"security"}}
		require.NoError(t, o.Ops.Register(w.WorkersOp()))
	})
	h.chat.Channels = map[string]string{"#payments-ci": "C1", "#ops": "C2", "#security-ci": "C3"}
	return h
}

// A channel bound to teams is offered only the runbooks it may run: one
// that changes only workers is not listed, suggested, shown as runnable
// or started where its teams own no worker (a global worker is no team's);
// the list says in one line what it leaves out and why.
func TestOffers_AChannelIsOfferedOnlyWhatItMayRun(t *testing.T) {
	h := offersHarness(t)

	h.cmdIn(chan3, alice, "list")
	list := lastReply(h, alice)
	assert.NotContains(t, list, "• `prune`", "prune changes only workers, and security owns none")
	assert.Contains(t, list, "• `teamtouch`")
	assert.Contains(t, list, "• `waiter`", "a runbook that changes nothing is offered")
	assert.Contains(t, list, "🙈 Not offered here: `prune` changes only workers, and team `security` owns no worker on `infra-prd`, `infra-stg` (a global worker is no team's): run it from a channel bound to every team.")
	assert.NotContains(t, list, "payments")
	assert.NotContains(t, list, "platform")

	h.cmdIn(chan3, alice, "show prune")
	assert.Contains(t, lastReply(h, alice), "🙈 Not offered in this channel: it changes only workers, and team `security` owns no worker on `infra-prd`, `infra-stg`")

	// Did-you-mean suggests only what the channel may run.
	h.cmdIn(chan3, alice, "run prun target=infra-prd")
	assert.Equal(t, "⚠️ There is no runbook \"prun\". See `/runbook list`.", lastReply(h, alice))
	h.cmd(alice, "run prun target=infra-prd")
	assert.Contains(t, lastReply(h, alice), "Did you mean `prune`?")

	// Not started; said why, audited; a dry run still is.
	h.cmdIn(chan3, alice, "run prune target=infra-prd")
	assert.Equal(t, "⚠️ `prune` does not run in this channel: it changes only workers, and team `security` owns no worker on `infra-prd` (a global worker is no team's): run it from a channel bound to every team. `/runbook run prune --dry-run` shows what it would do.", lastReply(h, alice))
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs)
	audit, err := h.db.AuditEntries(h.ctx, "")
	require.NoError(t, err)
	require.NotEmpty(t, audit)
	assert.Equal(t, runmodel.ActionRunRefused, audit[len(audit)-1].Action)
	assert.Equal(t, "prune: not offered in channels.#security-ci", audit[len(audit)-1].Detail)
	h.cmdIn(chan3, alice, "run prune target=infra-prd --dry-run")
	assert.Len(t, h.runs(), 1, h.chat.Transcript())

	// payments owns w-pay: its channel is offered prune, and nothing is
	// said left out; an unbound channel is offered everything.
	h.cmd(alice, "list")
	assert.Contains(t, lastReply(h, alice), "• `prune`")
	assert.NotContains(t, lastReply(h, alice), "Not offered")
	h.cmdIn(chan2, alice, "list")
	assert.Contains(t, lastReply(h, alice), "• `prune`")
	assert.NotContains(t, lastReply(h, alice), "Not offered")
}

// A form's worker choices, for a runbook that changes workers, are only
// the workers the channel's teams own (a global worker is no team's).
func TestOffers_FormsOfferOnlyTheTeamsOwnWorkers(t *testing.T) {
	forms := &formRecorder{}
	w := teamWorld()
	h := newHarness(t, w, func(o *bot.Options) {
		withBindings("")(o)
		require.NoError(t, o.Ops.Register(w.WorkersOp()))
		o.Capabilities = bot.CapabilitiesOf(o.Store, o.Chat)
		o.Capabilities.Forms = forms
	})
	h.chat.Channels = map[string]string{"#payments-ci": "C1", "#ops": "C2"}
	press := func(conv chatmodel.Conversation) []string {
		h.cmdIn(conv, alice, "show prune")
		b := h.chat.LastEphemeral().Buttons
		require.Len(t, b, 1)
		require.NoError(t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventButton, User: alice, Conversation: conv, Intent: b[0].Action, Value: b[0].Value}))
		h.idle()
		f := forms.forms[len(forms.forms)-1]
		for _, fd := range f.Fields {
			if fd.Name == "worker" {
				return fd.Options
			}
		}
		return nil
	}
	assert.Equal(t, []string{"w-pay"}, press(chan1))
	// An unbound channel, the target picked in the form: every worker.
	f, err := bot.FormRefresherOf(h.eng).RefreshForm(h.ctx, chan2, "run prune", map[string]string{"target": "infra-prd"})
	require.NoError(t, err)
	assert.Equal(t, []string{"w-global", "w-ok", "w-pay", "w-plat"}, f.Fields[1].Options)
}

// A target that cannot be read does not hide anything: what the channel
// may not change is still refused when a step would change it.
func TestOffers_AnUnreadableTargetHidesNothing(t *testing.T) {
	h := offersHarness(t)
	h.world.WorkersDown = errors.New("connection refused")
	h.cmdIn(chan3, alice, "list")
	assert.Contains(t, lastReply(h, alice), "• `prune`")
	assert.NotContains(t, lastReply(h, alice), "Not offered")
}

func (h *harness) runs() []*runmodel.Run {
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(h.t, err)
	return runs
}
