package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestGroundcrewRecheckVotes (#22.1), against a real Mattermost with the
// real binary: the prune needs 2 approvals from @ci-oncall (a private
// channel). carol approves, then leaves the channel (or her account is
// deactivated); dave's approval completes the quorum, but right before the
// prune every counted vote is checked again with the server asked afresh:
// carol's approval is voided, nothing is pruned, the gate says why and
// asks again; erin's approval then prunes.
func TestGroundcrewRecheckVotes(t *testing.T) {
	requireBuiltins(t, groundcrewBinary(t))
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	alice, carol, dave := w.Users["alice"], w.Users["carol"], w.Users["dave"]
	var err error
	more := map[string]*mmUser{}
	for _, name := range []string{"erin", "frank"} {
		u := createUser(ctx, t, srv.URL, name)
		_, _, err = w.Admin.AddTeamMember(ctx, w.Team.Id, u.User.Id)
		require.NoError(t, err)
		_, _, err = w.Admin.AddChannelMember(ctx, w.Channel.Id, u.User.Id)
		require.NoError(t, err)
		more[name] = u
	}
	erin, frank := more["erin"], more["frank"]
	createOncall(ctx, t, w, carol, dave, erin, frank)
	oncall, _, err := w.Admin.GetChannelByName(ctx, "ci-oncall", w.Team.Id, "")
	require.NoError(t, err)
	sim := e2eSim(t)
	cfgPath, listen := writeGroundcrewConfig(t, w, sim, "approvals:\n  default: {approvers: [\"group:ci-oncall\"], required: 2, expires: 30m}\n")
	startGroundcrewWith(t, cfgPath, listen)
	waitCommand(ctx, t, w)

	cases := []struct {
		change               string
		first, second, third *mmUser
	}{
		{"left the group", carol, dave, erin},
		{"deactivated", erin, frank, dave},
	}
	for i, c := range cases {
		t.Run(c.change, func(t *testing.T) {
			worker, since := workerPrefix+[]string{"0", "1"}[i], time.Now()
			_, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook run prune-stalled target="+targetName+" worker="+worker)
			require.NoError(t, err)
			root := findRunRoot(ctx, t, w, dave, since, "prune-stalled", worker)
			gate := findGate(ctx, t, dave, root.Id)
			name := "@" + c.first.User.Username
			react(ctx, t, c.first, gate.Id, "white_check_mark")
			eventually(t, 20*time.Second, name+"'s approval on the gate", func() bool {
				return strings.Contains(threadText(ctx, t, dave, root.Id), name+" ✅ approved")
			}, func() string { return threadText(ctx, t, dave, root.Id) })

			want := name + "'s approval no longer counts: not in @ci-oncall any more"
			if c.change == "deactivated" {
				_, err = w.Admin.UpdateUserActive(ctx, c.first.User.Id, false)
				want = name + "'s approval no longer counts: the account is deactivated"
			} else {
				_, err = w.Admin.RemoveUserFromChannel(ctx, oncall.Id, c.first.User.Id)
			}
			require.NoError(t, err)

			react(ctx, t, c.second, gate.Id, "white_check_mark")
			eventually(t, 30*time.Second, "the gate asking again", func() bool {
				txt := threadText(ctx, t, dave, root.Id)
				return strings.Contains(txt, want) && strings.Contains(txt, "is asked again")
			}, func() string { return threadText(ctx, t, dave, root.Id) })
			waitRoot(ctx, t, dave, root.Id, "waiting for approval")
			_, stillThere := sim.Worker(worker)
			require.True(t, stillThere, "nothing pruned on a stale quorum:\n%s", threadText(ctx, t, dave, root.Id))

			react(ctx, t, c.third, gate.Id, "white_check_mark")
			waitPruned(ctx, t, sim, dave, root.Id, worker)
			waitRoot(ctx, t, dave, root.Id, "succeeded")
		})
	}
}
