package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// The policy of Concourse teams (approvals.teams.<team>).
//
// A team's level is applied last, over the target, runbook and operation
// levels, for the things of that team (its pipelines, builds, caches,
// team workers): what a team asks of changes to its own things is not
// undone by a runbook or operation level. It names who approves them
// (approvers, break_glass, escalate replace the fields above), and can
// only make a gate stricter otherwise: required is the larger,
// require_groups are added, expires is the shorter, reject "any" wins,
// and it cannot allow self-approval. Its runners and read_only_runners
// restrict who may start a run that touches the team, on top of the
// other levels (MayStart).
//
// A change that touches the things of several teams (or of a team and
// things of no team, as a global worker) needs what each asks: an
// approver must be eligible for every team (each one's approvers), the
// required groups of all of them are needed, the largest count, the
// shortest expiry, and break glass only by someone every team allows.

// TargetTeamKey is the key of a team's level on one target only
// (approvals.teams."infra-prd/payments"): a Concourse team name has no
// "/", so the key cannot be a team's.
func TargetTeamKey(target, team string) string { return target + "/" + team }

// TeamLevel returns the level of team's things on target: the team's
// level on every target (approvals.teams.<team>), then its level on that
// target (approvals.teams.<target>/<team>), merged field by field — the
// target's form sets only the fields it names, over the team's. src says
// which keys it comes from ("approvals.teams.payments",
// "approvals.teams.infra-prd/payments", or both joined by " + "); ok is
// false when neither is configured.
func (c Config) TeamLevel(target, team string) (lvl runmodel.Policy, src string, ok bool) {
	all, hasAll := c.Teams[team]
	one, hasOne := c.Teams[TargetTeamKey(target, team)]
	switch {
	case hasAll && hasOne:
		return Merge(all, one), "approvals.teams." + team + " + approvals.teams." + TargetTeamKey(target, team), true
	case hasOne:
		return one, "approvals.teams." + TargetTeamKey(target, team), true
	case hasAll:
		return all, "approvals.teams." + team, true
	}
	return runmodel.Policy{}, "", false
}

// teamKeySetting returns the key of the most specific level of team on
// target that sets a field (get), and its list: the target's form first.
func (c Config) teamKeySetting(target, team string, get func(runmodel.Policy) []string) (string, []string) {
	if p, ok := c.Teams[TargetTeamKey(target, team)]; ok && len(get(p)) > 0 {
		return "approvals.teams." + TargetTeamKey(target, team), get(p)
	}
	if p, ok := c.Teams[team]; ok && len(get(p)) > 0 {
		return "approvals.teams." + team, get(p)
	}
	return "", nil
}

// ResolveTeams returns the policy of a gate of runbook on target calling
// op ("" for an approval step) whose change touches the things of teams
// and, when teamless, things of no team. Without teams it is Resolve.
func (c Config) ResolveTeams(target, runbook, op string, teams []string, teamless bool) runmodel.Policy {
	base := c.Resolve(target, runbook, op)
	var each []runmodel.Policy
	var asks []runmodel.TeamAsk
	plain := teamless || len(teams) == 0 // something the target's policy covers as it is
	for _, t := range sortedSet(teams) {
		lvl, src, ok := c.TeamLevel(target, t)
		if !ok {
			plain = true
			continue
		}
		each = append(each, teamLevel(base, lvl))
		lvl.Runners, lvl.ReadOnlyRunners = nil, nil
		asks = append(asks, runmodel.TeamAsk{Team: t, Source: src, Level: lvl})
	}
	if plain {
		each = append([]runmodel.Policy{base}, each...)
	}
	p := combine(each)
	p.Teams = asks
	return p
}

// teamLevel applies a team's level over the policy resolved for the
// target, runbook and operation (both with the built-in defaults).
func teamLevel(base, lvl runmodel.Policy) runmodel.Policy {
	p := base
	if len(lvl.Approvers) > 0 {
		p.Approvers = lvl.Approvers
	}
	if len(lvl.BreakGlass) > 0 {
		p.BreakGlass = lvl.BreakGlass
	}
	if len(lvl.Escalate) > 0 {
		p.Escalate = lvl.Escalate
	}
	p.Required = max(p.Required, lvl.Required)
	p.RequireGroups = union(p.RequireGroups, lvl.RequireGroups)
	if lvl.Expires > 0 && lvl.Expires < p.Expires {
		p.Expires = lvl.Expires
	}
	if lvl.Reject == "any" {
		p.Reject = ""
	}
	return p.WithDefaults()
}

