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
	// AlsoApprovers are further lists an approver must also be in: a
	// runbook's own approvers narrow the configured ones (an approver is
	// eligible only when allowed by both). Not configurable.
	AlsoApprovers [][]string `json:"also_approvers,omitempty" yaml:"-"`
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
	// Reject is "any" (default: one reject rejects) or "quorum"
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
	// Escalate mentions more people when a gate waits: each step once, in
	// order, After the request was posted. It notifies; it never changes
	// who may approve or how many approvals are needed.
	Escalate []Escalation `json:"escalate,omitempty" yaml:"escalate"`
}

// Escalation is one step of a gate's escalation.
type Escalation struct {
	// After is how long after the request the step is taken.
	After Duration `json:"after" yaml:"after"`
	// Notify are users and groups ("group:ci-leads") to mention.
	Notify []string `json:"notify" yaml:"notify"`
	// Channel also shows the mention in the channel, not only in the
	// gate's thread.
	Channel bool `json:"channel,omitempty" yaml:"channel"`
}

// Default is the built-in policy: one approval from anyone but the
// requester, open for 30 minutes. Configured fields replace its fields one
// by one.
var Default = Policy{Required: 1, Expires: Duration(30 * time.Minute)}

// WithDefaults fills the fields the built-in default sets.
func (p Policy) WithDefaults() Policy {
	if p.Required <= 0 {
		p.Required = Default.Required
	}
	if p.Expires <= 0 {
		p.Expires = Default.Expires
	}
	return p
}

// Merge returns base with every field over sets replacing base's, one
// field at a time.
func Merge(base, over Policy) Policy {
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
// per target, per runbook and per operation, applied in that order.
type Config struct {
	Default    Policy            `yaml:"default"`
	Targets    map[string]Policy `yaml:"targets"`
	Runbooks   map[string]Policy `yaml:"runbooks"`
	Operations map[string]Policy `yaml:"operations"`
}

// Resolve returns the policy for a gate of runbook on target calling op
// ("" for an approval step): the built-in default, then the configured
// default, target, runbook and operation levels, merged field by field.
func (c Config) Resolve(target, runbook, op string) Policy {
	p := Merge(Default, c.Default)
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

// Narrow applies a runbook's own approval settings to a configured policy.
// A runbook can only make a gate stricter: eligible approvers are those
// allowed by both, Required is the larger, the expiry the shorter.
func (p Policy) Narrow(approvers []string, required int, expires time.Duration) Policy {
	if required > p.Required {
		p.Required = required
	}
	if expires > 0 && (p.Expires == 0 || Duration(expires) < p.Expires) {
		p.Expires = Duration(expires)
	}
	if len(approvers) > 0 {
		if len(p.Approvers) == 0 {
			p.Approvers = append([]string(nil), approvers...)
		} else {
			p.AlsoApprovers = append(append([][]string(nil), p.AlsoApprovers...), append([]string(nil), approvers...))
		}
	}
	return p
}

// Describe says the policy in one line for the gate message. requester is
// how the requester is shown ("@alice").
func (p Policy) Describe(requester string) string {
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

// CheckVoter decides whether the user with id userID may approve a gate of
// a run requested by requesterID. It returns "" when the approval counts,
// or the reason it does not. Rejecting needs no eligibility.
func CheckVoter(ctx context.Context, p Policy, requesterID, userID string, dir Directory) (string, error) {
	if !p.SelfApproval && userID == requesterID {
		return "you started this run; someone else must approve it", nil
	}
	for _, list := range append([][]string{p.Approvers}, p.AlsoApprovers...) {
		if len(list) == 0 {
			continue
		}
		ok, err := InList(ctx, list, userID, dir)
		if err != nil {
			return "", err
		}
		if !ok {
			return "you are not an approver for this gate (approvers: " + describeApprovers(p) + ")", nil
		}
	}
	return "", nil
}

func describeApprovers(p Policy) string {
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
func VoterGroups(ctx context.Context, p Policy, userID string, dir Directory) ([]string, error) {
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

// Decision is the outcome of a gate.
type Decision string

// Decisions Decide returns.
const (
	Pending  Decision = ""
	Approved Decision = "approved"
	Rejected Decision = "rejected"
	Expired  Decision = "expired"
)

// Decide returns the gate's decision from its counted votes at time now.
// A break-glass vote approves alone. Rejections reject per Policy.Reject;
// Required approvals (with one from each RequireGroups group) approve;
// past expiresAt with neither, the gate expires.
func Decide(p Policy, votes []Ballot, expiresAt, now time.Time) Decision {
	p = p.WithDefaults()
	approvals, rejections := 0, 0
	covered := map[string]bool{}
	for _, v := range votes {
		if v.BreakGlass && v.Approve {
			return Approved
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
		return Rejected
	}
	groupsOK := true
	for _, grp := range p.RequireGroups {
		if !covered[grp] {
			groupsOK = false
		}
	}
	if approvals >= p.Required && groupsOK {
		return Approved
	}
	if !expiresAt.IsZero() && !now.Before(expiresAt) {
		return Expired
	}
	return Pending
}

// Missing says what a pending gate still needs ("1 more approval, one from @dba").
func Missing(p Policy, votes []Ballot) string {
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
