package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// Channels binds chat channels to what they may act on (the `channels:`
// key of groundcrew.yaml): a bound channel runs runbooks only on its
// targets and changes only the things of its Concourse teams; what it is
// shown and offered (lists, form choices, did-you-mean) is limited to
// them, so a name of another team is never suggested or echoed there.
// An unbound channel keeps today's behaviour, unless Default is "deny".
type Channels struct {
	// Default is what an unbound channel may do: "allow" (or "": as if
	// there were no bindings) or "deny" (nothing).
	Default string
	// Bindings are keyed as written: a channel name ("#payments-ci") or a
	// platform id ("C0123ABCD"); the engine turns names into ids through
	// the chat platform.
	Bindings map[string]Binding
}

// Binding is what one channel may act on.
type Binding struct {
	// Targets it may run on (empty: every target).
	Targets []string `yaml:"targets"`
	// Teams whose things it may change, read by name and be offered (empty:
	// every team). Things of no team (a global worker, a database table)
	// are not any team's: a channel bound to teams may not change them.
	Teams []string `yaml:"teams"`
}

// Channel defaults.
const (
	ChannelsAllow = "allow"
	ChannelsDeny  = "deny"
)

// UnmarshalYAML reads `channels:`: the key `default` (allow or deny) and
// one binding per channel.
func (c *Channels) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: channels: want a mapping of channels (\"#payments-ci\": {targets: [...], teams: [...]}) and default: allow|deny", n.Line)
	}
	c.Bindings = map[string]Binding{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "default" {
			if v.Kind != yaml.ScalarNode || (v.Value != ChannelsAllow && v.Value != ChannelsDeny) {
				return fmt.Errorf("line %d: channels.default: %q: use allow (an unbound channel may do what the policy allows) or deny (only bound channels may run runbooks)", v.Line, v.Value)
			}
			c.Default = v.Value
			continue
		}
		var b Binding
		dec := v
		if v.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(v.Content); j += 2 {
				if f := v.Content[j].Value; f != "targets" && f != "teams" {
					return fmt.Errorf("line %d: channels.%s: unknown key %q: a channel lists its targets and teams", v.Content[j].Line, k.Value, f)
				}
			}
		}
		if err := dec.Decode(&b); err != nil {
			return fmt.Errorf("line %d: channels.%s: %v", v.Line, k.Value, err)
		}
		if _, dup := c.Bindings[k.Value]; dup {
			return fmt.Errorf("line %d: channels.%s is given twice", k.Line, k.Value)
		}
		c.Bindings[k.Value] = b
	}
	return nil
}

