package slack

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	slackapi "github.com/slack-go/slack"
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

// A Slack channel bound to a team (channels: "#runbooks" → payments): a
// slash command naming another team is refused without naming it, and
// the run form (a modal) offers only the channel's pipelines and teams;
// the unbound #ci-ops is offered all of them.
func TestE2E_ABoundChannel(t *testing.T) {
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
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	db, err := store.Open(filepath.Join(t.TempDir(), "groundcrew.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	prov, err := concourse.NewProvider(map[string]*concourse.Client{"infra-prd": cc}, concourse.ProviderOptions{})
	require.NoError(t, err)
	reg, err := opmodel.NewRegistry(prov)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "test", FS: fstest.MapFS{"pause.yaml": {Data: []byte(pauseRunbook)}}})
	require.NoError(t, err)
	eng, err := bot.New(bot.Options{
		Store: db, Chat: a, Capabilities: bot.CapabilitiesOf(db, a), Ops: reg, Library: lib, Platform: Platform, Logger: testLogger(t),
		Targets: map[string]bot.TargetInfo{"infra-prd": {Team: "main"}},
		Approvals: policy.Config{Channels: policy.Channels{Bindings: map[string]policy.Binding{
			"#runbooks": {Targets: []string{"infra-prd"}, Teams: []string{"payments"}},
		}}},
	})
	require.NoError(t, err)
	in := httpInbound{h: a.HTTPHandler()}
	runAdapter(t, a, loggingHandler{t, eng})
	ctx := context.Background()
	command := func(channel, text, trigger string) {
		fields := slashFields("UALICE", "alice", text, trigger)
		fields["channel_id"], fields["channel_name"] = channel, strings.TrimPrefix(channel, "C0")
		in.command(t, fields)
		require.NoError(t, eng.WaitIdle(ctx))
	}

	command("C0RUN", "run pause target=infra-prd team=platform pipeline=api", "trig-1")
	var refusal string
	require.Eventually(t, func() bool {
		for _, m := range f.messages() {
			texts, _ := blockTexts(m)
			if text := strings.Join(append(texts, m.Text), "\n"); m.Ephemeral && m.User == "UALICE" && strings.Contains(text, "may act only on") {
				refusal = text
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "refused:\n%s", transcript(f))
	assert.Contains(t, refusal, "This channel (`channels.#runbooks`) may act only on team `payments` on `infra-prd`, and the command names another team")
	assert.NotContains(t, refusal, "platform")
	p, _ := sim.Pipeline("platform", "api")
	assert.False(t, p.Paused)

	options := func(trigger string) []string {
		t.Helper()
		var view slackapi.ModalViewRequest
		require.Eventually(t, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, v := range f.views {
				if v.Trigger == trigger {
					return json.Unmarshal([]byte(v.View), &view) == nil
				}
			}
			return false
		}, 10*time.Second, 10*time.Millisecond)
		var out []string
		for _, b := range view.Blocks.BlockSet {
			in, ok := b.(*slackapi.InputBlock)
			if !ok {
				continue
			}
			if sel, ok := in.Element.(*slackapi.SelectBlockElement); ok {
				for _, o := range sel.Options {
					out = append(out, in.Label.Text+"="+o.Value)
				}
			}
		}
		return out
	}
	command("C0RUN", "run pause", "trig-form")
	got := options("trig-form")
	assert.ElementsMatch(t, []string{"pipeline=payments/api", "pipeline=payments/ledger", "team=payments"}, got)

	command("C0OPS", "run pause", "trig-ops")
	got = options("trig-ops")
	assert.Contains(t, got, "pipeline=platform/api", "an unbound channel keeps everything")
	assert.Contains(t, got, "team=platform")
}
