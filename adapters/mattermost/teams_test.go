package mattermost

import (
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

const pauseRunbook = `
name: pause
title: Pause a pipeline
description: test
params:
  - name: pipeline
    required: true
    choices: pipelines
  - name: team
    choices: teams
    default: ""
steps:
  - id: pause
    kind: action
    op: concourse.pause_pipeline
    args: {pipeline: "{{ .params.pipeline }}", team: "{{ .params.team }}"}
`

// A Mattermost channel bound to team payments (by its id): a command
// naming another team is refused in the command's answer without naming
// it, and the run dialog offers only payments' pipelines and teams.
func TestBoundChannel_RefusesAnotherTeamAndOffersOnlyItsOwn(t *testing.T) {
	world := concoursesim.NewWorld().
		AddPipeline(concoursesim.Pipeline{Name: "api", Team: "payments"}).
		AddPipeline(concoursesim.Pipeline{Name: "ledger", Team: "payments"}).
		AddPipeline(concoursesim.Pipeline{Name: "api", Team: "platform"})
	sim, err := concoursesim.New(*world)
	require.NoError(t, err)
	t.Cleanup(sim.Close)
	cc, err := concourse.New(concourse.TargetConfig{Name: "infra-prd", URL: sim.URL(), Username: "admin", Password: "admin"},
		concourse.WithHTTPClient(sim.Client()))
	require.NoError(t, err)
	prov, err := concourse.NewProvider(map[string]*concourse.Client{"infra-prd": cc}, concourse.ProviderOptions{})
	require.NoError(t, err)
	reg, err := opmodel.NewRegistry(prov)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{"pause.yaml": {Data: []byte(pauseRunbook)}}})
	require.NoError(t, err)
	db, err := store.Open(filepath.Join(t.TempDir(), "groundcrew.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	eng, err := bot.New(bot.Options{
		Store: db, Chat: a, Capabilities: bot.CapabilitiesOf(db, a), Ops: reg, Library: lib, Platform: Platform,
		Targets: map[string]bot.TargetInfo{"infra-prd": {Team: "main"}},
		Approvals: policy.Config{Channels: policy.Channels{Bindings: map[string]policy.Binding{
			channelID: {Targets: []string{"infra-prd"}, Teams: []string{"payments"}},
		}}},
	})
	require.NoError(t, err)
	runAdapter(t, a, eng)

	_, resp := postCommand(t, a, commandForm(cmdToken, "run pause target=infra-prd team=platform pipeline=api"), nil)
	assert.Contains(t, resp.Text, "may act only on team `payments` on `infra-prd`, and the command names another team")
	assert.NotContains(t, resp.Text, "platform")
	p, _ := sim.Pipeline("platform", "api")
	assert.False(t, p.Paused)

	form := commandForm(cmdToken, "run pause")
	form.Set("trigger_id", "trigger-2") // another command (the engine drops a redelivered one)
	_, resp = postCommand(t, a, form, nil)
	require.Eventually(t, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.dialogs) == 1
	}, 5*time.Second, 10*time.Millisecond, "dialog opened; the answer: %q", resp.Text)
	f.mu.Lock()
	d := f.dialogs[0]
	f.mu.Unlock()
	options := map[string][]string{}
	for _, el := range d.Dialog.Elements {
		for _, o := range el.Options {
			options[el.Name] = append(options[el.Name], o.Value)
		}
	}
	assert.Equal(t, map[string][]string{"pipeline": {"payments/api", "payments/ledger"}, "team": {"payments"}}, options)
}
