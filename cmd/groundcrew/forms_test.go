package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// TestServe_ConsoleAsksMissingParameters: `/runbook run` without a
// required parameter asks for it on the console, one question at a time;
// the answers submit the command as if typed in full.
func TestServe_ConsoleAsksMissingParameters(t *testing.T) {
	say, waitFor, out := consoleSession(t)
	say("/runbook run pause-pipeline target=infra-prd")
	waitFor("📝 Run pause-pipeline: 1 required parameter missing; answer each (or /cancel).")
	waitFor("pipeline — pipeline name, or team/pipeline (one of: deploy/caascad-alert-prepare, main/app, main/docs)?")
	say("two words")
	waitFor("pipeline: a value cannot contain spaces")
	say("/cancel")
	waitFor("form cancelled: nothing was started")

	say("/runbook run pause-pipeline target=infra-prd")
	say("main/ci")
	waitFor(`pipeline: "main/ci" is not one of deploy/caascad-alert-prepare, main/app, main/docs; try again`)
	say("main/app")
	waitFor("→ /runbook run pause-pipeline target=infra-prd pipeline=main/app")
	waitFor("🛠 pause-pipeline on `infra-prd` — started by @alice")
	waitFor("Pause main/app") // the answer is the run's parameter
	assert.NotContains(t, out.String(), "missing required parameter")
}

// TestServe_ConsoleFormTakesWhatIsTyped: a command typed while a form asks
// its questions is that command, not an answer refused for its spaces (the
// form is dropped, saying so); worker-provisioning-check, for a worker not
// registered yet, asks it as free text, not among the registered ones.
func TestServe_ConsoleFormTakesWhatIsTyped(t *testing.T) {
	say, waitFor, out := consoleSession(t)
	say("/runbook run pause-pipeline target=infra-prd")
	waitFor("pipeline — pipeline name, or team/pipeline")
	say("/runbook run worker-provisioning-check target=infra-prd")
	waitFor("Run pause-pipeline: form dropped for the new command (nothing was started)")
	waitFor("worker — the new worker")
	say("9")
	waitFor("→ /runbook run worker-provisioning-check target=infra-prd worker=9")
	waitFor("🛠 worker-provisioning-check on `infra-prd` — started by @alice")
	assert.NotContains(t, out.String(), "a value cannot contain spaces")
	assert.NotContains(t, out.String(), "is not one of")
}

// TestServe_FormOffersLiveChoices: a parameter that names a pipeline
// (choices: pipelines) is asked for with the target's pipelines, read live
// from it (the simulator); a target that cannot be read leaves free text.
func TestServe_FormOffersLiveChoices(t *testing.T) {
	say, waitFor, _ := consoleSession(t)
	say("/runbook run pause-pipeline target=infra-prd")
	waitFor("pipeline — pipeline name, or team/pipeline (one of: deploy/caascad-alert-prepare, main/app, main/docs)?")
}

// TestServe_ConsoleAsksAgainForAValueTheRunbookRefuses: a value that does
// not match its parameter's pattern ended the questions with the engine's
// refusal (the whole command had to be typed again); it is refused at its
// question, with the same check a typed command gets, and asked again.
func TestServe_ConsoleAsksAgainForAValueTheRunbookRefuses(t *testing.T) {
	say, waitFor, out := consoleSession(t)
	say("/runbook run abort-build target=infra-prd")
	waitFor("build")
	say("abc")
	waitFor(`Parameter "build": "abc" does not match the pattern [0-9]+; try again`)
	assert.NotContains(t, out.String(), "→ /runbook run abort-build target=infra-prd build=abc", "a refused answer is not submitted")
	say("/cancel")
	waitFor("form cancelled: nothing was started")
}

// consoleSession serves the app on the console: say types a line, waitFor
// waits until the output holds s, out is all that was printed.
func consoleSession(t *testing.T) (say func(string), waitFor func(string), out interface{ String() string }) {
	t.Helper()
	return consoleSessionWith(t, "")
}

// consoleSessionWith is consoleSession with more configuration (extra is
// appended under infra-prd's target: indented, it adds targets).
func consoleSessionWith(t *testing.T, extra string) (say func(string), waitFor func(string), out interface{ String() string }) {
	t.Helper()
	_, in, o, _ := servingApp(t, extra)
	say = func(l string) {
		_, err := io.WriteString(in, l+"\n")
		require.NoError(t, err)
	}
	waitFor = func(s string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(o.String(), s) }, 10*time.Second, 20*time.Millisecond, o.String())
	}
	return say, waitFor, o
}

// twoMoreTargets configures infra-dev (a simulator with two workers and
// one pipeline) and infra-down (nothing answers) besides infra-prd.
func twoMoreTargets(t *testing.T) string {
	world := filepath.Join(t.TempDir(), "dev.yaml")
	require.NoError(t, os.WriteFile(world, []byte(`workers: [{name: dev-w-1}, {name: dev-w-2}]
pipelines: [{name: dev-app, team: main, jobs: [{name: unit}]}]
`), 0o600))
	return `  infra-dev:
    simulator: {world: ` + world + `}
  infra-down:
    url: http://127.0.0.1:1
`
}

