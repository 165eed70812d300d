package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestParse_GoodConfigResolvesSecrets(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "pw", "s3cret\n")
	write(t, dir, "dsn", "postgres://concourse:pw@db:5432/concourse?sslmode=disable\n")
	p := write(t, dir, "groundcrew.yaml", `
store: gc.db
chat: {platform: console}
targets:
  infra-prd:
    url: https://ci.infra-prd.example.com
    username: groundcrew
    password_file: pw
    database: {dsn_file: dsn}
    vars: {zone: infra-prd, target: infra}
approvals:
  default: {approvers: [group:ci-oncall], required: 1, expires: 30m}
  targets: {infra-prd: {required: 2}}
digests:
  - {target: infra-prd, channel: "#ci-ops", schedule: "0 8 * * 1-5", timezone: Europe/Paris}
`)
	c, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", c.Targets["infra-prd"].Password.Value())
	assert.Equal(t, "main", c.Targets["infra-prd"].Team, "default team")
	assert.Equal(t, 2, c.Approvals.Targets["infra-prd"].Required)
	db, ok := c.DatabaseConfig("infra-prd")
	require.True(t, ok)
	assert.Contains(t, db.DSN, "concourse:pw@db")
	assert.NotContains(t, fmt.Sprintf("%v %+v", c.Targets["infra-prd"], c), "s3cret", "secrets never print")
}

func TestParse_EnvOverridesSecret(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GROUNDCREW_TARGET_INFRA_PRD_PASSWORD", "from-env")
	p := write(t, dir, "g.yaml", "targets:\n  infra-prd: {url: https://ci.example.com, username: gc}\n")
	c, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, "from-env", c.Targets["infra-prd"].Password.Value())
}

