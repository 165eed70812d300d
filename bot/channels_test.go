package bot_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// chan1 (C1) is #payments-ci, bound to team payments on infra-prd; C2 is
// #ops, unbound.
func withBindings(def string) func(*bot.Options) {
	return func(o *bot.Options) {
		withTargetTeam("main")(o)
		o.Targets["infra-stg"] = bot.TargetInfo{Team: "main"}
		o.Approvals = policy.Config{Channels: policy.Channels{Default: def, Bindings: map[string]policy.Binding{
			"#payments-ci": {Targets: []string{"infra-prd"}, Teams: []string{"payments"}},
		}}}
	}
}

var chan2 = chatmodel.Conversation{Platform: "test", Channel: "C2"}

func channelHarness(t *testing.T, def string) *harness {
	h := newHarness(t, teamWorld(), withBindings(def))
	h.chat.Channels = map[string]string{"#payments-ci": "C1", "#ops": "C2"}
	return h
}

func (h *harness) cmdIn(conv chatmodel.Conversation, u chatmodel.User, text string) {
	require.NoError(h.t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: u, Conversation: conv, Text: text}))
	h.idle()
}

func lastReply(h *harness, u chatmodel.User) string {
	rs := h.chat.Ephemerals(u.ID)
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1]
}

func TestChannels_ABoundChannelNamingAnotherTeamIsRefused(t *testing.T) {
	h := channelHarness(t, "")
	h.cmd(alice, "run teamtouch target=infra-prd team=platform")
	reply := lastReply(h, alice)
	assert.Contains(t, reply, "This channel (`channels.#payments-ci`) may act only on team `payments` on `infra-prd`, and the command names another team")
	assert.NotContains(t, reply, "platform", "another team's name is not echoed")
	h.cmd(alice, "run teamtouch target=infra-stg team=payments")
	assert.Contains(t, lastReply(h, alice), "may act only on team `payments` on `infra-prd`: run it there")
	assert.Equal(t, 0, h.world.CallCount("fake.touch"))
	audit, err := h.db.AuditEntries(h.ctx, "")
	require.NoError(t, err)
	require.Len(t, audit, 2)
	assert.Equal(t, runmodel.ActionRunRefused, audit[0].Action)
	assert.Equal(t, []string{"platform"}, audit[0].Teams, "the audit names it")

	// Its own team: runs, scoped; the target is the only one it may use.
	h.cmd(alice, "run teamtouch team=payments")
	assert.Equal(t, 1, h.world.CallCount("fake.touch"), h.chat.Transcript())
	assert.Equal(t, []string{"payments"}, h.world.ScopeOf("fake.touch"), "the call is scoped to the channel's teams")
	r := h.onlyRun()
	assert.Equal(t, &runmodel.ChannelScope{Key: "#payments-ci", Targets: []string{"infra-prd"}, Teams: []string{"payments"}}, r.Scope)

	// An unbound channel keeps today's behaviour.
	h.cmdIn(chan2, bob, "run teamtouch target=infra-stg team=platform")
	assert.Equal(t, 2, h.world.CallCount("fake.touch"), h.chat.Transcript())
	assert.Nil(t, h.world.ScopeOf("fake.touch"))
}

// A plan that turns out to touch things of no team (a global worker) or
// of another team, from a team's channel, is refused before any approval,
// without naming the other team.
func TestChannels_APlanBeyondTheChannelsTeamsIsRefused(t *testing.T) {
	h := channelHarness(t, "")
	h.cmd(alice, "run prune target=infra-prd")
	h.react(bob, h.stepRef("check"), chatmodel.IntentDone)
	r := h.onlyRun()
	require.Equal(t, runmodel.RunFailed, r.State, h.chat.Transcript())
	assert.Nil(t, r.Gate)
	assert.Contains(t, r.Step("prune").Error, "this channel (`channels.#payments-ci`) may change only the things of team `payments` on `infra-prd`; the plan touches another team's and things of no team")
	assert.NotContains(t, h.chat.Transcript(), "platform")
	assert.Equal(t, []string{"payments"}, h.world.ScopeOf("fake.prune"))
	assert.Equal(t, 0, h.world.CallCount("fake.prune"))
}

func TestChannels_DefaultDenyRefusesUnboundChannels(t *testing.T) {
	h := channelHarness(t, policy.ChannelsDeny)
	h.cmdIn(chan2, bob, "run teamtouch target=infra-prd team=payments")
	assert.Contains(t, lastReply(h, bob), "This channel may not run runbooks: it is not bound under `channels:`")
	assert.Equal(t, 0, h.world.CallCount("fake.touch"))
	h.cmdIn(chan2, bob, "list")
	assert.True(t, strings.HasPrefix(lastReply(h, bob), "⛔ This channel may not run runbooks"), lastReply(h, bob))
	assert.NotContains(t, lastReply(h, bob), "`prune`", "it may run none: none is listed")
	h.cmd(alice, "list")
	assert.True(t, strings.HasPrefix(lastReply(h, alice), "📌 This channel acts on team `payments` on `infra-prd` (`channels.#payments-ci`)."), lastReply(h, alice))
	h.cmd(alice, "help")
	assert.NotContains(t, lastReply(h, alice), "infra-stg", "help lists only the channel's targets")
}

