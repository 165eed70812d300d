package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func known() Known {
	users := map[string]string{"alice": "U1", "bob": "U2", "carol": "U3"}
	groups := map[string][]string{"ci-oncall": {"U2", "U3"}, "dba": {"U3"}}
	return Known{
		Targets: []string{"infra-prd", "infra-stg"},
		Runbooks: []*runbookmodel.Runbook{{Name: "worker-stalled", Steps: []runbookmodel.Step{
			{ID: "ok", Kind: runbookmodel.KindApproval, Approval: &runbookmodel.Approval{Approvers: []string{"alice", "group:dba"}, Required: 1, Expires: time.Hour}},
			{ID: "prune", Kind: runbookmodel.KindAction, Op: "concourse.prune_worker"},
		}}},
		Ops: map[string]string{"concourse.workers": "read", "concourse.prune_worker": "destructive"},
		User: func(_ context.Context, name string) (string, string, error) {
			switch name {
			case "deploy-bot":
				return "B1", "bot accounts cannot act on runs", nil
			case "slow":
				return "", "", errors.New("timeout")
			}
			if id, ok := users[name]; ok {
				return id, "", nil
			}
			return "", "", fmt.Errorf("%s: %w", name, ErrUnknown)
		},
		Members: func(_ context.Context, g string) ([]string, error) {
			if m, ok := groups[g]; ok {
				return m, nil
			}
			if g == "ci-oncal" { // the platform knows a close name
				return nil, fmt.Errorf("%s: %w: %w", g, ErrUnknown, suggesting("ci-oncall"))
			}
			return nil, fmt.Errorf("%s: %w", g, ErrUnknown)
		},
	}
}

// suggesting is a platform's not-found error carrying a close known name.
type suggesting string

func (s suggesting) Error() string      { return "not found" }
func (s suggesting) DidYouMean() string { return string(s) }

func problems(ps []Problem) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

