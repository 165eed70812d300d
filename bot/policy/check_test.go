package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/groundcrew/groundcrew/runbooks"
)

func known() Known {
	users := map[string]string{"alice": "U1", "bob": "U2", "carol": "U3"}
	groups := map[string][]string{"ci-oncall": {"U2", "U3"}, "dba": {"U3"}}
	return Known{
		Targets: []string{"infra-prd", "infra-stg"},
		Runbooks: []*runbooks.Runbook{{Name: "worker-stalled", Steps: []runbooks.Step{
			{ID: "ok", Kind: runbooks.KindApproval, Approval: &runbooks.Approval{Approvers: []string{"alice", "group:dba"}, Required: 1, Expires: time.Hour}},
			{ID: "prune", Kind: runbooks.KindAction, Op: "concourse.prune_worker"},
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
			return nil, fmt.Errorf("%s: %w", g, ErrUnknown)
		},
	}
}

func problems(ps []Problem) string {
	var lines []string
	for _, p := range ps {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

func TestCheck_NamesNameSomething(t *testing.T) {
	ctx := context.Background()
	assert.Empty(t, Config{Default: Policy{Approvers: []string{"group:ci-oncall", "@alice"}}}.Check(ctx, known()))
	cases := []struct {
		name string
		c    Config
		want string
	}{
		{"operation", Config{Operations: map[string]Policy{"concourse.prune_wrker": {Required: 3}}}, `approvals.operations.concourse.prune_wrker: no operation "concourse.prune_wrker"; did you mean "concourse.prune_worker"?`},
		{"runbook", Config{Runbooks: map[string]Policy{"worker-staled": {}}}, `approvals.runbooks.worker-staled: no runbook "worker-staled"; did you mean "worker-stalled"?`},
		{"target", Config{Targets: map[string]Policy{"infra-prod": {}}}, `approvals.targets.infra-prod: no target "infra-prod"; did you mean "infra-prd"?`},
		{"user", Config{Default: Policy{Runners: []string{"alcie"}}}, `approvals.default.runners: no user "alcie" on the chat platform`},
		{"group", Config{Default: Policy{BreakGlass: []string{"group:sre"}}}, `approvals.default.break_glass: no group "sre" on the chat platform`},
		{"bot account", Config{Targets: map[string]Policy{"infra-prd": {Approvers: []string{"deploy-bot"}}}}, `approvals.targets.infra-prd.approvers: "deploy-bot" cannot act: bot accounts cannot act on runs`},
		{"reject", Config{Default: Policy{Reject: "all"}}, `approvals.default.reject: "all": use any`},
		{"narrowing no one satisfies", Config{Default: Policy{Approvers: []string{"bob"}}}, "step ok of runbook worker-stalled needs 1 approval from @bob who are also @alice, @dba, and no one can approve it"},
		{"narrowing too few", Config{Operations: map[string]Policy{"concourse.prune_worker": {Approvers: []string{"group:ci-oncall"}, Required: 2}}}, "needs 2 approvals from @ci-oncall who are also @alice, @dba, and only 1 person can approve it"},
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
	ps := Config{Default: Policy{Approvers: []string{"slow"}}}.Check(ctx, known())
	if assert.Len(t, ps, 1) {
		assert.True(t, ps[0].Warning, "a lookup the platform did not answer is a warning")
	}
	k := known()
	k.User, k.Members = nil, nil
	assert.Empty(t, Config{Default: Policy{Approvers: []string{"anyone-at-all", "group:whatever"}}}.Check(ctx, k), "without a directory names are ids and groups cannot be listed")
}
