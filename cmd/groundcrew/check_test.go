package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// narrowRunbook asks for alice's approval; a policy naming only bob leaves
// no one able to approve it.
const narrowRunbook = `name: alice-only
title: Alice approves
description: test
steps:
  - id: ok
    kind: approval
    title: OK?
    approval: {approvers: [alice]}
  - id: hi
    kind: query
    op: core.echo
    args: {message: hi}
`

// TestConfigCheckAndServeAgree runs each configuration through `config
// check` and `serve` and expects the same verdict.
func TestConfigCheckAndServeAgree(t *testing.T) {
	base := "chat: {platform: console}\ntargets:\n  infra-prd: {simulator: {}}\n"
	cases := []struct {
		name string
		yaml string
		want string // "" = valid
	}{
		{"valid", "", ""},
		{"operation typo", "approvals: {operations: {concourse.prune_wrker: {required: 3}}}\n", `approvals.operations.concourse.prune_wrker: no operation "concourse.prune_wrker"; did you mean "concourse.prune_worker"?`},
		{"runbook typo", "approvals: {runbooks: {worker-staled: {required: 2}}}\n", `approvals.runbooks.worker-staled: no runbook "worker-staled"; did you mean "worker-stalled"?`},
		{"target typo", "approvals: {targets: {infra-prod: {required: 2}}}\n", `approvals.targets.infra-prod: no target "infra-prod"`},
		{"require_groups without group:", "approvals: {default: {require_groups: [dba]}}\n", `approvals.default.require_groups: "dba" is not a group`},
		{"operation runners work", "approvals: {operations: {concourse.prune_worker: {runners: [alice]}}}\n", ""},
		{"operation read_only_runners work", "approvals: {operations: {concourse.workers: {read_only_runners: [alice]}}}\n", ""},
		{"digest schedule with CRON_TZ and timezone", "digests:\n  - {target: infra-prd, channel: \"#ops\", schedule: \"CRON_TZ=Europe/Paris 0 8 * * *\", timezone: Europe/Paris}\n", "give it once"},
		{"digest schedule with CRON_TZ", "digests:\n  - {target: infra-prd, channel: \"#ops\", schedule: \"CRON_TZ=Europe/Paris 0 8 * * *\"}\n", ""},
		{"runbook approvers no one in the policy can satisfy", "approvals: {default: {approvers: [bob]}}\nrunbooks: [rb]\n", "step ok of runbook alice-only needs 1 approval from @bob who are also @alice, and no one can approve it"},
		{"unknown console group", "approvals: {default: {approvers: [group:sre]}}\n", `approvals.default.approvers: no group "sre" on the chat platform`},
		{"known console group", "approvals: {default: {approvers: [group:sre]}}\n", ""},
		{"runbook approvers the policy allows", "approvals: {default: {approvers: [alice, bob]}}\nrunbooks: [rb]\n", ""},
		{"team of the live target", "approvals: {teams: {deploy: {approvers: [alice], required: 1, runners: [bob]}}}\n", ""},
		{"team typo, asked of the live target", "approvals: {teams: {deplyo: {required: 2}}}\n", `approvals.teams.deplyo: no team "deplyo" on infra-prd; did you mean "deploy"?`},
		{"a channel bound to a team of the live target", "channels: {default: deny, \"#deploy-ci\": {targets: [infra-prd], teams: [deploy]}}\n", ""},
		{"a channel bound to a team that does not exist", "channels: {\"#deploy-ci\": {teams: [deplyo]}}\n", `channels.#deploy-ci.teams: no team "deplyo" on infra-prd; did you mean "deploy"?`},
		{"a channel bound to a target that does not exist", "channels: {\"#deploy-ci\": {targets: [infra-prod]}}\n", `channels.#deploy-ci.targets: no target "infra-prod"; did you mean "infra-prd"?`},
		{"channels default neither allow nor deny", "channels: {default: block}\n", `channels.default: "block": use allow`},
		{"a team cannot allow self-approval", "approvals: {teams: {deploy: {self_approval: true}}}\n", "approvals.teams.deploy.self_approval: a team's level can only make its gates stricter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "rb"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "rb", "alice-only.yaml"), []byte(narrowRunbook), 0o600))
			cfg := filepath.Join(dir, "groundcrew.yaml")
			b := base
			if c.name == "known console group" {
				b = strings.Replace(b, "chat: {platform: console}", "chat: {platform: console, console: {groups: {sre: [bob]}}}", 1)
			}
			require.NoError(t, os.WriteFile(cfg, []byte(b+c.yaml), 0o600))
			checkOut, checkErr := run(t, "", "config", "check", "--config", cfg)
			serveOut, serveErr := run(t, "", "serve", "--config", cfg)
			if c.want == "" {
				assert.NoError(t, checkErr, "config check: %s", checkOut)
				assert.NoError(t, serveErr, "serve: %s", serveOut)
				return
			}
			require.Error(t, checkErr, "config check accepted it: %s", checkOut)
			require.Error(t, serveErr, "serve accepted it: %s", serveOut)
			assert.Contains(t, checkErr.Error(), c.want)
			assert.Contains(t, serveErr.Error(), c.want)
		})
	}
}

