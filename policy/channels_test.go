package policy

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func parseChannels(t *testing.T, src string) Channels {
	t.Helper()
	var c Channels
	require.NoError(t, yaml.Unmarshal([]byte(src), &c))
	return c
}

func TestChannels_Binding(t *testing.T) {
	c := parseChannels(t, `
default: deny
"#payments-ci": {targets: [infra-prd], teams: [payments]}
C0PLATFORM: {teams: [platform, infra]}
"#all-of-stg": {targets: [infra-stg]}
`)
	assert.Equal(t, ChannelsDeny, c.Default)
	ids := map[string]string{"#payments-ci": "C0PAY", "#all-of-stg": "C0STG"}
	idOf := func(k string) string {
		if id, ok := ids[k]; ok {
			return id
		}
		if strings.HasPrefix(k, "#") {
			return ""
		}
		return k
	}

	pay := c.ScopeOf("C0PAY", idOf)
	assert.Equal(t, Scope{Key: "#payments-ci", Targets: []string{"infra-prd"}, Teams: []string{"payments"}}, pay)
	assert.True(t, pay.AllowsTarget("infra-prd"))
	assert.False(t, pay.AllowsTarget("infra-stg"))
	assert.True(t, pay.AllowsTeam("payments"))
	assert.False(t, pay.AllowsTeam("platform"))
	assert.False(t, pay.AllowsTeam(""), "things of no team are the target's, not the channel's")
	assert.Equal(t, []string{"payments"}, pay.CallTeams())
	assert.Equal(t, []string{"payments/api", "payments"}, pay.FilterTeams([]string{"payments/api", "platform/api", "payments", "main"}))
	assert.Empty(t, pay.Refusal("infra-prd", []string{"payments"}))
	assert.Equal(t, "This channel (`channels.#payments-ci`) may act only on team `payments` on `infra-prd`, and the command names another team: run it in that team's channel.",
		pay.Refusal("infra-prd", []string{"payments", "platform"}))
	assert.Contains(t, pay.Refusal("infra-stg", nil), "may act only on team `payments` on `infra-prd`: run it there")
	assert.Empty(t, pay.ChangeRefusal([]string{"payments"}, false))
	assert.Contains(t, pay.ChangeRefusal([]string{"payments"}, true), "things of no team (a global worker, a table)")
	assert.Contains(t, pay.ChangeRefusal([]string{"platform"}, false), "the plan touches another team's")

	plat := c.ScopeOf("C0PLATFORM", idOf)
	assert.Equal(t, []string{"infra", "platform"}, plat.Teams)
	assert.True(t, plat.AllowsTarget("infra-stg"), "no targets listed: every target")

	stg := c.ScopeOf("C0STG", idOf)
	assert.Nil(t, stg.CallTeams(), "no teams listed: every team")
	assert.Empty(t, stg.ChangeRefusal([]string{"anything"}, true))

	none := c.ScopeOf("C0OTHER", idOf)
	assert.True(t, none.Denied)
	assert.False(t, none.AllowsTarget("infra-prd"))
	assert.Contains(t, none.Refusal("infra-prd", nil), "`channels.default` is `deny`")

	// Unresolvable names bind nothing; a channel is never matched by name.
	assert.True(t, c.ScopeOf("#payments-ci", func(string) string { return "" }).Denied)

	allow := parseChannels(t, `"#payments-ci": {teams: [payments]}`)
	open := allow.ScopeOf("C0OTHER", idOf)
	assert.True(t, open.Everything(), "an unbound channel under the default allow: today's behaviour")
	assert.Empty(t, open.Refusal("x", []string{"any"}))
}

// No refusal said in a bound channel names a team the channel is not
// bound to.
func TestChannels_RefusalsNeverNameAnotherTeam(t *testing.T) {
	s := Scope{Key: "#payments-ci", Targets: []string{"infra-prd"}, Teams: []string{"payments"}}
	for _, msg := range []string{
		s.Refusal("infra-prd", []string{"secret-team"}),
		s.Refusal("infra-stg", []string{"secret-team"}),
		s.ChangeRefusal([]string{"secret-team"}, true),
		s.ChangeRefusal([]string{"secret-team", "payments"}, false),
	} {
		assert.NotEmpty(t, msg)
		assert.NotContains(t, msg, "secret-team")
	}
}

func TestChannels_YAMLMistakes(t *testing.T) {
	for src, want := range map[string]string{
		`default: block`:                   `channels.default: "block": use allow`,
		`"#x": {tems: [a]}`:                `channels.#x: unknown key "tems"`,
		`"#x": {teams: a}`:                 `channels.#x:`,
		`[a, b]`:                           `want a mapping of channels`,
		"\"#x\": {}\n\"#x\": {teams: [a]}": `is given twice`,
	} {
		var c Channels
		err := yaml.Unmarshal([]byte(src), &c)
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want, src)
	}
}

