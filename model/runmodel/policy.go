package runmodel

import (
	"encoding/json"
	"fmt"
	"time"

	"gopkg.in/yaml.v3"
)

// The approval policy a gate carries: who may approve, how many, for how
// long. Package policy resolves it from the configuration and decides
// gates with it; a gate stores the resolved policy it was opened with.

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
	// AlsoBreakGlass are further lists a break-glass user must also be in:
	// a change touching several teams may be overridden only by someone
	// every team's policy lets break glass. Not configurable.
	AlsoBreakGlass [][]string `json:"also_break_glass,omitempty" yaml:"-"`
	// Teams are the Concourse teams whose own policy level
	// (approvals.teams.<team>) shaped this gate's policy, with what each
	// asked: shown on the gate, named in refusals. Not configurable.
	Teams []TeamAsk `json:"teams,omitempty" yaml:"-"`
	// Roles, on a target whose authority is Concourse, asks that every
	// approver hold a Concourse role on each team the change touches. Not
	// configurable: set from the target and the operation.
	Roles *RoleCheck `json:"roles,omitempty" yaml:"-"`
}

// RoleCheck asks for a Concourse role (authority: concourse): on Target,
// at least Role on each of Teams; a team "" stands for things of no team
// (a global worker), which only a Concourse admin may change.
type RoleCheck struct {
	Target string   `json:"target"`
	Role   string   `json:"role"`
	Teams  []string `json:"teams"`
}

// TeamAsk is what the policy of one Concourse team asked of a gate whose
// change touches that team's things.
type TeamAsk struct {
	Team string `json:"team"`
	// Source is the configuration key of the team's level
	// ("approvals.teams.payments").
	Source string `json:"source"`
	// Level is what that level sets (who may start runs left out).
	Level Policy `json:"level"`
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

// DefaultPolicy is the built-in policy: one approval from anyone but the
// requester, open for 30 minutes. Configured fields replace its fields one
// by one.
var DefaultPolicy = Policy{Required: 1, Expires: Duration(30 * time.Minute)}

// WithDefaults fills the fields the built-in default sets.
func (p Policy) WithDefaults() Policy {
	if p.Required <= 0 {
		p.Required = DefaultPolicy.Required
	}
	if p.Expires <= 0 {
		p.Expires = DefaultPolicy.Expires
	}
	return p
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