func TestParse_Errors(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"unknown key with line", "targets:\n  x: {url: https://a.b, pasword: x}\n", `line 2: unknown key "pasword" in targets.<name>; did you mean "password"?`},
		{"no targets", "chat: {platform: console}\n", "no Concourse target is configured"},
		{"bad platform", "chat: {platform: teams}\ntargets: {x: {url: https://a.b}}\n", `chat.platform: "teams" is not a platform`},
		{"bad url", "targets: {x: {url: ci.example.com}}\n", `targets.x.url: "ci.example.com" is not an http(s) URL`},
		{"missing password", "targets: {x: {url: https://a.b, username: gc}}\n", "username \"gc\" has no password: set password_file"},
		{"missing password file", "targets: {x: {url: https://a.b, username: gc, password_file: /nope}}\n", "password_file: reading /nope"},
		{"both inline and file", "targets: {x: {url: https://a.b, password: a, password_file: /nope}}\n", "use either"},
		{"approvals for unknown target", "targets: {x: {url: https://a.b}}\napprovals: {targets: {y: {required: 2}}}\n", `approvals.targets.y: no target "y"`},
		{"digest for a target typo", "targets: {infra-prd: {url: https://a.b}}\ndigests: [{target: infra-prod, channel: '#a', schedule: '0 8 * * *'}]\n", `digests[0].target: no target "infra-prod" is configured; did you mean "infra-prd"? (targets: infra-prd)`},
		{"watch for a target typo", "targets: {infra-prd: {url: https://a.b}}\nwatch: [{target: infra-prod, channel: '#a', worker_stalled_for: 5m}]\n", `watch[0].target: no target "infra-prod" is configured; did you mean "infra-prd"?`},
		{"bad cron", "targets: {x: {url: https://a.b}}\ndigests: [{target: x, channel: '#a', schedule: '0 8 * *'}]\n", "digests[0].schedule"},
		{"bad timezone", "targets: {x: {url: https://a.b}}\ndigests: [{target: x, channel: '#a', schedule: '0 8 * * *', timezone: Mars/Base}]\n", "digests[0].timezone"},
		{"bad duration", "targets: {x: {url: https://a.b}}\napprovals: {default: {expires: soon}}\n", "not a duration"},
		{"yaml syntax at its line", "store: gc.db\ntargets:\n  x: {url: https://a.b\nchat: [\n", "line 3: invalid YAML: did not find expected ',' or '}' (in the block that starts at line 2)"},
		{"audit every too short", "targets: {x: {url: https://a.b}}\naudit: {checkpoint_channel: '#audit', every: 1s}\n", "audit.every: 1s: post checkpoints at most once a minute"},
		{"audit every without channel", "targets: {x: {url: https://a.b}}\naudit: {every: 1h}\n", "audit.every: is set but audit.checkpoint_channel is not"},
		{"runbook dir missing", "targets: {x: {url: https://a.b}}\nrunbooks: [/does/not/exist]\n", "runbooks[0]: /does/not/exist is not a directory"},
		{"bad log format", "targets: {x: {url: https://a.b}}\nlog: {format: xml}\n", `log.format: "xml": use text or json`},
		{"bad log level", "targets: {x: {url: https://a.b}}\nlog: {level: loud}\n", `log.level: "loud": use debug, info, warn or error`},
		{"max_in_flight out of range", "targets: {x: {url: https://a.b, max_in_flight: 1000}}\n", "targets.x.max_in_flight: 1000 is out of range: use 1 to 256 requests in flight"},
		{"workers template without id", "targets: {x: {url: https://a.b, workers: {name: worker}}}\n", "targets.x.workers: target \"x\": workers.name \"worker\" does not use {{.id}}"},
		{"workers template with a missing var", "targets: {x: {url: https://a.b, vars: {target: infra}, workers: {name: 'ci-{{.vars.zone}}-{{.id}}'}}}\n", `targets.x.workers: target "x": workers.name`},
		{"fly_target that needs quoting", "targets: {x: {url: https://a.b, fly_target: \"prd'; rm\"}}\n", `targets.x.fly_target: "prd'; rm" is not a fly target name`},
		{"workers unknown key", "targets: {x: {url: https://a.b, workers: {nmae: 'w-{{.id}}'}}}\n", `unknown key "nmae"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, t.TempDir(), "g.yaml", c.body)
			_, err := Load(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), p, "errors name the file")
		})
	}
}

// A target's fly_target is its name in fly's config (`fly -t`), which
// the runbooks' commands use; without it, the target's own name.
func TestFlyTargetDefaultsToTheTargetName(t *testing.T) {
	c, err := Load(write(t, t.TempDir(), "g.yaml", "targets:\n  infra-stg: {url: https://a.b, fly_target: infra-stg.infra}\n  infra-prd: {url: https://c.d}\n"))
	require.NoError(t, err)
	assert.Equal(t, "infra-stg.infra", c.FlyTargetOf("infra-stg"))
	assert.Equal(t, "infra-prd", c.FlyTargetOf("infra-prd"))
	assert.Equal(t, "infra-stg.infra", c.ConcourseTarget("infra-stg").FlyTarget, "the client's texts name it too")
	assert.Equal(t, "infra-prd", c.ConcourseTarget("infra-prd").FlyTarget)
}

func TestAdminSocketDefaultsNextToTheStore(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(write(t, dir, "g.yaml", "store: data/gc.db\ntargets: {x: {url: https://a.b}}\n"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "data/gc.db.sock"), c.Server.AdminSocket)
	c, err = Load(write(t, dir, "g.yaml", "server: {admin_socket: admin.sock}\ntargets: {x: {url: https://a.b}}\n"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "admin.sock"), c.Server.AdminSocket)
	c, err = Load(write(t, dir, "g.yaml", "server: {admin_socket: \"off\"}\ntargets: {x: {url: https://a.b}}\n"))
	require.NoError(t, err)
	assert.Equal(t, "off", c.Server.AdminSocket)
}

func TestExampleConfigIsValid(t *testing.T) {
	data, err := os.ReadFile("../deploy/groundcrew.example.yaml")
	require.NoError(t, err)
	_, err = Parse("groundcrew.example.yaml", data)
	// The example points at secret files that do not exist here; every
	// other part must be valid.
	require.Error(t, err)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	for _, e := range errs {
		assert.True(t, strings.Contains(e.Msg, "_file") || strings.Contains(e.Msg, "/etc/groundcrew"), "unexpected problem in the example: %s", e)
	}
}

// Decoding errors speak YAML, not Go: the line, the key, the keys allowed
// there and a did-you-mean; never "field consol not found in type config.Chat".
func TestParse_DecodeErrorsSpeakToPeople(t *testing.T) {
	p := write(t, t.TempDir(), "g.yaml", "chat:\n  platform: console\n  consol: {}\ntargets:\n  x: {url: https://a.b, team: [a]}\napprovals: {default: {required: many}}\naudit: {every: soon}\n")
	_, err := Load(p)
	require.Error(t, err)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Msg)
	}
	assert.Equal(t, []string{
		`line 3: unknown key "consol" in chat; did you mean "console"? (known keys: console, mattermost, platform, slack)`,
		`line 5: expected a single value, found a list`,
		`line 6: expected a whole number, found the text "many"`,
		`line 7: expected a duration (e.g. 30m, 1h), found the text "soon"`,
	}, msgs)
	for _, leak := range []string{"config.", "not found in type", "unmarshal", "!!", "time.Duration"} {
		assert.NotContains(t, err.Error(), leak)
	}
}