// Keys returns the bound channels as written, sorted.
func (c Channels) Keys() []string {
	out := make([]string, 0, len(c.Bindings))
	for k := range c.Bindings {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PostScope is the scope of what the bot posts on its own into channel
// (a digest, a watch rule's incidents), as written in the configuration:
// the binding whose key is written the same ("#payments-ci" or the id);
// unbound otherwise. `config check` refuses a channel written otherwise
// than its binding.
func (c Channels) PostScope(channel string) Scope {
	if b, ok := c.Bindings[channel]; ok {
		return Scope{Key: channel, Targets: sortedSet(b.Targets), Teams: sortedSet(b.Teams)}
	}
	return Scope{}
}

// Configured reports whether any channel rule is set.
func (c Channels) Configured() bool { return len(c.Bindings) > 0 || c.Default == ChannelsDeny }

// Scope is what the channel a command came from may act on.
type Scope struct {
	// Key is the binding's key in the configuration ("#payments-ci"; ""
	// for an unbound channel).
	Key string
	// Denied: an unbound channel under `default: deny`; it may do nothing.
	Denied  bool
	Targets []string
	Teams   []string
}

// ScopeOf returns the scope of the channel with platform id channelID.
// idOf turns a binding's key into the channel's id ("" when it cannot be
// resolved now); a key that is already an id is its own.
func (c Channels) ScopeOf(channelID string, idOf func(key string) string) Scope {
	for _, k := range c.Keys() {
		id := k
		if idOf != nil {
			id = idOf(k)
		}
		if id != "" && (id == channelID || k == channelID) {
			b := c.Bindings[k]
			return Scope{Key: k, Targets: sortedSet(b.Targets), Teams: sortedSet(b.Teams)}
		}
	}
	return Scope{Denied: c.Default == ChannelsDeny}
}

// Data is the scope as a run keeps it (nil for an unbound channel).
func (s Scope) Data() *runmodel.ChannelScope {
	if !s.Bound() {
		return nil
	}
	return &runmodel.ChannelScope{Key: s.Key, Targets: slices.Clone(s.Targets), Teams: slices.Clone(s.Teams)}
}

// ScopeOfRun is the scope a run kept (every target and team for nil).
func ScopeOfRun(d *runmodel.ChannelScope) Scope {
	if d == nil {
		return Scope{}
	}
	return Scope{Key: d.Key, Targets: slices.Clone(d.Targets), Teams: slices.Clone(d.Teams)}
}

// SeesRun reports whether a channel with this scope is shown run r (in
// `/runbook status` and summaries): an unbound channel sees every run; a
// bound one the runs started in it (channel is its platform id) and those
// on its targets whose teams are all its own — a run scoped to its teams,
// or one whose changes concern only them. A run of every team, or of no
// team yet, is not a team's channel's to read: it would name others.
func (s Scope) SeesRun(r *runmodel.Run, channel string) bool {
	switch {
	case s.Denied:
		return false
	case !s.Bound():
		return true
	case r.Conversation.Channel == channel:
		return true
	case !s.AllowsTarget(r.Target):
		return false
	case len(s.Teams) == 0:
		return true
	}
	teams := r.Teams()
	if r.Scope != nil {
		if len(r.Scope.Teams) == 0 {
			return false
		}
		teams = append(teams, r.Scope.Teams...)
	}
	if len(teams) == 0 {
		return false
	}
	for _, t := range teams {
		if !s.AllowsTeam(t) {
			return false
		}
	}
	return true
}

// RunScope says, in a run's status, summary and page, the channel
// binding the run is scoped to and the teams its changes concern:
// "`#payments-ci` (bound to team `payments` on `infra-prd`) · changes of
// team `payments`". It is "" when neither is worth saying: a run from an
// unbound channel whose changes concern no team or only the target's own
// (a one-team installation sees nothing new).
func RunScope(r *runmodel.Run) string {
	var parts []string
	if r.Scope != nil {
		parts = append(parts, fmt.Sprintf("`%s` (bound to %s)", r.Scope.Key, ScopeOfRun(r.Scope).What()))
	}
	teams := r.Teams()
	if len(teams) > 1 || len(teams) == 1 && (r.Scope != nil || r.Team == "" || teams[0] != r.Team) {
		what := "team `" + teams[0] + "`"
		if len(teams) > 1 {
			what = "teams " + codeList(teams)
		}
		parts = append(parts, "changes of "+what)
	}
	return strings.Join(parts, " · ")
}

// Bound reports whether the channel has a binding.
func (s Scope) Bound() bool { return s.Key != "" }

// Everything reports whether the scope limits nothing (an unbound channel
// under the default allow, or a binding that lists no target nor team).
func (s Scope) Everything() bool { return !s.Denied && len(s.Targets) == 0 && len(s.Teams) == 0 }

// AllowsTarget reports whether the channel may run on target.
func (s Scope) AllowsTarget(target string) bool {
	return !s.Denied && (len(s.Targets) == 0 || slices.Contains(s.Targets, target))
}

// AllowsTeam reports whether the channel may act on the things of team
// ("" for things of no team).
func (s Scope) AllowsTeam(team string) bool {
	return !s.Denied && (len(s.Teams) == 0 || team != "" && slices.Contains(s.Teams, team))
}

// CallTeams is what an operation call from the channel may act on
// (opmodel.Call.Teams): its teams, nil for every team.
func (s Scope) CallTeams() []string {
	if len(s.Teams) == 0 {
		return nil
	}
	return slices.Clone(s.Teams)
}

// FilterTargets keeps the targets the channel may run on.
func (s Scope) FilterTargets(targets []string) []string {
	var out []string
	for _, t := range targets {
		if s.AllowsTarget(t) {
			out = append(out, t)
		}
	}
	return out
}

// FilterTeams keeps the names of the teams (or team/pipeline references)
// the channel may act on.
func (s Scope) FilterTeams(refs []string) []string {
	if len(s.Teams) == 0 && !s.Denied {
		return refs
	}
	var out []string
	for _, r := range refs {
		team, _, _ := strings.Cut(r, "/")
		if s.AllowsTeam(team) {
			out = append(out, r)
		}
	}
	return out
}

// What says what the channel may act on, for refusals: "team `payments`
// on `infra-prd`", "targets `infra-stg`, `infra-dev`".
func (s Scope) What() string {
	var parts []string
	switch len(s.Teams) {
	case 0:
	case 1:
		parts = append(parts, "team `"+s.Teams[0]+"`")
	default:
		parts = append(parts, "teams "+codeList(s.Teams))
	}
	switch len(s.Targets) {
	case 0:
	case 1:
		parts = append(parts, "on `"+s.Targets[0]+"`")
	default:
		parts = append(parts, "on "+codeList(s.Targets))
	}
	if len(parts) == 0 {
		return "every target and team"
	}
	return strings.Join(parts, " ")
}

func codeList(xs []string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = "`" + x + "`"
	}
	return strings.Join(out, ", ")
}

// Refusal says why the channel may not start runbook on target naming
// teams ("" when it may). It never names a team the channel is not bound
// to: it says what the channel may act on instead.
func (s Scope) Refusal(target string, teams []string) string {
	switch {
	case s.Denied:
		return "This channel may not run runbooks: it is not bound under `channels:` in groundcrew.yaml, and `channels.default` is `deny`. Run it in a channel bound to the target and team, or ask an admin to bind this one."
	case !s.AllowsTarget(target):
		return fmt.Sprintf("This channel (`channels.%s`) may act only on %s: run it there, or in a channel bound to that target.", s.Key, s.What())
	}
	for _, t := range teams {
		if !s.AllowsTeam(t) {
			return fmt.Sprintf("This channel (`channels.%s`) may act only on %s, and the command names another team: run it in that team's channel.", s.Key, s.What())
		}
	}
	return ""
}

// ChangeRefusal says why a change of the things of teams (and, when
// teamless, of things of no team) may not be made from the channel (""
// when it may), without naming a team the channel is not bound to.
func (s Scope) ChangeRefusal(teams []string, teamless bool) string {
	if s.Denied {
		return "this channel is not bound under `channels:` and `channels.default` is `deny`"
	}
	if len(s.Teams) == 0 {
		return ""
	}
	other := 0
	for _, t := range teams {
		if !s.AllowsTeam(t) {
			other++
		}
	}
	switch {
	case other > 0 && teamless:
		return fmt.Sprintf("this channel (`channels.%s`) may change only the things of %s; the plan touches another team's and things of no team (a global worker, a table): run it from a channel bound to them", s.Key, s.What())
	case other > 0:
		return fmt.Sprintf("this channel (`channels.%s`) may change only the things of %s; the plan touches another team's: run it from a channel bound to that team", s.Key, s.What())
	case teamless:
		return fmt.Sprintf("this channel (`channels.%s`) may change only the things of %s; the plan touches things of no team (a global worker, a table), which belong to the target: run it from a channel bound to every team of it", s.Key, s.What())
	}
	return ""
}

// check validates the bindings: every target is configured, every team
// exists on the live targets (as approvals.teams keys are), every channel
// name exists on the chat platform, and a binding names something.
func (c Channels) check(ctx context.Context, k Known) []Problem {
	var out []Problem
	for _, key := range c.Keys() {
		b := c.Bindings[key]
		path := "channels." + key
		if strings.TrimSpace(key) == "" || key == "#" {
			out = append(out, Problem{Path: path, Msg: "is not a channel: write \"#name\" or the channel's id"})
			continue
		}
		for _, t := range b.Targets {
			if !contains(k.Targets, t) {
				msg := fmt.Sprintf("no target %q", t)
				if s := textmodel.Suggest(t, k.Targets); s != "" {
					msg += fmt.Sprintf("; did you mean %q?", s)
				} else if len(k.Targets) > 0 {
					msg += " (targets: " + strings.Join(k.Targets, ", ") + ")"
				}
				out = append(out, Problem{Path: path + ".targets", Msg: msg})
			}
		}
		kt := k
		if len(b.Targets) > 0 {
			kt.Targets = b.Targets
		}
		for _, t := range b.Teams {
			if strings.TrimSpace(t) == "" || strings.Contains(t, "/") {
				out = append(out, Problem{Path: path + ".teams", Msg: fmt.Sprintf("%q is not a Concourse team name", t)})
				continue
			}
			out = append(out, kt.checkTeam(ctx, path+".teams", t)...)
		}
		if k.Channel != nil {
			if _, err := k.Channel(ctx, key); err != nil {
				if errors.Is(err, ErrUnknown) {
					out = append(out, Problem{Path: path, Msg: fmt.Sprintf("no channel %s on the chat platform%s (use the channel's name with # or its id, and add the bot to it)", key, didYouMean(err))})
				} else {
					out = append(out, Problem{Path: path, Warning: true, Msg: fmt.Sprintf("could not look up channel %s: %v", key, err)})
				}
			}
		}
	}
	return out
}
