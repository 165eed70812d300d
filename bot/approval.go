package bot

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration that reads and writes as "30m" in YAML and JSON.
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration (e.g. 30m, 2h)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Policy says who may approve a gate, how many approvals it needs, and who
// may start runs. Fields left zero inherit from the less specific level
// (default → target → runbook → operation).
type Policy struct {
	// Approvers are user ids or names, or "group:<name>". Empty means anyone
	// (other than the requester, unless SelfApproval).
	Approvers []string `json:"approvers,omitempty" yaml:"approvers"`
	// Required is how many distinct people must approve (default 1).
	Required int `json:"required,omitempty" yaml:"required"`
	// RequireGroups asks for at least one approval from each of these
	// groups ("group:dba"), on top of Required.
	RequireGroups []string `json:"require_groups,omitempty" yaml:"require_groups"`
	// Expires is how long the request stays open (default 30m).
	Expires Duration `json:"expires,omitempty" yaml:"expires"`
	// SelfApproval lets the requester approve their own run. Off by default;
	// turning it on is logged loudly.
	SelfApproval bool `json:"self_approval,omitempty" yaml:"self_approval"`
	// Reject is "any" (default: one eligible reject rejects) or "quorum"
	// (Required rejections reject).
	Reject string `json:"reject,omitempty" yaml:"reject"`
	// BreakGlass lists who may override a gate alone, with a mandatory
	// reason (`/runbook approve <run> --break-glass <reason>`); every use is
	// audited and announced in the channel.
	BreakGlass []string `json:"break_glass,omitempty" yaml:"break_glass"`
	// Runners may start runbooks that change something (write or destructive
	// steps). Empty means anyone.
	Runners []string `json:"runners,omitempty" yaml:"runners"`
	// ReadOnlyRunners may start runbooks with only read steps. Empty means anyone.
	ReadOnlyRunners []string `json:"read_only_runners,omitempty" yaml:"read_only_runners"`
}

// DefaultPolicy is used when nothing is configured.
var DefaultPolicy = Policy{Required: 1, Expires: Duration(30 * time.Minute)}

// withDefaults fills zero fields.
func (p Policy) withDefaults() Policy {
	if p.Required <= 0 {
		p.Required = 1
	}
	if p.Expires <= 0 {
		p.Expires = DefaultPolicy.Expires
	}
	return p
}

// Tighten merges a runbook's own approval settings into a configured policy.
// A runbook can only make a gate stricter: more approvals, a shorter expiry,
// and its approver list applies only where the configuration allows anyone.
func (p Policy) Tighten(approvers []string, required int, expires time.Duration) Policy {
	if required > p.Required {
		p.Required = required
	}
	if expires > 0 && (p.Expires == 0 || Duration(expires) < p.Expires) {
		p.Expires = Duration(expires)
	}
	if len(p.Approvers) == 0 && len(approvers) > 0 {
		p.Approvers = append([]string(nil), approvers...)
	}
	return p
}

// Describe says the policy in one line for the gate message.
func (p Policy) Describe(requester User) string {
	p = p.withDefaults()
	who := "anyone"
	if len(p.Approvers) > 0 {
		who = displayList(p.Approvers)
	}
	s := fmt.Sprintf("Needs %d approval%s from %s", p.Required, plural(p.Required), who)
	if len(p.RequireGroups) > 0 {
		s += fmt.Sprintf(" (at least one from each of %s)", displayList(p.RequireGroups))
	}
	if !p.SelfApproval {
		s += fmt.Sprintf(" · not %s (requester)", requester.Display())
	} else {
		s += " · ⚠️ self-approval allowed by policy"
	}
	if p.Reject == "quorum" {
		s += fmt.Sprintf(" · %d rejections reject", p.Required)
	}
	return s
}

func displayList(xs []string) string {
	names := make([]string, 0, len(xs))
	for _, a := range xs {
		names = append(names, displayApprover(a))
	}
	return strings.Join(names, ", ")
}

