package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	_, in, o, _ := servingApp(t, "")
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