func TestChannels_Check(t *testing.T) {
	ctx := context.Background()
	k := Known{Targets: []string{"infra-prd", "infra-stg"},
		ConcourseTeams: func(_ context.Context, target string) ([]string, bool, error) {
			return map[string][]string{"infra-prd": {"main", "payments"}, "infra-stg": {"main"}}[target], true, nil
		},
		Channel: func(_ context.Context, name string) (string, error) {
			if name == "#payments-ci" {
				return "C0PAY", nil
			}
			return "", errors.Join(ErrUnknown, errors.New("no such channel"))
		},
	}
	c := Config{Channels: parseChannels(t, `
"#payments-ci": {targets: [infra-prd], teams: [payments]}
"#payments-stg": {targets: [infra-stg], teams: [payments]}
"#typo": {targets: [infra-prod]}
`)}
	var msgs []string
	for _, p := range c.Check(ctx, k) {
		msgs = append(msgs, p.String())
	}
	assert.ElementsMatch(t, []string{
		`channels.#payments-stg.teams: no team "payments" on infra-stg (teams: main)`,
		`channels.#payments-stg: no channel #payments-stg on the chat platform (use the channel's name with # or its id, and add the bot to it)`,
		`channels.#typo.targets: no target "infra-prod"; did you mean "infra-prd"?`,
		`channels.#typo: no channel #typo on the chat platform (use the channel's name with # or its id, and add the bot to it)`,
	}, msgs)
}

func TestRunScope(t *testing.T) {
	run := func(scope *runmodel.ChannelScope, team string, teams ...[]string) *runmodel.Run {
		r := &runmodel.Run{Team: team, Scope: scope}
		for _, ts := range teams {
			r.Steps = append(r.Steps, runmodel.StepState{Teams: ts})
		}
		return r
	}
	bound := &runmodel.ChannelScope{Key: "#payments-ci", Targets: []string{"infra-prd"}, Teams: []string{"payments"}}
	assert.Equal(t, "`#payments-ci` (bound to team `payments` on `infra-prd`) · changes of team `payments`", RunScope(run(bound, "main", []string{"payments"}, nil)))
	assert.Equal(t, "`#payments-ci` (bound to team `payments` on `infra-prd`)", RunScope(run(bound, "main")), "no change said a team")
	assert.Equal(t, "", RunScope(run(nil, "main", []string{"main"})), "one team, the target's own: nothing new")
	assert.Equal(t, "changes of team `deploy`", RunScope(run(nil, "main", []string{"deploy"})))
	assert.Equal(t, "changes of teams `main`, `payments`", RunScope(run(nil, "main", []string{"payments", ""}, []string{"main"})))
}

func TestScope_SeesRun(t *testing.T) {
	pay := Scope{Key: "#payments-ci", Targets: []string{"infra-prd"}, Teams: []string{"payments"}}
	run := func(channel, target string, scope *runmodel.ChannelScope, teams ...string) *runmodel.Run {
		return &runmodel.Run{Target: target, Scope: scope, Conversation: chatmodel.Conversation{Channel: channel},
			Steps: []runmodel.StepState{{Teams: teams}}}
	}
	for _, c := range []struct {
		name string
		s    Scope
		r    *runmodel.Run
		want bool
	}{
		{"unbound sees all", Scope{}, run("C2", "infra-stg", nil, "platform"), true},
		{"denied sees none", Scope{Denied: true}, run("C2", "infra-prd", nil), false},
		{"its own channel's run", pay, run("C1", "infra-stg", nil, "platform"), true},
		{"a run of its team from elsewhere", pay, run("C2", "infra-prd", nil, "payments"), true},
		{"scoped to its team elsewhere", pay, run("C9", "infra-prd", &runmodel.ChannelScope{Key: "#pay2", Teams: []string{"payments"}}), true},
		{"another team's", pay, run("C2", "infra-prd", nil, "payments", "platform"), false},
		{"of no team yet", pay, run("C2", "infra-prd", nil), false},
		{"scoped to every team", pay, run("C9", "infra-prd", &runmodel.ChannelScope{Key: "#ops"}, "payments"), false},
		{"another target", pay, run("C2", "infra-stg", nil, "payments"), false},
		{"targets-only binding", Scope{Key: "#stg", Targets: []string{"infra-stg"}}, run("C2", "infra-stg", nil), true},
	} {
		assert.Equal(t, c.want, c.s.SeesRun(c.r, "C1"), c.name)
	}
}