func TestCheck_NamesNameSomething(t *testing.T) {
	ctx := context.Background()
	assert.Empty(t, Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall", "@alice"}}}.Check(ctx, known()))
	cases := []struct {
		name string
		c    Config
		want string
	}{
		{"operation", Config{Operations: map[string]runmodel.Policy{"concourse.prune_wrker": {Required: 3}}}, `approvals.operations.concourse.prune_wrker: no operation "concourse.prune_wrker"; did you mean "concourse.prune_worker"?`},
		{"runbook", Config{Runbooks: map[string]runmodel.Policy{"worker-staled": {}}}, `approvals.runbooks.worker-staled: no runbook "worker-staled"; did you mean "worker-stalled"?`},
		{"target", Config{Targets: map[string]runmodel.Policy{"infra-prod": {}}}, `approvals.targets.infra-prod: no target "infra-prod"; did you mean "infra-prd"?`},
		{"user", Config{Default: runmodel.Policy{Runners: []string{"alcie"}}}, `approvals.default.runners: no user "alcie" on the chat platform`},
		{"group", Config{Default: runmodel.Policy{BreakGlass: []string{"group:sre"}}}, `approvals.default.break_glass: no group "sre" on the chat platform`},
		{"group typo", Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncal"}}}, `approvals.default.approvers: no group "ci-oncal" on the chat platform; did you mean "ci-oncall"?`},
		{"bot account", Config{Targets: map[string]runmodel.Policy{"infra-prd": {Approvers: []string{"deploy-bot"}}}}, `approvals.targets.infra-prd.approvers: "deploy-bot" cannot act: bot accounts cannot act on runs`},
		{"reject", Config{Default: runmodel.Policy{Reject: "all"}}, `approvals.default.reject: "all": use any`},
		{"narrowing no one satisfies", Config{Default: runmodel.Policy{Approvers: []string{"bob"}}}, "step ok of runbook worker-stalled needs 1 approval from @bob who are also @alice, @dba, and no one can approve it"},
		{"narrowing too few", Config{Operations: map[string]runmodel.Policy{"concourse.prune_worker": {Approvers: []string{"group:ci-oncall"}, Required: 2}}}, "needs 2 approvals from @ci-oncall who are also @alice, @dba, and only 1 person can approve it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := c.c.Check(ctx, known())
			assert.Contains(t, problems(ps), c.want)
			for _, p := range ps {
				assert.False(t, p.Warning, p.String())
			}
		})
	}
	ps := Config{Default: runmodel.Policy{Approvers: []string{"slow"}}}.Check(ctx, known())
	if assert.Len(t, ps, 1) {
		assert.True(t, ps[0].Warning, "a lookup the platform did not answer is a warning")
	}
	k := known()
	k.User, k.Members = nil, nil
	assert.Empty(t, Config{Default: runmodel.Policy{Approvers: []string{"anyone-at-all", "group:whatever"}}}.Check(ctx, k), "without a directory names are ids and groups cannot be listed")
}

// A policy no one can satisfy is refused at every level, once, at the key
// that makes it so: every run needing that approval would only expire.
func TestCheck_EveryLevelCanBeSatisfied(t *testing.T) {
	ctx := context.Background()
	prune := "concourse.prune_worker"
	cases := []struct {
		name string
		c    Config
		want string
	}{
		{"default", Config{Default: runmodel.Policy{Approvers: []string{"alice"}, Required: 2}},
			"approvals.default: needs 2 approvals from @alice, and only 1 person can approve it: every run that needs this approval would expire"},
		{"target", Config{Targets: map[string]runmodel.Policy{"infra-prd": {Approvers: []string{"group:dba"}, Required: 2}}},
			"approvals.targets.infra-prd: needs 2 approvals from @dba, and only 1 person can approve it"},
		{"runbook", Config{Runbooks: map[string]runmodel.Policy{"worker-stalled": {Approvers: []string{"deploy-bot"}}}},
			"approvals.runbooks.worker-stalled: needs 1 approval from @deploy-bot, and no one can approve it"},
		{"operation", Config{Operations: map[string]runmodel.Policy{prune: {Approvers: []string{"alice", "bob"}, Required: 3}}},
			"approvals.operations.concourse.prune_worker: needs 3 approvals from @alice, @bob, and only 2 people can approve it"},
		{"merge", Config{Default: runmodel.Policy{Approvers: []string{"alice", "@bob"}}, Targets: map[string]runmodel.Policy{"infra-stg": {Required: 3}}},
			"approvals.targets.infra-stg: needs 3 approvals from @alice, @bob (approvers from approvals.default, required from approvals.targets.infra-stg), and only 2 people can approve it"},
		{"narrowing, self-approval off", Config{Default: runmodel.Policy{Runners: []string{"alice", "carol"}}, Runbooks: map[string]runmodel.Policy{"worker-stalled": {Required: 2}}},
			"step ok of runbook worker-stalled needs 2 approvals from @alice, @dba, and only 1 other than the requester can approve it (self-approval is off, and every person who may start the run is an approver: @alice, @carol)"},
		{"self-approval off", Config{Default: runmodel.Policy{Approvers: []string{"alice", "bob"}, Required: 2, Runners: []string{"alice", "bob"}}},
			"approvals.default: needs 2 approvals from @alice, @bob, and only 1 other than the requester can approve it (self-approval is off, and every person who may start the run is an approver: @alice, @bob)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ps := c.c.Check(ctx, known())
			assert.Contains(t, problems(ps), c.want)
			n := 0
			for _, p := range ps {
				assert.False(t, p.Warning, p.String())
				if strings.Contains(p.Msg, "would expire") || strings.Contains(p.Msg, "narrow the policy") {
					n++
				}
			}
			want := 1
			if strings.HasPrefix(c.name, "narrowing") {
				want = 2 // per target, as before
			}
			assert.Equal(t, want, n, "reported once:\n%s", problems(ps))
		})
	}

	for name, c := range map[string]Config{
		"exactly enough":              {Default: runmodel.Policy{Approvers: []string{"alice", "carol"}, Required: 2}},
		"self-approval on":            {Default: runmodel.Policy{Approvers: []string{"alice", "carol"}, Required: 2, Runners: []string{"alice", "carol"}, SelfApproval: true}},
		"a runner who is no approver": {Default: runmodel.Policy{Approvers: []string{"alice", "carol"}, Required: 2, Runners: []string{"alice", "bob"}}},
		"a read opens no gate":        {Operations: map[string]runmodel.Policy{"concourse.workers": {Approvers: []string{"alice"}, Required: 2}}},
		"overridden everywhere":       {Default: runmodel.Policy{Approvers: []string{"alice", "bob", "carol"}, Required: 2}, Runbooks: map[string]runmodel.Policy{"worker-stalled": {Required: 1}}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, problems(c.Check(ctx, known())))
		})
	}

	k := known()
	k.Members = nil
	assert.Empty(t, Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 5}}.Check(ctx, k),
		"a group whose members cannot be listed cannot be counted: not refused")
	assert.Empty(t, Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall", "alice"}, Required: 5}}.Check(ctx, k))
	k.User = nil
	assert.Contains(t, problems(Config{Default: runmodel.Policy{Approvers: []string{"alice", "@alice"}, Required: 2}}.Check(ctx, k)),
		"approvals.default: needs 2 approvals from @alice, @alice, and only 1 person can approve it",
		"without a directory names are ids: config load catches it too")
}

func TestCheck_Escalate(t *testing.T) {
	m := func(d time.Duration) runmodel.Duration { return runmodel.Duration(d) }
	c := Config{Default: runmodel.Policy{Expires: m(30 * time.Minute), Escalate: []runmodel.Escalation{
		{After: m(10 * time.Minute), Notify: []string{"group:ci-oncall", "alice"}},
		{After: m(5 * time.Minute), Notify: []string{"nobody"}},
		{After: m(40 * time.Minute), Notify: nil},
	}}}
	var got []string
	for _, p := range c.Check(context.Background(), known()) {
		got = append(got, p.Path+": "+p.Msg)
	}
	all := strings.Join(got, "\n")
	assert.Contains(t, all, "approvals.default.escalate[1].after: 5m0s is not after the step before it (10m0s)")
	assert.Contains(t, all, "approvals.default.escalate[2].after: 40m0s is not before the request expires (expires: 30m0s)")
	assert.Contains(t, all, "approvals.default.escalate[2].notify: is empty")
	assert.Contains(t, all, `approvals.default.escalate[1].notify: no user "nobody" on the chat platform`)
	assert.NotContains(t, all, "escalate[0]")

	p := Merge(runmodel.Policy{Escalate: c.Default.Escalate[:1]}, runmodel.Policy{Required: 2})
	assert.Len(t, p.Escalate, 1, "a level that does not set escalate keeps the one above")
}
