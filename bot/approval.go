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

// Policy says who may approve a gate and how many approvals it needs.
type Policy struct {
	// Approvers are user ids or names, or "group:<name>". Empty means anyone
	// (other than the requester, unless SelfApproval).
	Approvers []string `json:"approvers,omitempty" yaml:"approvers"`
	// Required is how many distinct people must approve (default 1).
	Required int `json:"required,omitempty" yaml:"required"`
	// Expires is how long the request stays open (default 30m).
	Expires Duration `json:"expires,omitempty" yaml:"expires"`
	// SelfApproval lets the requester approve their own run. Off by default;
	// turning it on is logged loudly.
	SelfApproval bool `json:"self_approval,omitempty" yaml:"self_approval"`
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
		var names []string
		for _, a := range p.Approvers {
			names = append(names, displayApprover(a))
		}
		who = strings.Join(names, ", ")
	}
	s := fmt.Sprintf("Needs %d approval%s from %s", p.Required, plural(p.Required), who)
	if !p.SelfApproval {
		s += fmt.Sprintf(" · not %s (requester)", requester.Display())
	}
	return s
}

func displayApprover(a string) string {
	if g, ok := strings.CutPrefix(a, "group:"); ok {
		return "@" + g
	}
	return "@" + strings.TrimPrefix(a, "@")
}

// MemberFunc reports whether user belongs to group.
type MemberFunc func(ctx context.Context, group string, user User) (bool, error)

// CheckVoter decides whether user may vote on a gate of a run requested by
// requester. It returns "" when the vote counts, or the reason it does not.
func CheckVoter(ctx context.Context, p Policy, requester, user User, member MemberFunc) (string, error) {
	if !p.SelfApproval && user.ID == requester.ID {
		return "you started this run; someone else must approve it", nil
	}
	if len(p.Approvers) == 0 {
		return "", nil
	}
	for _, a := range p.Approvers {
		if g, ok := strings.CutPrefix(a, "group:"); ok {
			if member == nil {
				continue
			}
			in, err := member(ctx, g, user)
			if err != nil {
				return "", fmt.Errorf("checking membership of %s in %s: %w", user.Display(), a, err)
			}
			if in {
				return "", nil
			}
			continue
		}
		a = strings.TrimPrefix(a, "@")
		if a == user.ID || (user.Name != "" && a == user.Name) {
			return "", nil
		}
	}
	var names []string
	for _, a := range p.Approvers {
		names = append(names, displayApprover(a))
	}
	return "you are not an approver for this gate (approvers: " + strings.Join(names, ", ") + ")", nil
}

// Decide returns the gate's decision from its counted votes at time now.
// One eligible reject rejects; Required approvals approve; past ExpiresAt
// with neither, the gate expires.
func Decide(g *Gate, now time.Time) GateDecision {
	p := g.Policy.withDefaults()
	approvals := 0
	for _, v := range g.Votes {
		if !v.Approve {
			return GateRejected
		}
		approvals++
	}
	if approvals >= p.Required {
		return GateApproved
	}
	if !g.ExpiresAt.IsZero() && !now.Before(g.ExpiresAt) {
		return GateExpired
	}
	return GatePending
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
