package policy

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// teamDir: alice (U1) and dave (U4) are payments people, bob (U2) is in
// platform, carol (U3) is on call; sre is dave.
var teamDir = dir{
	users: map[string]string{"alice": "U1", "bob": "U2", "carol": "U3", "dave": "U4", "erin": "U5"},
	groups: map[string][]string{"ci-oncall": {"U3", "U5"}, "payments": {"U1", "U4"}, "platform": {"U2", "U5"},
		"sre": {"U4"}, "payments-leads": {"U4", "U5"}},
}

func min30() runmodel.Duration { return runmodel.Duration(30 * time.Minute) }

// Each field of a team's level, alone, and what it does to the target's
// policy for that team's things.
func TestResolveTeams_EachField(t *testing.T) {
	base := runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 2, Expires: runmodel.Duration(time.Hour),
		RequireGroups: []string{"group:ci-oncall"}, BreakGlass: []string{"carol"}, Reject: "quorum",
		Escalate: []runmodel.Escalation{{After: runmodel.Duration(10 * time.Minute), Notify: []string{"group:ci-oncall"}}}}
	cases := []struct {
		name  string
		level runmodel.Policy
		check func(t *testing.T, p runmodel.Policy)
	}{
		{"approvers replace", runmodel.Policy{Approvers: []string{"group:payments-leads"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, []string{"group:payments-leads"}, p.Approvers)
			assert.Empty(t, p.AlsoApprovers, "the team names who approves its things")
		}},
		{"required: the larger", runmodel.Policy{Required: 3}, func(t *testing.T, p runmodel.Policy) { assert.Equal(t, 3, p.Required) }},
		{"required: never lower", runmodel.Policy{Required: 1}, func(t *testing.T, p runmodel.Policy) { assert.Equal(t, 2, p.Required) }},
		{"require_groups: added", runmodel.Policy{RequireGroups: []string{"group:sre"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, []string{"group:ci-oncall", "group:sre"}, p.RequireGroups)
		}},
		{"expires: the shorter", runmodel.Policy{Expires: runmodel.Duration(10 * time.Minute)}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, runmodel.Duration(10*time.Minute), p.Expires)
		}},
		{"expires: never longer", runmodel.Policy{Expires: runmodel.Duration(2 * time.Hour)}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, runmodel.Duration(time.Hour), p.Expires)
		}},
		{"reject: any wins", runmodel.Policy{Reject: "any"}, func(t *testing.T, p runmodel.Policy) { assert.NotEqual(t, "quorum", p.Reject) }},
		{"self_approval cannot be turned on", runmodel.Policy{SelfApproval: true}, func(t *testing.T, p runmodel.Policy) { assert.False(t, p.SelfApproval) }},
		{"break_glass replaces", runmodel.Policy{BreakGlass: []string{"dave"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Equal(t, []string{"dave"}, p.BreakGlass)
		}},
		{"escalate replaces", runmodel.Policy{Escalate: []runmodel.Escalation{{After: runmodel.Duration(5 * time.Minute), Notify: []string{"group:payments-leads"}}}},
			func(t *testing.T, p runmodel.Policy) {
				require.Len(t, p.Escalate, 1)
				assert.Equal(t, []string{"group:payments-leads"}, p.Escalate[0].Notify)
			}},
		{"runners are not the gate's", runmodel.Policy{Runners: []string{"group:payments"}}, func(t *testing.T, p runmodel.Policy) {
			assert.Empty(t, p.Runners)
			require.Len(t, p.Teams, 1)
			assert.Empty(t, p.Teams[0].Level.Runners)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Default: base, Teams: map[string]runmodel.Policy{"payments": tc.level}}
			p := c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"payments"}, false)
			tc.check(t, p)
			require.Len(t, p.Teams, 1)
			assert.Equal(t, "approvals.teams.payments", p.Teams[0].Source)
			// Another team's things, or none, are untouched by it.
			assert.Equal(t, c.Resolve("infra-prd", "abort-pending", "concourse.abort_builds"),
				c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"platform"}, false))
			assert.Equal(t, c.Resolve("infra-prd", "abort-pending", ""), c.ResolveTeams("infra-prd", "abort-pending", "", nil, false))
		})
	}
}

