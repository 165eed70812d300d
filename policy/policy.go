// Package policy is groundcrew's approval policy in one place: how the
// configured levels merge (default → target → runbook → operation, field by
// field), how a runbook's own approval settings narrow them, who may start
// a run, who may vote, how votes decide a gate, and the validation that
// both `config check` and `serve` run.
//
// Every function is a plain function of its inputs. People are compared by
// their platform user id only; names written in a policy are turned into
// ids by a Directory (the chat platform's API), never matched against a
// name sent in a request.
package policy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Merge returns base with every field over sets replacing base's, one
// field at a time.
func Merge(base, over runmodel.Policy) runmodel.Policy {
	p := base
	if len(over.Approvers) > 0 {
		p.Approvers = over.Approvers
	}
	if len(over.AlsoApprovers) > 0 {
		p.AlsoApprovers = append(append([][]string(nil), p.AlsoApprovers...), over.AlsoApprovers...)
	}
	if over.Required > 0 {
		p.Required = over.Required
	}
	if over.Expires > 0 {
		p.Expires = over.Expires
	}
	if over.SelfApproval {
		p.SelfApproval = true
	}
	if len(over.RequireGroups) > 0 {
		p.RequireGroups = over.RequireGroups
	}
	if over.Reject != "" {
		p.Reject = over.Reject
	}
	if len(over.BreakGlass) > 0 {
		p.BreakGlass = over.BreakGlass
	}
	if len(over.Runners) > 0 {
		p.Runners = over.Runners
	}
	if len(over.ReadOnlyRunners) > 0 {
		p.ReadOnlyRunners = over.ReadOnlyRunners
	}
	if len(over.Escalate) > 0 {
		p.Escalate = over.Escalate
	}
	return p
}

// Config is the approval policy configuration: a default, and overrides
// per target, per runbook and per operation, applied in that order; then,
// for the things of a Concourse team, that team's level (teams.go).
type Config struct {
	Default    runmodel.Policy            `yaml:"default"`
	Targets    map[string]runmodel.Policy `yaml:"targets"`
	Runbooks   map[string]runmodel.Policy `yaml:"runbooks"`
	Operations map[string]runmodel.Policy `yaml:"operations"`
	Teams      map[string]runmodel.Policy `yaml:"teams"`
	// Channels are the channel bindings (the top-level `channels:` key,
	// set by the configuration loader): evaluated with the policy, and
	// swapped with it on a reload.
	Channels Channels `yaml:"-"`
}

// Resolve returns the policy for a gate of runbook on target calling op
// ("" for an approval step): the built-in default, then the configured
// default, target, runbook and operation levels, merged field by field.
func (c Config) Resolve(target, runbook, op string) runmodel.Policy {
	p := Merge(runmodel.DefaultPolicy, c.Default)
	if q, ok := c.Targets[target]; ok {
		p = Merge(p, q)
	}
	if q, ok := c.Runbooks[runbook]; ok {
		p = Merge(p, q)
	}
	if q, ok := c.Operations[op]; ok && op != "" {
		p = Merge(p, q)
	}
	return p.WithDefaults()
}

// Describe says the policy in one line for the gate message. requester is
// how the requester is shown ("@alice").
func Describe(p runmodel.Policy, requester string) string {
	p = p.WithDefaults()
	who := "anyone"
	if len(p.Approvers) > 0 {
		who = DisplayList(p.Approvers)
	}
	for _, also := range p.AlsoApprovers {
		who += " who are also " + DisplayList(also)
	}
	s := fmt.Sprintf("Needs %d approval%s from %s", p.Required, plural(p.Required), who)
	if len(p.RequireGroups) > 0 {
		s += fmt.Sprintf(" (at least one from each of %s)", DisplayList(p.RequireGroups))
	}
	if !p.SelfApproval {
		s += fmt.Sprintf(" · not %s (requester)", requester)
	} else {
		s += " · ⚠️ self-approval allowed by policy"
	}
	if p.Reject == "quorum" {
		s += fmt.Sprintf(" · %d rejections reject", p.Required)
	}
	return s
}

// DisplayList shows policy entries for people ("@alice, @ci-oncall").
func DisplayList(xs []string) string {
	names := make([]string, 0, len(xs))
	for _, a := range xs {
		names = append(names, DisplayEntry(a))
	}
	return strings.Join(names, ", ")
}

// DisplayEntry shows one policy entry ("group:dba" → "@dba").
func DisplayEntry(a string) string {
	if g, ok := Group(a); ok {
		return "@" + g
	}
	return "@" + strings.TrimPrefix(a, "@")
}