// combine is the policy that asks what each of ps asks (ps[0] first).
func combine(ps []runmodel.Policy) runmodel.Policy {
	if len(ps) == 1 {
		return ps[0]
	}
	p := ps[0]
	lists := [][]string{}
	breakGlass := [][]string{}
	for _, q := range ps {
		for _, l := range append([][]string{q.Approvers}, q.AlsoApprovers...) {
			lists = addList(lists, l)
		}
		breakGlass = addList(breakGlass, q.BreakGlass)
		p.Required = max(p.Required, q.Required)
		p.RequireGroups = union(p.RequireGroups, q.RequireGroups)
		if q.Expires < p.Expires {
			p.Expires = q.Expires
		}
		if q.Reject != "quorum" {
			p.Reject = q.Reject
		}
		p.SelfApproval = p.SelfApproval && q.SelfApproval
		p.Escalate = mergeEscalation(p.Escalate, q.Escalate)
	}
	p.Approvers, p.AlsoApprovers = nil, nil
	if len(lists) > 0 {
		p.Approvers, p.AlsoApprovers = lists[0], lists[1:]
	}
	p.BreakGlass, p.AlsoBreakGlass = nil, nil
	enabled := true
	for _, q := range ps {
		enabled = enabled && len(q.BreakGlass) > 0
	}
	if enabled && len(breakGlass) > 0 {
		p.BreakGlass, p.AlsoBreakGlass = breakGlass[0], breakGlass[1:]
	}
	if len(p.AlsoApprovers) == 0 {
		p.AlsoApprovers = nil
	}
	if len(p.AlsoBreakGlass) == 0 {
		p.AlsoBreakGlass = nil
	}
	return p
}

// addList adds a non-empty list of people to lists, unless the same
// entries are there already.
func addList(lists [][]string, l []string) [][]string {
	if len(l) == 0 {
		return lists
	}
	key := strings.Join(sortedSet(l), "\x00")
	for _, x := range lists {
		if strings.Join(sortedSet(x), "\x00") == key {
			return lists
		}
	}
	return append(lists, l)
}

// mergeEscalation returns the steps of a and b in order of their delay,
// each once.
func mergeEscalation(a, b []runmodel.Escalation) []runmodel.Escalation {
	out := append([]runmodel.Escalation(nil), a...)
	for _, e := range b {
		if !slices.ContainsFunc(out, func(x runmodel.Escalation) bool {
			return x.After == e.After && x.Channel == e.Channel && slices.Equal(x.Notify, e.Notify)
		}) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].After < out[j].After })
	return out
}

// union returns a with the entries of b it lacks added, in order.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func sortedSet(xs []string) []string {
	out := append([]string(nil), xs...)
	sort.Strings(out)
	return slices.Compact(out)
}

// TeamLines says, one line per team, what each team's policy asked of a
// gate ("`payments` (approvals.teams.payments): approvers @payments-leads,
// 2 approvals"); none when no team's level applied.
func TeamLines(p runmodel.Policy) []string {
	var out []string
	for _, a := range p.Teams {
		out = append(out, fmt.Sprintf("Team `%s` (%s): %s", a.Team, codeSources(a.Source), describeLevel(a.Level)))
	}
	return out
}

// describeLevel says what a team's level sets, for people.
func describeLevel(l runmodel.Policy) string {
	var parts []string
	if len(l.Approvers) > 0 {
		parts = append(parts, "approvers "+DisplayList(l.Approvers))
	}
	if l.Required > 0 {
		parts = append(parts, fmt.Sprintf("%d approval%s", l.Required, plural(l.Required)))
	}
	if len(l.RequireGroups) > 0 {
		parts = append(parts, "one from each of "+DisplayList(l.RequireGroups))
	}
	if l.Expires > 0 {
		parts = append(parts, "expires after "+shortDuration(time.Duration(l.Expires)))
	}
	if len(l.BreakGlass) > 0 {
		parts = append(parts, "break glass "+DisplayList(l.BreakGlass))
	}
	if len(l.Escalate) > 0 {
		parts = append(parts, fmt.Sprintf("%d escalation step%s", len(l.Escalate), plural(len(l.Escalate))))
	}
	if len(parts) == 0 {
		return "nothing beyond the target's policy"
	}
	return strings.Join(parts, ", ")
}

// teamOfList returns the team whose level's approvers (or break-glass
// users) are list, "" when list is not a team's own.
func teamOfList(p runmodel.Policy, list []string, breakGlass bool) (runmodel.TeamAsk, bool) {
	for _, a := range p.Teams {
		l := a.Level.Approvers
		if breakGlass {
			l = a.Level.BreakGlass
		}
		if len(l) > 0 && slices.Equal(sortedSet(l), sortedSet(list)) {
			return a, true
		}
	}
	return runmodel.TeamAsk{}, false
}

// shortDuration says d as people write it in a policy ("45m", "2h", "1h30m").
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// codeSources shows a team level's source keys as code: "`approvals.teams.payments`
// + `approvals.teams.infra-prd/payments`".
func codeSources(src string) string {
	return "`" + strings.ReplaceAll(src, " + ", "` + `") + "`"
}