// The team's level comes after the operation's: an operation level that
// names other approvers does not undo the team's.
func TestResolveTeams_TeamLevelIsLast(t *testing.T) {
	c := Config{
		Default:    runmodel.Policy{Approvers: []string{"group:ci-oncall"}},
		Operations: map[string]runmodel.Policy{"concourse.abort_builds": {Approvers: []string{"group:platform"}, Required: 2}},
		Teams:      map[string]runmodel.Policy{"payments": {Approvers: []string{"group:payments-leads"}}},
	}
	p := c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"payments"}, false)
	assert.Equal(t, []string{"group:payments-leads"}, p.Approvers)
	assert.Equal(t, 2, p.Required, "the operation's count still holds")
}

// A change of two teams' things needs what each team asks.
func TestResolveTeams_TwoTeams(t *testing.T) {
	ctx := context.Background()
	c := Config{
		Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Expires: min30(), BreakGlass: []string{"erin"}},
		Teams: map[string]runmodel.Policy{
			"payments": {Approvers: []string{"group:payments-leads"}, Required: 2, BreakGlass: []string{"erin", "dave"}},
			"platform": {Approvers: []string{"group:platform"}, RequireGroups: []string{"group:sre"}, Expires: runmodel.Duration(10 * time.Minute)},
		},
	}
	p := c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"platform", "payments"}, false)
	assert.Equal(t, []string{"group:payments-leads"}, p.Approvers)
	assert.Equal(t, [][]string{{"group:platform"}}, p.AlsoApprovers)
	assert.Equal(t, 2, p.Required)
	assert.Equal(t, []string{"group:sre"}, p.RequireGroups)
	assert.Equal(t, runmodel.Duration(10*time.Minute), p.Expires)
	require.Len(t, p.Teams, 2)
	assert.Equal(t, "payments", p.Teams[0].Team)

	count := func(voter string, breakGlass bool) Standing {
		s, err := Count(ctx, p, "U1", Approval{Voter: chatmodel.User{ID: voter, Name: voter}, BreakGlass: breakGlass}, teamDir)
		require.NoError(t, err)
		return s
	}
	// erin is in payments-leads and platform: eligible for both teams.
	assert.True(t, count("U5", false).Counts())
	// dave leads payments but is not platform.
	s := count("U4", false)
	assert.False(t, s.Counts())
	assert.Contains(t, s.Why.ToVoter(), "team `platform`'s things (`approvals.teams.platform`: @platform)")
	assert.Contains(t, s.Why.NoLonger(), "not in @platform any more (team `platform`'s approvers)")
	// bob is platform but not a payments lead.
	assert.Contains(t, count("U2", false).Why.ToVoter(), "team `payments`'s things")

	// Break glass: only someone both teams allow; platform allows none
	// of its own, so the target's (erin) stands for it.
	assert.True(t, count("U5", true).Counts())
	assert.Contains(t, count("U4", true).Why.ToVoter(), "only @erin may break glass")

	// Things of no team besides: the target's approvers are needed too.
	p = c.ResolveTeams("infra-prd", "prune", "concourse.prune_worker", []string{"payments"}, true)
	assert.Equal(t, []string{"group:ci-oncall"}, p.Approvers)
	assert.Equal(t, [][]string{{"group:payments-leads"}}, p.AlsoApprovers)
	assert.True(t, count("U5", false).Counts(), "erin: on call and a payments lead")
	assert.False(t, count("U4", false).Counts(), "dave is not on call")

	// A team that disables break glass for the gate (none anywhere).
	c.Default.BreakGlass = nil
	p = c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"platform", "payments"}, false)
	assert.Empty(t, p.BreakGlass, "platform's things have no break-glass users: nobody may override")
}

func TestResolveTeams_TwoTeamsEveryField(t *testing.T) {
	esc := func(after time.Duration, who string) runmodel.Escalation {
		return runmodel.Escalation{After: runmodel.Duration(after), Notify: []string{who}}
	}
	c := Config{
		Default: runmodel.Policy{Reject: "quorum", SelfApproval: true, Escalate: []runmodel.Escalation{esc(20*time.Minute, "group:ci-oncall")}},
		Teams: map[string]runmodel.Policy{
			"payments": {Reject: "any", Escalate: []runmodel.Escalation{esc(5*time.Minute, "group:payments-leads")}},
			"platform": {Escalate: []runmodel.Escalation{esc(10*time.Minute, "group:platform")}},
		},
	}
	p := c.ResolveTeams("t", "rb", "op", []string{"payments", "platform"}, false)
	assert.NotEqual(t, "quorum", p.Reject, "one team's any rejects on one no")
	assert.True(t, p.SelfApproval, "a team cannot turn it off either: config check refuses it there; the target's stays")
	require.Len(t, p.Escalate, 2)
	assert.Equal(t, runmodel.Duration(5*time.Minute), p.Escalate[0].After)
	assert.Equal(t, runmodel.Duration(10*time.Minute), p.Escalate[1].After)
}

