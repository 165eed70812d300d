package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroundcrewVoteCastTwoWays (#35.2), against a real Mattermost with the
// real binary: the prune needs 2 approvals from @ci-oncall. carol approves
// by ✅ and by the Approve button, then takes the reaction back: her
// approval still counts (cast by button too). dave approves: the gate is
// approved by both, and the re-check right before the prune counts the
// same two approvals — the worker is pruned once, nothing is voided or
// asked again.
func TestGroundcrewVoteCastTwoWays(t *testing.T) {
	requireBuiltins(t, groundcrewBinary(t))
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice, carol, dave := w.Users["alice"], w.Users["carol"], w.Users["dave"]
	createOncall(ctx, t, w, carol, dave)
	sim := e2eSim(t)
	cfgPath, listen := writeGroundcrewConfig(t, w, sim, "approvals:\n  default: {approvers: [\"group:ci-oncall\"], required: 2, expires: 30m}\n")
	gc := startGroundcrewWith(t, cfgPath, listen)
	waitCommand(ctx, t, w)

	worker, since := workerPrefix+"0", time.Now()
	_, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook run prune-stalled target="+targetName+" worker="+worker)
	require.NoError(t, err)
	root := findRunRoot(ctx, t, w, dave, since, "prune-stalled", worker)
	gate := findGate(ctx, t, dave, root.Id)
	thread := func() string { return threadText(ctx, t, dave, root.Id) }

	react(ctx, t, carol, gate.Id, "white_check_mark")
	eventually(t, 20*time.Second, "carol's ✅ on the gate", func() bool { return strings.Contains(thread(), "@carol ✅ approved") }, thread)
	clickAs(ctx, t, carol, gate.Id, "Approve")
	eventually(t, 20*time.Second, "carol's press added to her reaction's vote", func() bool {
		return strings.Contains(gc.runs(), `"also_via"`)
	}, gc.runs)
	_, err = carol.DeleteReaction(ctx, &model.Reaction{UserId: carol.User.Id, PostId: gate.Id, EmojiName: "white_check_mark"})
	require.NoError(t, err)
	eventually(t, 20*time.Second, "the removed reaction leaving the button's vote", func() bool {
		return strings.Contains(gc.runs(), "approval still counted (cast by button too)")
	}, gc.runs)
	assert.Contains(t, thread(), "@carol ✅ approved", "carol's approval still counts on the gate")
	_, stillThere := sim.Worker(worker)
	require.True(t, stillThere, "one approval of two prunes nothing:\n%s", thread())

	clickAs(ctx, t, dave, gate.Id, "Approve")
	waitPruned(ctx, t, sim, dave, root.Id, worker)
	waitRoot(ctx, t, dave, root.Id, "succeeded")
	txt := thread()
	assert.NotContains(t, txt, "no longer counts", "nothing counted on the gate is voided at the re-check")
	assert.NotContains(t, txt, "is asked again")
	prunes := 0
	for _, c := range sim.Calls() {
		if c.Method == "PUT" && strings.HasSuffix(strings.SplitN(c.Path, "?", 2)[0], "/prune") && c.Status < 300 {
			prunes++
		}
	}
	assert.Equal(t, 1, prunes, "pruned once")
}
