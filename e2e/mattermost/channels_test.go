package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// TestGroundcrewBoundChannel: the real `groundcrew serve` on Mattermost
// 11.1 with `channels: {"#payments-ci": {teams: [payments]}}` — the bound
// name resolved to the channel's id through the server. In #payments-ci a
// command naming another Concourse team is refused without naming it, and
// the run dialog lists only payments' pipelines; in the unbound ci-ops
// the same dialog lists every team's.
func TestGroundcrewBoundChannel(t *testing.T) {
	requireBuiltins(t, groundcrewBinary(t))
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice, carol := w.Users["alice"], w.Users["carol"]
	createOncall(ctx, t, w, alice, carol)
	payments, _, err := w.Admin.CreateChannel(ctx, &model.Channel{TeamId: w.Team.Id, Name: "payments-ci", DisplayName: "Payments CI", Type: model.ChannelTypeOpen})
	require.NoError(t, err)
	for _, id := range []string{w.BotUser.Id, alice.User.Id} {
		_, _, err = w.Admin.AddChannelMember(ctx, payments.Id, id)
		require.NoError(t, err)
	}

	world := concoursesim.NewWorld().
		AddUser("groundcrew", "groundcrew-pass", map[string]string{"main": concoursesim.RoleOwner}).
		AddPipeline(concoursesim.Pipeline{Team: "payments", Name: "api", Jobs: []concoursesim.Job{{Name: "deploy"}}}).
		AddPipeline(concoursesim.Pipeline{Team: "payments", Name: "ledger", Jobs: []concoursesim.Job{{Name: "deploy"}}}).
		AddPipeline(concoursesim.Pipeline{Team: "platform", Name: "api", Jobs: []concoursesim.Job{{Name: "deploy"}}})
	sim, err := concoursesim.New(*world, concoursesim.WithTSA())
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	cfgPath, listen := writeGroundcrewConfig(t, w, sim, defaultApprovals+`channels:
  "#payments-ci": {targets: [`+targetName+`], teams: [payments]}
`)
	startGroundcrewWith(t, cfgPath, listen)
	waitCommand(ctx, t, w)
	forms := listenForms(t, srv.URL, alice)

	resp, err := alice.runCommand(ctx, payments.Id, "", "/runbook run pause-pipeline target="+targetName+" pipeline=platform/api")
	require.NoError(t, err)
	refusal := resp.Text
	if !strings.Contains(refusal, "may act only on") {
		refusal = forms.ephemeralWith(t, "may act only on").Message
	}
	assert.Contains(t, refusal, "This channel (`channels.#payments-ci`) may act only on team `payments` on `"+targetName+"`, and the command names another team")
	assert.NotContains(t, refusal, "platform")
	p, _ := sim.Pipeline("platform", "api")
	assert.False(t, p.Paused, "nothing was paused")

	_, err = alice.runCommand(ctx, payments.Id, "", "/runbook run pause-pipeline target="+targetName)
	require.NoError(t, err)
	d := forms.dialog(t)
	assert.Equal(t, []string{"payments/api", "payments/ledger"}, optionValues(element(t, d.Dialog, "pipeline")), "only the channel's team")

	_, err = alice.runCommand(ctx, w.Channel.Id, "", "/runbook run pause-pipeline target="+targetName)
	require.NoError(t, err)
	d = forms.dialog(t)
	assert.Equal(t, []string{"payments/api", "payments/ledger", "platform/api"}, optionValues(element(t, d.Dialog, "pipeline")), "an unbound channel: every team")
}