func displayApprover(a string) string {
	if g, ok := strings.CutPrefix(a, "group:"); ok {
		return "@" + g
	}
	return "@" + strings.TrimPrefix(a, "@")
}

// MemberFunc reports whether user belongs to group.
type MemberFunc func(ctx context.Context, group string, user User) (bool, error)

// InList reports whether user matches one entry of list (user id, name,
// "@name" or "group:<name>").
func InList(ctx context.Context, list []string, user User, member MemberFunc) (bool, error) {
	for _, a := range list {
		if g, ok := strings.CutPrefix(a, "group:"); ok {
			if member == nil {
				continue
			}
			in, err := member(ctx, g, user)
			if err != nil {
				return false, fmt.Errorf("checking membership of %s in %s: %w", user.Display(), a, err)
			}
			if in {
				return true, nil
			}
			continue
		}
		a = strings.TrimPrefix(a, "@")
		if a == user.ID || (user.Name != "" && a == user.Name) {
			return true, nil
		}
	}
	return false, nil
}

// CheckVoter decides whether user may vote on a gate of a run requested by
// requester. It returns "" when the vote counts, or the reason it does not.
func CheckVoter(ctx context.Context, p Policy, requester, user User, member MemberFunc) (string, error) {
	if !p.SelfApproval && user.ID == requester.ID {
		return "you started this run; someone else must approve it", nil
	}
	if len(p.Approvers) == 0 {
		return "", nil
	}
	ok, err := InList(ctx, p.Approvers, user, member)
	if err != nil || ok {
		return "", err
	}
	return "you are not an approver for this gate (approvers: " + displayList(p.Approvers) + ")", nil
}

// voterGroups returns which of the policy's required groups user belongs to.
func voterGroups(ctx context.Context, p Policy, user User, member MemberFunc) ([]string, error) {
	var out []string
	for _, g := range p.RequireGroups {
		in, err := InList(ctx, []string{g}, user, member)
		if err != nil {
			return nil, err
		}
		if in {
			out = append(out, g)
		}
	}
	return out, nil
}

// Decide returns the gate's decision from its counted votes at time now.
// A break-glass vote approves alone. Rejections reject per Policy.Reject;
// Required approvals (with one from each RequireGroups group) approve;
// past ExpiresAt with neither, the gate expires.
func Decide(g *Gate, now time.Time) GateDecision {
	p := g.Policy.withDefaults()
	approvals, rejections := 0, 0
	covered := map[string]bool{}
	for _, v := range g.Votes {
		if v.BreakGlass && v.Approve {
			return GateApproved
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
		return GateRejected
	}
	groupsOK := true
	for _, grp := range p.RequireGroups {
		if !covered[grp] {
			groupsOK = false
		}
	}
	if approvals >= p.Required && groupsOK {
		return GateApproved
	}
	if !g.ExpiresAt.IsZero() && !now.Before(g.ExpiresAt) {
		return GateExpired
	}
	return GatePending
}

// Missing says what a pending gate still needs ("1 more approval, one from @dba").
func Missing(g *Gate) string {
	p := g.Policy.withDefaults()
	approvals := 0
	covered := map[string]bool{}
	for _, v := range g.Votes {
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
			miss = append(miss, displayApprover(grp))
		}
	}
	if len(miss) > 0 {
		parts = append(parts, "one from "+strings.Join(miss, ", "))
	}
	return strings.Join(parts, ", ")
}

// castVote records v on the gate, replacing an earlier vote by the same person.
func (g *Gate) castVote(v Vote) {
	for i := range g.Votes {
		if g.Votes[i].User.ID == v.User.ID {
			g.Votes[i] = v
			return
		}
	}
	g.Votes = append(g.Votes, v)
}

// withdraw removes a person's vote (a removed reaction).
func (g *Gate) withdraw(userID string, approve bool) bool {
	for i := range g.Votes {
		if g.Votes[i].User.ID == userID && g.Votes[i].Approve == approve {
			g.Votes = append(g.Votes[:i], g.Votes[i+1:]...)
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