// Group returns the group an entry names ("group:dba" → "dba").
func Group(entry string) (string, bool) { return strings.CutPrefix(entry, "group:") }

// Directory turns policy entries into platform user ids. The engine
// implements it over the chat platform's API (with a cache); without a
// platform directory, names are ids.
type Directory interface {
	// UserID returns the platform id of the user a policy entry ("alice",
	// "@alice", "U123") names, or "" when the platform has no such user.
	UserID(ctx context.Context, entry string) (string, error)
	// Member reports whether the user with this id belongs to group.
	Member(ctx context.Context, group, userID string) (bool, error)
}

// InList reports whether the user with id userID matches one entry of
// list (a user, by name or id, or "group:<name>"). Only ids are compared.
func InList(ctx context.Context, list []string, userID string, dir Directory) (bool, error) {
	if userID == "" {
		return false, nil
	}
	for _, a := range list {
		if g, ok := Group(a); ok {
			if dir == nil {
				continue
			}
			in, err := dir.Member(ctx, g, userID)
			if err != nil {
				return false, fmt.Errorf("checking membership of %s in %s: %w", userID, DisplayEntry(a), err)
			}
			if in {
				return true, nil
			}
			continue
		}
		id := strings.TrimPrefix(a, "@")
		if dir != nil {
			var err error
			if id, err = dir.UserID(ctx, a); err != nil {
				return false, fmt.Errorf("looking up %s: %w", DisplayEntry(a), err)
			}
		}
		if id != "" && id == userID {
			return true, nil
		}
	}
	return false, nil
}

func describeApprovers(p runmodel.Policy) string {
	s := DisplayList(p.Approvers)
	if s == "" {
		s = "anyone"
	}
	for _, also := range p.AlsoApprovers {
		s += " who are also " + DisplayList(also)
	}
	return s
}

// VoterGroups returns which of the policy's required groups the user belongs to.
func VoterGroups(ctx context.Context, p runmodel.Policy, userID string, dir Directory) ([]string, error) {
	var out []string
	for _, g := range p.RequireGroups {
		in, err := InList(ctx, []string{g}, userID, dir)
		if err != nil {
			return nil, err
		}
		if in {
			out = append(out, g)
		}
	}
	return out, nil
}

// Ballot is one counted vote, as Decide sees it.
type Ballot struct {
	Approve    bool
	BreakGlass bool
	// Groups are the policy's required groups the voter belonged to.
	Groups []string
}

// Decide returns the gate's decision from its counted votes at time now.
// A break-glass vote approves alone. Rejections reject per Policy.Reject;
// Required approvals (with one from each RequireGroups group) approve;
// past expiresAt with neither, the gate expires.
func Decide(p runmodel.Policy, votes []Ballot, expiresAt, now time.Time) runmodel.GateDecision {
	p = p.WithDefaults()
	approvals, rejections := 0, 0
	covered := map[string]bool{}
	for _, v := range votes {
		if v.BreakGlass && v.Approve {
			return runmodel.GateApproved
		}
		if !v.Approve {
			rejections++
			continue
		}
		approvals++
		for _, grp := range v.Groups {
			covered[grp] = true
		}
	}
	if rejections > 0 && (p.Reject != "quorum" || rejections >= p.Required) {
		return runmodel.GateRejected
	}
	groupsOK := true
	for _, grp := range p.RequireGroups {
		if !covered[grp] {
			groupsOK = false
		}
	}
	if approvals >= p.Required && groupsOK {
		return runmodel.GateApproved
	}
	if !expiresAt.IsZero() && !now.Before(expiresAt) {
		return runmodel.GateExpired
	}
	return runmodel.GatePending
}

// Missing says what a pending gate still needs ("1 more approval, one from @dba").
func Missing(p runmodel.Policy, votes []Ballot) string {
	p = p.WithDefaults()
	approvals := 0
	covered := map[string]bool{}
	for _, v := range votes {
		if v.Approve {
			approvals++
			for _, grp := range v.Groups {
				covered[grp] = true
			}
		}
	}
	var parts []string
	if n := p.Required - approvals; n > 0 {
		parts = append(parts, fmt.Sprintf("%d more approval%s", n, plural(n)))
	}
	var miss []string
	for _, grp := range p.RequireGroups {
		if !covered[grp] {
			miss = append(miss, DisplayEntry(grp))
		}
	}
	if len(miss) > 0 {
		parts = append(parts, "one from "+strings.Join(miss, ", "))
	}
	return strings.Join(parts, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
