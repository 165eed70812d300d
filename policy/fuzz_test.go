package policy

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// FuzzChannelScope: no channels: configuration, channel id, target or
// team list makes the resolver panic, and what it decides holds: a
// denied channel allows nothing, a bound one only its targets and teams,
// its call scope is its teams, a refusal never names a team the channel is
// not bound to, and a team's level of the policy never makes a gate
// weaker than the target's.
func FuzzChannelScope(f *testing.F) {
	f.Add("default: deny\n\"#payments-ci\": {targets: [infra-prd], teams: [payments]}\n", "Cpayments-ci", "infra-prd", "payments,zzsecret")
	f.Add("\"#a\": {teams: [x]}\nC1: {}\n", "C1", "t", "x")
	f.Add("default: allow\n", "C9", "", "")
	f.Add("{", "", "", "")
	f.Fuzz(func(t *testing.T, src, channel, target, teamList string) {
		var c Channels
		if err := yaml.Unmarshal([]byte(src), &c); err != nil {
			return
		}
		teams := strings.Split(teamList, ",")
		idOf := func(k string) string {
			if strings.HasPrefix(k, "#") {
				return "C" + strings.TrimPrefix(k, "#")
			}
			return k
		}
		s := c.ScopeOf(channel, idOf)
		if s.Denied && (s.AllowsTarget(target) || s.AllowsTeam(teams[0]) || s.Refusal(target, teams) == "") {
			t.Fatalf("a denied channel allows something: %+v", s)
		}
		if s.Bound() {
			b := c.Bindings[s.Key]
			if idOf(s.Key) != channel && s.Key != channel {
				t.Fatalf("scope %q for channel %q", s.Key, channel)
			}
			for _, tm := range teams {
				if s.AllowsTeam(tm) && len(b.Teams) > 0 && !contains(b.Teams, tm) {
					t.Fatalf("%q allowed, binding %v", tm, b.Teams)
				}
			}
			if len(b.Teams) > 0 && len(s.CallTeams()) == 0 {
				t.Fatal("a binding with teams gives an unscoped call")
			}
		}
		// Teams named "zz…" stand for another team's secret name: a
		// refusal may say what the channel is bound to, never them.
		bound := s.Key + " " + strings.Join(s.Teams, " ") + " " + strings.Join(s.Targets, " ")
		for _, msg := range []string{s.Refusal(target, teams), s.ChangeRefusal(teams, true)} {
			for _, tm := range teams {
				if strings.HasPrefix(tm, "zz") && !s.AllowsTeam(tm) && !strings.Contains(bound, tm) && strings.Contains(msg, tm) {
					t.Fatalf("refusal %q names team %q the channel is not bound to", msg, tm)
				}
			}
		}

		// A team's level over a target's policy, for the same teams.
		var lvl runmodel.Policy
		if err := yaml.Unmarshal([]byte(src), &lvl); err != nil {
			return
		}
		base := runmodel.Policy{Required: 2, RequireGroups: []string{"group:a"}}
		cfg := Config{Default: base, Teams: map[string]runmodel.Policy{teams[0]: lvl}}
		p := cfg.ResolveTeams(target, "rb", "op", teams, false)
		q := cfg.Resolve(target, "rb", "op")
		if p.Required < q.Required || p.Expires > q.Expires || !contains(p.RequireGroups, "group:a") || p.SelfApproval && !q.SelfApproval {
			t.Fatalf("a team's level made the gate weaker: %+v from %+v", p, q)
		}
	})
}