// TestServe_ConsoleAsksTheTargetFirst: with several targets the console
// asks for the target, then offers that target's pipelines; a target that
// cannot be read is said, and the pipeline is free text.
func TestServe_ConsoleAsksTheTargetFirst(t *testing.T) {
	say, waitFor, out := consoleSessionWith(t, twoMoreTargets(t))
	const ask = "target — the Concourse target (one of: infra-dev, infra-down, infra-prd)?"
	say("/runbook run pause-pipeline")
	waitFor(ask)
	say("infra-down")
	waitFor("⚠️ Could not read the pipelines and teams of infra-down (connection refused): type pipeline and team.")
	waitFor("pipeline — pipeline name, or team/pipeline?")
	say("/cancel")
	waitFor("form cancelled")

	say("/runbook run pause-pipeline")
	require.Eventually(t, func() bool { return strings.Count(out.String(), ask) == 2 }, 10*time.Second, 20*time.Millisecond, out.String())
	say("infra-dev")
	waitFor("pipeline — pipeline name, or team/pipeline (one of: main/dev-app)?")
	say("main/dev-app")
	waitFor("→ /runbook run pause-pipeline target=infra-dev pipeline=main/dev-app")
}

// TestServe_FormRefreshReadsThePickedTarget: with several targets the run
// form's target is a field; picking one in the form gives that target's
// workers (read live from its simulator), keeps the values still valid,
// and a target that cannot be read is said in the form's note (its fields
// free text) instead of failing the form.
func TestServe_FormRefreshReadsThePickedTarget(t *testing.T) {
	a, _, _, _ := servingApp(t, twoMoreTargets(t))
	refresh := bot.FormRefresherOf(a.eng)
	ctx := context.Background()

	f, err := refresh.RefreshForm(ctx, chatmodel.Conversation{Platform: "console", Channel: "#ops"}, "run worker-stalled", map[string]string{"target": "infra-dev", "worker": "caascad-ci-workers-infra-infra-prd-0"})
	require.NoError(t, err)
	require.Equal(t, "target", f.Fields[0].Name)
	assert.True(t, f.Fields[0].Refresh)
	assert.Equal(t, "infra-dev", f.Fields[0].Default)
	worker := fieldNamed(t, f, "worker")
	assert.Equal(t, []string{"dev-w-1", "dev-w-2"}, worker.Options, "infra-dev's workers")
	assert.Empty(t, worker.Default, "a worker of the other target is not kept")
	assert.Empty(t, f.Note)
	assert.Equal(t, "run worker-stalled", f.Command)

	f, err = refresh.RefreshForm(ctx, chatmodel.Conversation{Platform: "console", Channel: "#ops"}, "run worker-stalled", map[string]string{"target": "infra-dev", "worker": "dev-w-2"})
	require.NoError(t, err)
	assert.Equal(t, "dev-w-2", fieldNamed(t, f, "worker").Default, "a worker of this target is kept")

	f, err = refresh.RefreshForm(ctx, chatmodel.Conversation{Platform: "console", Channel: "#ops"}, "run worker-stalled", map[string]string{"target": "infra-down", "worker": "dev-w-2"})
	require.NoError(t, err)
	assert.Empty(t, fieldNamed(t, f, "worker").Options, "free text")
	assert.Contains(t, f.Note, "Could not read the workers of infra-down (")
	assert.Contains(t, f.Note, "connection refused")
	assert.Contains(t, f.Note, "): type worker.")

	_, err = refresh.RefreshForm(ctx, chatmodel.Conversation{Platform: "console", Channel: "#ops"}, "run no-such-runbook", map[string]string{"target": "infra-dev"})
	assert.Error(t, err)
}

func fieldNamed(t *testing.T, f chatmodel.Form, name string) chatmodel.FormField {
	t.Helper()
	for _, fd := range f.Fields {
		if fd.Name == name {
			return fd
		}
	}
	t.Fatalf("no field %q in %+v", name, f.Fields)
	return chatmodel.FormField{}
}

// TestServe_ABoundChannelsFormOffersOnlyItsTeams: in a channel bound to
// team deploy (channels:), the run form offers only deploy's pipelines and
// teams, a command naming another team is refused without naming it, and
// the other channel keeps everything.
func TestServe_ABoundChannelsFormOffersOnlyItsTeams(t *testing.T) {
	say, waitFor, out := consoleSessionWith(t, "channels:\n  \"#deploy-ci\": {targets: [infra-prd], teams: [deploy]}\n")
	say("/channel #deploy-ci")
	waitFor("now typing in #deploy-ci")
	say("/runbook run pause-pipeline target=infra-prd")
	waitFor("pipeline — pipeline name, or team/pipeline (one of: deploy/caascad-alert-prepare)?")
	say("/cancel")
	waitFor("form cancelled")
	say("/runbook run abort-pending team=main pipeline=app")
	waitFor("This channel (`channels.#deploy-ci`) may act only on team `deploy` on `infra-prd`, and the command names another team: run it in that team's channel.")
	say("/runbook list")
	waitFor("📌 This channel acts on team `deploy` on `infra-prd` (`channels.#deploy-ci`).")
	waitFor("🙈 Not offered here: `prune-stalled`, `worker-lifecycle`, `worker-rebuild`, `worker-stalled` change only workers, and team `deploy` owns no worker on `infra-prd` (a global worker is no team's): run them from a channel bound to every team.")
	assert.NotContains(t, out.String(), "• `worker-stalled`", "not listed there")

	say("/channel #ops")
	say("/runbook run pause-pipeline target=infra-prd")
	waitFor("(one of: deploy/caascad-alert-prepare, main/app, main/docs)?")
	assert.NotContains(t, strings.Split(out.String(), "now typing in #ops")[0], "main/app", "never offered in #deploy-ci")
}
