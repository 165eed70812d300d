package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroundcrewChatEdges (#22.4), against a real Mattermost with the real
// binary:
//   - an approver group with a typo fails `config check` and `serve` with a
//     did-you-mean (the team is looked up at check time);
//   - a refused voter (dave, not on call) who reacts ✅ and 👍 gets one
//     refusal post in the thread, not two;
//   - once the gate executed, the run summary names dave, never his raw id.
func TestGroundcrewChatEdges(t *testing.T) {
	requireBuiltins(t, groundcrewBinary(t))
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	alice, carol, dave := w.Users["alice"], w.Users["carol"], w.Users["dave"]
	createOncall(ctx, t, w, alice, carol)
	sim := e2eSim(t)
	bin := groundcrewBinary(t)

	t.Run("a group typo fails config check and serve with did-you-mean", func(t *testing.T) {
		cfgPath, _ := writeGroundcrewConfig(t, w, sim, "approvals:\n  default: {approvers: [\"group:ci-oncal\"], required: 1}\n")
		for _, args := range [][]string{{"config", "check", "--config", cfgPath}, {"serve", "--config", cfgPath}} {
			cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
			out, err := exec.CommandContext(cctx, bin, args...).CombinedOutput()
			ccancel()
			require.Error(t, err, "%v accepted the typo:\n%s", args, out)
			assert.Contains(t, string(out), `no group "ci-oncal" on the chat platform; did you mean "ci-oncall"?`, "%v:\n%s", args, out)
		}
		cfgPath, _ = writeGroundcrewConfig(t, w, sim, defaultApprovals)
		out, err := exec.CommandContext(ctx, bin, "config", "check", "--config", cfgPath).CombinedOutput()
		require.NoError(t, err, "the right group name passes:\n%s", out)
		assert.NotContains(t, string(out), "not fully checked", "the group was resolved at check time")
	})

	cfgPath, listen := writeGroundcrewConfig(t, w, sim, defaultApprovals)
	startGroundcrewWith(t, cfgPath, listen)
	waitCommand(ctx, t, w)

	worker, since := workerPrefix+"0", time.Now()
	_, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook run worker-stalled target="+targetName+" worker=0")
	require.NoError(t, err)
	root := findRunRoot(ctx, t, w, carol, since, "worker-stalled", worker)
	react(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Connect to "+worker).Id, "x")
	react(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Restart the VM of "+worker).Id, "next_track_button")
	react(ctx, t, carol, findManual(ctx, t, carol, root.Id, "Rebuild "+worker).Id, "next_track_button")
	gate := findGate(ctx, t, carol, root.Id)

	// dave is not on call: ✅ then 👍 — one refusal post.
	react(ctx, t, dave, gate.Id, "white_check_mark")
	react(ctx, t, dave, gate.Id, "+1")
	refusals := func() int {
		posts, err := threadPosts(ctx, carol.Client4, root.Id)
		require.NoError(t, err)
		n := 0
		for _, p := range posts {
			if p.UserId == w.BotUser.Id && strings.HasPrefix(p.Message, "@dave ") && strings.Contains(p.Message, "not counted") {
				n++
			}
		}
		return n
	}
	eventually(t, 20*time.Second, "dave's refusal in the thread", func() bool { return refusals() > 0 },
		func() string { return threadText(ctx, t, carol, root.Id) })
	// The 👍 is handled after the ✅ (one event queue): give it time to
	// (wrongly) post, then count.
	time.Sleep(3 * time.Second)
	assert.Equal(t, 1, refusals(), "one refusal post per person and gate:\n%s", threadText(ctx, t, carol, root.Id))
	_, stillThere := sim.Worker(worker)
	require.True(t, stillThere, "a refused vote prunes nothing")

	react(ctx, t, carol, gate.Id, "white_check_mark")
	waitPruned(ctx, t, sim, carol, root.Id, worker)
	waitRoot(ctx, t, carol, root.Id, "succeeded")
	eventually(t, 30*time.Second, "the run summary naming dave's refused vote", func() bool {
		txt := threadText(ctx, t, carol, root.Id)
		return strings.Contains(txt, "`/runbook summary r-") && strings.Contains(txt, "@dave's approval was not counted")
	}, func() string { return threadText(ctx, t, carol, root.Id) })
	txt := threadText(ctx, t, carol, root.Id)
	assert.NotContains(t, txt, dave.User.Id, "dave is never shown by raw id:\n%s", txt)
}