// TestConfigCheckListsEveryProblem: a broken runbook override does not hide
// the other problems — one run of config check names the runbook's error
// and the policy's typo (it used to stop at the runbook).
func TestConfigCheckListsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "rb"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rb", "worker-stalled.yaml"), []byte(
		"name: worker-stalled\ntitle: Ours\nsteps:\n  - id: w\n    kind: query\n    op: concourse.list_wrkers\n"), 0o600))
	cfg := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("chat: {platform: console}\ntargets:\n  infra-prd: {simulator: {}}\nrunbooks: [rb]\n"+
		"approvals: {operations: {concourse.prune_wrker: {required: 3}}}\n"), 0o600))
	out, err := run(t, "", "config", "check", "--config", cfg)
	require.Error(t, err, out)
	assert.Contains(t, err.Error(), `worker-stalled.yaml:6:9: unknown operation "concourse.list_wrkers"`)
	assert.Contains(t, err.Error(), `approvals.operations.concourse.prune_wrker: no operation "concourse.prune_wrker"; did you mean "concourse.prune_worker"?`)
}

// config check names the target vars runbooks read that a target does not
// set (issue 26: worker-stalled's rebuild step failed mid-run on a target
// without vars).
func TestConfigCheckNamesMissingTargetVars(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("chat: {platform: console}\ntargets:\n  lab: {url: http://127.0.0.1:1}\n  infra-prd: {url: http://127.0.0.1:1, vars: {zone: infra-prd, target: infra}}\n"), 0o600))
	out, err := run(t, "", "config", "check", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "targets.lab.vars.zone is not set; used by ")
	assert.Contains(t, out, "worker-stalled")
	assert.Contains(t, out, "<zone: not set in the target's vars>")
	assert.NotContains(t, out, "targets.infra-prd.vars.zone")
	assert.Contains(t, out, "targets.infra-prd.vars.cloud is not set; used by worker-disk-resize, worker-rebuild, worker-stalled (their text says <cloud: not set in the target's vars>, and a command that needs it is not shown)",
		"the cloud has no default: a guessed one gives commands that cannot work")
	assert.Contains(t, out, "is valid", "a missing var is a warning")
}

// config check explains stalled_worker_timeout: what the bot does with a
// target's value, and what it assumes of a target without one.
func TestConfigCheckExplainsStalledWorkerTimeout(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("chat: {platform: console}\ntargets:\n  lab: {url: http://127.0.0.1:1}\n"+
		"  infra-prd: {url: http://127.0.0.1:1, stalled_worker_timeout: 10m}\n"), 0o600))
	out, err := run(t, "", "config", "check", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "targets.infra-prd.stalled_worker_timeout 10m0s: Concourse removes a worker stalled longer than that by itself (the web node's --stalled-worker-timeout, Concourse 8.3)")
	assert.Contains(t, out, "stalled_worker_timeout is not set for lab: the bot assumes the web node never removes stalled workers by itself")

	require.NoError(t, os.WriteFile(cfg, []byte("chat: {platform: console}\ntargets:\n  lab: {url: http://127.0.0.1:1, stalled_worker_timeout: -5m}\n"), 0o600))
	out, err = run(t, "", "config", "check", "--config", cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error()+out, "targets.lab.stalled_worker_timeout: -5m0s is negative")
}