// A bound name the platform cannot be asked about now: the command is
// refused, never run with an unbound channel's rights.
func TestChannels_UnresolvedBindingFailsClosed(t *testing.T) {
	h := channelHarness(t, "")
	h.chat.ChannelsErr = errors.New("slack is down")
	err := h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventCommand, User: bob, Conversation: chan2, Text: "run teamtouch target=infra-prd team=platform"})
	require.Error(t, err, "logged by the adapter")
	h.idle()
	assert.Contains(t, lastReply(h, bob), "❌ Could not start the run: could not tell whether this channel is bound under channels: (#payments-ci: slack is down); try again in a minute")
	assert.Equal(t, 0, h.world.CallCount("fake.touch"))
	h.chat.ChannelsErr = nil
	h.cmdIn(chan2, bob, "run teamtouch target=infra-prd team=platform")
	assert.Equal(t, 1, h.world.CallCount("fake.touch"))
}

// Where an operator looks at a run — its status, its summary, the
// post-mortem Markdown — says the channel binding it was scoped to and
// the teams its changes concern; a run of one team from an unbound
// channel says nothing new.
func TestChannels_ARunSaysItsBindingAndTeams(t *testing.T) {
	h := channelHarness(t, "")
	h.cmd(alice, "run teamtouch team=payments")
	r := h.onlyRun()
	require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
	assert.Equal(t, []string{"payments"}, r.Teams())
	want := "📌 `#payments-ci` (bound to team `payments` on `infra-prd`) · changes of team `payments`"
	h.cmd(alice, "status "+r.ID)
	assert.Contains(t, lastReply(h, alice), "\n"+want+"\n")
	h.cmd(alice, "summary "+r.ID)
	sum, ok := h.chat.Find("📋 *Summary*")
	require.True(t, ok, h.chat.Transcript())
	assert.Contains(t, sum.Msg.Text, "\n"+want)
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	md := bot.RunMarkdown(r, j)
	assert.Contains(t, md, "- **Channel:** `#payments-ci`, bound to team `payments` on `infra-prd`: the run read and changed only that\n")
	assert.Contains(t, md, "- **Teams:** `payments` (whose things its changes concern)\n")

	// Unbound, the target's own team: nothing new anywhere.
	h.cmdIn(chan2, bob, "run teamtouch target=infra-stg team=main")
	runs := h.runs()
	var own *runmodel.Run
	for _, x := range runs {
		if x.ID != r.ID {
			own = x
		}
	}
	require.NotNil(t, own)
	h.cmdIn(chan2, bob, "status "+own.ID)
	assert.NotContains(t, lastReply(h, bob), "📌")
	// Another team than the target's own, unbound: status says it; the
	// chat summary leaves it to its changes.
	h.cmdIn(chan2, bob, "run teamtouch target=infra-stg team=platform")
	var other *runmodel.Run
	for _, x := range h.runs() {
		if x.ID != r.ID && x.ID != own.ID {
			other = x
		}
	}
	require.NotNil(t, other)
	h.cmdIn(chan2, bob, "status "+other.ID)
	assert.Contains(t, lastReply(h, bob), "\n📌 changes of team `platform`\n")
}

// A channel bound to teams is shown its own runs only: another channel's
// run of every team (or of no team yet) is counted, never named, in
// `/runbook status`, and its status and summary are not shown there.
func TestChannels_ABoundChannelIsShownItsOwnRuns(t *testing.T) {
	h := channelHarness(t, "")
	h.cmdIn(chan2, bob, "run prune target=infra-prd")
	h.cmd(alice, "run prune worker=w-pay")
	var mine, other string
	for _, r := range h.runs() {
		if r.Requester.ID == bob.ID {
			other = r.ID
		} else {
			mine = r.ID
		}
	}
	require.NotEmpty(t, mine, h.chat.Transcript())
	require.NotEmpty(t, other)

	h.cmd(alice, "status")
	st := lastReply(h, alice)
	assert.Contains(t, st, "*1 active run*")
	assert.Contains(t, st, mine)
	assert.NotContains(t, st, other)
	assert.Contains(t, st, "1 other active run is not this channel's (other teams or targets).")
	h.cmd(alice, "status "+other)
	assert.Equal(t, "Run `"+other+"` is not this channel's: it acts on another team's things or another target. Follow it where it was started.", lastReply(h, alice))
	h.cmd(alice, "summary "+other)
	assert.Contains(t, lastReply(h, alice), "is not this channel's")

	// The unbound channel sees both.
	h.cmdIn(chan2, bob, "status")
	assert.Contains(t, lastReply(h, bob), mine)
	assert.Contains(t, lastReply(h, bob), other)
}

type digestRecorder struct {
	mu    sync.Mutex
	calls []string
}

func (d *digestRecorder) DigestNow(_ context.Context, target string, teams []string, _ chatmodel.Conversation) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, target+" "+strings.Join(teams, ","))
	return nil
}

// /runbook digest in a channel bound to teams is a digest of its target
// and teams only; another target is refused.
func TestChannels_ADigestAskedInABoundChannelIsOfItsTeams(t *testing.T) {
	rec := &digestRecorder{}
	h := newHarness(t, teamWorld(), func(o *bot.Options) {
		withBindings("")(o)
		o.Digests = rec
	})
	h.chat.Channels = map[string]string{"#payments-ci": "C1", "#ops": "C2"}
	h.cmd(alice, "digest")
	h.cmd(alice, "digest infra-stg")
	assert.Contains(t, lastReply(h, alice), "may act only on team `payments` on `infra-prd`")
	h.cmdIn(chan2, bob, "digest infra-stg")
	h.idle()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Equal(t, []string{"infra-prd payments", "infra-stg "}, rec.calls)
}