func TestMayStart_TeamRunners(t *testing.T) {
	ctx := context.Background()
	c := Config{Teams: map[string]runmodel.Policy{
		"payments": {Runners: []string{"group:payments"}, ReadOnlyRunners: []string{"group:payments", "group:ci-oncall"}},
		"platform": {},
	}}
	start := Start{Target: "infra-prd", Runbook: "abort-pending", Changing: true, Teams: []string{"payments"}}
	r, err := c.MayStart(ctx, start, "U2", teamDir)
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.Equal(t, "You may not run `abort-pending` on `infra-prd` for team `payments`: policy `approvals.teams.payments.runners` allows only @payments to start runbooks that change that team's things.",
		r.Message("abort-pending", "infra-prd"))
	r, err = c.MayStart(ctx, start, "U1", teamDir)
	require.NoError(t, err)
	assert.Nil(t, r, "alice is payments")
	start.Teams = []string{"platform"}
	r, err = c.MayStart(ctx, start, "U2", teamDir)
	require.NoError(t, err)
	assert.Nil(t, r, "platform sets no runners")

	// Read-only runs: read_only_runners.
	r, err = c.MayActOn(ctx, "infra-prd", []string{"payments"}, false, "U3", teamDir)
	require.NoError(t, err)
	assert.Nil(t, r)
	r, err = c.MayActOn(ctx, "infra-prd", []string{"payments"}, false, "U2", teamDir)
	require.NoError(t, err)
	require.NotNil(t, r)
	assert.Equal(t, "policy `approvals.teams.payments.read_only_runners` allows only @payments, @ci-oncall to start read-only runbooks on team `payments`'s things", r.Reason())
}

func TestCheck_Teams(t *testing.T) {
	ctx := context.Background()
	live := map[string][]string{"infra-prd": {"main", "payments", "platform"}, "infra-stg": {"main", "payments"}}
	admin := map[string]bool{"infra-prd": true, "infra-stg": true}
	k := Known{Targets: []string{"infra-prd", "infra-stg"},
		ConcourseTeams: func(_ context.Context, target string) ([]string, bool, error) {
			return live[target], admin[target], nil
		}}
	problems := func(c Config) []Problem { return c.Check(ctx, k) }

	assert.Empty(t, problems(Config{Teams: map[string]runmodel.Policy{"payments": {Required: 2}, "platform": {}}}))

	ps := problems(Config{Teams: map[string]runmodel.Policy{"paymnets": {}}})
	require.Len(t, ps, 1)
	assert.Equal(t, Problem{Path: "approvals.teams.paymnets", Msg: `no team "paymnets" on infra-prd, infra-stg; did you mean "payments"?`}, ps[0])

	// The bot's account is no admin on infra-stg: a team it cannot see
	// may exist there.
	admin["infra-stg"] = false
	ps = problems(Config{Teams: map[string]runmodel.Policy{"security": {}}})
	require.Len(t, ps, 1)
	assert.True(t, ps[0].Warning)
	assert.Contains(t, ps[0].Msg, `the bot's Concourse account cannot see team "security" on infra-stg`)

	ps = problems(Config{Teams: map[string]runmodel.Policy{"payments": {SelfApproval: true}}})
	require.Len(t, ps, 1)
	assert.Equal(t, "approvals.teams.payments.self_approval", ps[0].Path)

	// A team's level no one can satisfy.
	k.Members = func(_ context.Context, g string) ([]string, error) { return teamDir.groups[g], nil }
	k.User = func(_ context.Context, name string) (string, string, error) { return teamDir.users[name], "", nil }
	ps = checkWith(k, Config{Teams: map[string]runmodel.Policy{"payments": {Approvers: []string{"group:sre"}, Required: 2}}})
	require.NotEmpty(t, ps)
	assert.Equal(t, "approvals.teams.payments", ps[0].Path)
	assert.Contains(t, ps[0].Msg, "needs 2 approvals from @sre for team payments's things, and only 1 person can approve it")
}

func checkWith(k Known, cfg Config) []Problem { return cfg.Check(context.Background(), k) }

