package bot

import (
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/stretchr/testify/assert"
)

var tBob = chatmodel.User{ID: "U2", Name: "bob"}

func TestGate_OneVotePerPerson(t *testing.T) {
	g := &runmodel.Gate{Policy: runmodel.Policy{Required: 2}}
	g.CastVote(runmodel.Vote{User: tBob, Approve: true})
	g.CastVote(runmodel.Vote{User: tBob, Approve: true, Via: "button"})
	assert.Len(t, g.Votes, 1)
	assert.Equal(t, runmodel.GatePending, Decide(g, time.Now()))
	assert.Equal(t, "1 more approval", Missing(g))
	g.CastVote(runmodel.Vote{User: tBob, Approve: false})
	_, _, ok := g.Withdraw("U2", false, runmodel.ViaReaction)
	assert.False(t, ok, "a removed reaction withdraws only a vote cast by a reaction")
	assert.Equal(t, runmodel.GateRejected, Decide(g, time.Now()), "changing one's mind replaces the vote")
	_, withdrawn, ok := g.Withdraw("U2", false, "")
	assert.True(t, ok)
	assert.True(t, withdrawn)
	assert.Empty(t, g.Votes)
}

func TestGate_VoteKeepsItsChannels(t *testing.T) {
	g := &runmodel.Gate{Policy: runmodel.Policy{Required: 2}}
	g.CastVote(runmodel.Vote{User: tBob, Approve: true, Via: runmodel.ViaCommand})
	g.CastVote(runmodel.Vote{User: tBob, Approve: true, Via: runmodel.ViaReaction})
	g.CastVote(runmodel.Vote{User: tBob, Approve: true, Via: runmodel.ViaReaction})
	assert.Len(t, g.Votes, 1)
	assert.Equal(t, runmodel.ViaCommand, g.Votes[0].Via)
	assert.Equal(t, []runmodel.VoteVia{runmodel.ViaReaction}, g.Votes[0].AlsoVia)
	_, withdrawn, ok := g.Withdraw("U2", true, runmodel.ViaReaction)
	assert.True(t, ok)
	assert.False(t, withdrawn, "the vote cast by command stands")
	assert.Equal(t, runmodel.Vote{User: tBob, Approve: true, Via: runmodel.ViaCommand}, g.Votes[0])
	_, _, ok = g.Withdraw("U2", true, runmodel.ViaReaction)
	assert.False(t, ok, "the reaction was already taken back")

	g.CastVote(runmodel.Vote{User: tBob, Approve: false, Via: runmodel.ViaReaction})
	assert.Equal(t, runmodel.Vote{User: tBob, Approve: false, Via: runmodel.ViaReaction}, g.Votes[0], "a vote the other way replaces it")
}

func TestPlanHash_BindsIdentityNotDetail(t *testing.T) {
	a := opmodel.Plan{Op: "concourse.prune_worker", Target: "infra-prd", Items: []opmodel.PlanItem{{Kind: "worker", ID: "w-0", Attrs: map[string]string{"state": "stalled"}, Detail: "41 min ago"}}}
	b := a
	b.Items = []opmodel.PlanItem{{Kind: "worker", ID: "w-0", Attrs: map[string]string{"state": "stalled"}, Detail: "43 min ago"}}
	b.Summary = "different words"
	assert.Equal(t, a.Hash(), b.Hash())
	c := a
	c.Items = []opmodel.PlanItem{{Kind: "worker", ID: "w-0", Attrs: map[string]string{"state": "running"}}}
	assert.NotEqual(t, a.Hash(), c.Hash())
	d := a
	d.Target = "infra-stg"
	assert.NotEqual(t, a.Hash(), d.Hash())
	assert.Contains(t, opmodel.PlanDiff(&a, &c), "state stalled→running")
}