// approvals.teams.<target>/<team> is a team's level on one target only,
// merged field by field over approvals.teams.<team> (it sets only the
// fields it names), there and nowhere else: in the gate, its runners, and
// what config check asks of it.
func TestTeamLevelOnOneTarget(t *testing.T) {
	ctx := context.Background()
	c := Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}}, Teams: map[string]runmodel.Policy{
		"payments":           {Approvers: []string{"group:payments-leads"}, Runners: []string{"group:payments"}, Expires: runmodel.Duration(20 * time.Minute)},
		"infra-prd/payments": {Required: 2, Runners: []string{"dave"}},
		"infra-stg/platform": {RequireGroups: []string{"group:sre"}},
	}}
	lvl, src, ok := c.TeamLevel("infra-prd", "payments")
	require.True(t, ok)
	assert.Equal(t, "approvals.teams.payments + approvals.teams.infra-prd/payments", src)
	assert.Equal(t, runmodel.Policy{Approvers: []string{"group:payments-leads"}, Runners: []string{"dave"}, Expires: runmodel.Duration(20 * time.Minute), Required: 2}, lvl,
		"field by field: the target's form sets required and runners; approvers and expires stay the team's")

	prd := c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"payments"}, false)
	assert.Equal(t, 2, prd.Required)
	assert.Equal(t, []string{"group:payments-leads"}, prd.Approvers)
	assert.Equal(t, runmodel.Duration(20*time.Minute), prd.Expires)
	require.Len(t, prd.Teams, 1)
	assert.Equal(t, "approvals.teams.payments + approvals.teams.infra-prd/payments", prd.Teams[0].Source)
	stg := c.ResolveTeams("infra-stg", "abort-pending", "concourse.abort_builds", []string{"payments"}, false)
	assert.Equal(t, 1, stg.Required, "another target: the team's level alone")
	assert.Equal(t, "approvals.teams.payments", stg.Teams[0].Source)
	plat := c.ResolveTeams("infra-stg", "abort-pending", "concourse.abort_builds", []string{"platform"}, false)
	assert.Equal(t, []string{"group:sre"}, plat.RequireGroups)
	assert.Equal(t, "approvals.teams.infra-stg/platform", plat.Teams[0].Source)
	assert.Empty(t, c.ResolveTeams("infra-prd", "abort-pending", "concourse.abort_builds", []string{"platform"}, false).Teams, "platform has no level on infra-prd")

	// Runners: the target's form, where it sets them.
	r, err := c.MayActOn(ctx, "infra-prd", []string{"payments"}, true, "U1", teamDir)
	require.NoError(t, err)
	require.NotNil(t, r, "alice is payments but not dave")
	assert.Equal(t, "approvals.teams.infra-prd/payments.runners", r.Source)
	r, err = c.MayActOn(ctx, "infra-stg", []string{"payments"}, true, "U1", teamDir)
	require.NoError(t, err)
	assert.Nil(t, r, "on infra-stg the team's runners: @payments")

	// config check: the target must be configured, the team must exist there.
	live := map[string][]string{"infra-prd": {"main", "payments", "platform"}, "infra-stg": {"main", "payments"}}
	k := Known{Targets: []string{"infra-prd", "infra-stg"},
		ConcourseTeams: func(_ context.Context, target string) ([]string, bool, error) { return live[target], true, nil }}
	check := func(key string) []Problem {
		return Config{Teams: map[string]runmodel.Policy{key: {Required: 2}}}.Check(ctx, k)
	}
	assert.Empty(t, check("infra-prd/payments"))
	assert.Equal(t, []Problem{{Path: "approvals.teams.infra-prod/payments", Msg: `no target "infra-prod" (a key <target>/<team> is a team's level on one target); did you mean "infra-prd/payments"?`}}, check("infra-prod/payments"))
	assert.Equal(t, []Problem{{Path: "approvals.teams.infra-stg/platform", Msg: `no team "platform" on infra-stg (teams: main, payments)`}}, check("infra-stg/platform"))
	ps := check("infra-prd/")
	require.Len(t, ps, 1)
	assert.Contains(t, ps[0].Msg, "is not a team nor <target>/<team>")
	ps = Config{Teams: map[string]runmodel.Policy{"infra-prd/payments": {SelfApproval: true}}}.Check(ctx, k)
	require.Len(t, ps, 1)
	assert.Equal(t, "approvals.teams.infra-prd/payments.self_approval", ps[0].Path)
}
