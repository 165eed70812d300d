package policy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// ErrUnknown is what Known.User and Known.Group wrap when the platform has
// no such user or group.
var ErrUnknown = errors.New("unknown")

// Known is what exists, to check every name a policy uses.
type Known struct {
	Targets []string
	// Runbooks are the runbooks that can run (their approval settings are
	// checked against the policy too). Nil (with Unavailable nil): runbook
	// names are not checked.
	Runbooks []*runbookmodel.Runbook
	// Unavailable are runbook names whose file does not load: a policy may
	// name them.
	Unavailable []string
	// Ops are the operations, by name, with their class ("read", "write",
	// "destructive"). Nil: operation names are not checked.
	Ops map[string]string
	// User returns the platform id of a user entry ("alice"), an error
	// wrapping ErrUnknown when there is none, or why that account cannot
	// approve (a bot, deactivated) as notPerson. Nil when names are ids.
	User func(ctx context.Context, entry string) (id, notPerson string, err error)
	// Members returns a group's member ids, an error wrapping ErrUnknown
	// when the group does not exist. Nil when the platform cannot list groups.
	Members func(ctx context.Context, group string) ([]string, error)
	// Channel returns the platform id of a channel a binding names
	// ("#payments-ci"), an error wrapping ErrUnknown when there is no such
	// channel. Nil: channel names are not checked.
	Channel func(ctx context.Context, name string) (string, error)
	// ConcourseTeams returns the Concourse teams of a target as the bot's
	// account sees them, and whether that is every team (the account is
	// an admin). Nil: team names are not checked.
	ConcourseTeams func(ctx context.Context, target string) (teams []string, all bool, err error)
}

// Problem is one mistake in the policy, at a configuration path.
type Problem struct {
	Path string // "approvals.operations.concourse.prune_wrker"
	Msg  string
	// Warning marks a check that could not be made (the platform did not
	// answer); the configuration may still be right.
	Warning bool
}

func (p Problem) String() string { return p.Path + ": " + p.Msg }

// Check validates the policy against what exists: the keys of targets,
// runbooks and operations name something (with did-you-mean), every user
// and group named exists where the platform can say, the values are in
// range, and for every runbook step with its own approval settings and
// every target someone can satisfy both the runbook and the policy.
// `config check` and `serve` both run it.
func (c Config) Check(ctx context.Context, k Known) []Problem {
	var out []Problem
	add := func(path, format string, args ...any) {
		out = append(out, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	rbNames := append([]string(nil), k.Unavailable...)
	for _, rb := range k.Runbooks {
		rbNames = append(rbNames, rb.Name)
	}
	sort.Strings(rbNames)
	opNames := make([]string, 0, len(k.Ops))
	for n := range k.Ops {
		opNames = append(opNames, n)
	}
	sort.Strings(opNames)
	keys := func(level string, m map[string]runmodel.Policy, known []string, what string) {
		for _, n := range sortedKeys(m) {
			if contains(known, n) {
				continue
			}
			msg := fmt.Sprintf("no %s %q", what, n)
			if s := textmodel.Suggest(n, known); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else if len(known) > 0 && len(known) <= 12 {
				msg += fmt.Sprintf(" (%ss: %s)", what, strings.Join(known, ", "))
			}
			add("approvals."+level+"."+n, "%s", msg)
		}
	}
	keys("targets", c.Targets, k.Targets, "target")
	if k.Runbooks != nil || k.Unavailable != nil {
		keys("runbooks", c.Runbooks, rbNames, "runbook")
	}
	if k.Ops != nil {
		keys("operations", c.Operations, opNames, "operation")
	}

	out = append(out, checkValues("approvals.default", c.Default)...)
	for _, lvl := range []struct {
		name string
		m    map[string]runmodel.Policy
	}{{"targets", c.Targets}, {"runbooks", c.Runbooks}, {"operations", c.Operations}, {"teams", c.Teams}} {
		for _, n := range sortedKeys(lvl.m) {
			out = append(out, checkValues("approvals."+lvl.name+"."+n, lvl.m[n])...)
		}
	}
	for _, n := range sortedKeys(c.Teams) {
		if c.Teams[n].SelfApproval {
			add("approvals.teams."+n+".self_approval", "a team's level can only make its gates stricter: it cannot let requesters approve their own runs (set self_approval at default, targets, runbooks or operations)")
		}
	}
	k = k.cached()
	for _, key := range sortedKeys(c.Teams) {
		path := "approvals.teams." + key
		target, team, one := strings.Cut(key, "/")
		if !one {
			out = append(out, k.checkTeam(ctx, path, key)...)
			continue
		}
		// <target>/<team>: the team's level on that target only.
		switch {
		case strings.TrimSpace(target) == "" || strings.TrimSpace(team) == "" || strings.Contains(team, "/"):
			add(path, "is not a team nor <target>/<team> (a team's level on one target, e.g. \"infra-prd/payments\")")
		case k.Targets != nil && !contains(k.Targets, target):
			msg := fmt.Sprintf("no target %q (a key <target>/<team> is a team's level on one target)", target)
			if s := textmodel.Suggest(target, k.Targets); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", TargetTeamKey(s, team))
			}
			add(path, "%s", msg)
		default:
			kt := k
			kt.Targets = []string{target}
			out = append(out, kt.checkTeam(ctx, path, team)...)
		}
	}
	out = append(out, c.Channels.check(ctx, k)...)
	out = append(out, c.checkNames(ctx, k)...)
	out = append(out, c.checkLevels(ctx, k)...)
	for _, rb := range k.Runbooks {
		out = append(out, c.checkNarrowing(ctx, k, rb)...)
	}
	return out
}

// SelfApprovalAt lists the configuration paths that let requesters
// approve their own runs (the binary logs each loudly).
func (c Config) SelfApprovalAt() []string {
	var out []string
	c.each(func(path string, p runmodel.Policy) {
		if p.SelfApproval {
			out = append(out, path)
		}
	})
	return out
}

// each calls fn for every configured policy, in a stable order.
func (c Config) each(fn func(path string, p runmodel.Policy)) {
	fn("approvals.default", c.Default)
	for _, lvl := range []struct {
		name string
		m    map[string]runmodel.Policy
	}{{"targets", c.Targets}, {"runbooks", c.Runbooks}, {"operations", c.Operations}, {"teams", c.Teams}} {
		for _, n := range sortedKeys(lvl.m) {
			fn("approvals."+lvl.name+"."+n, lvl.m[n])
		}
	}
}

func checkValues(path string, p runmodel.Policy) []Problem {
	var out []Problem
	add := func(field, format string, args ...any) {
		out = append(out, Problem{Path: path + "." + field, Msg: fmt.Sprintf(format, args...)})
	}
	if p.Required < 0 {
		add("required", "must be at least 1")
	}
	if p.Expires < 0 {
		add("expires", "must be positive")
	}
	if p.Reject != "" && p.Reject != "any" && p.Reject != "quorum" {
		add("reject", "%q: use any (one reject rejects) or quorum", p.Reject)
	}
	for field, list := range lists(p) {
		for _, a := range list {
			g, isGroup := Group(a)
			if strings.TrimSpace(strings.TrimPrefix(a, "@")) == "" || (isGroup && strings.TrimSpace(g) == "") {
				add(field, "has an empty entry")
			}
		}
	}
	for _, g := range p.RequireGroups {
		if _, ok := Group(g); !ok {
			add("require_groups", "%q is not a group: write \"group:%s\"", g, strings.TrimPrefix(g, "@"))
		}
	}
	expires := p.WithDefaults().Expires
	var prev runmodel.Duration
	for i, e := range p.Escalate {
		field := fmt.Sprintf("escalate[%d]", i)
		switch {
		case e.After <= 0:
			add(field+".after", "must be positive (e.g. 10m)")
		case e.After <= prev:
			add(field+".after", "%s is not after the step before it (%s): steps are taken in order", time.Duration(e.After), time.Duration(prev))
		case p.Expires > 0 && e.After >= expires:
			add(field+".after", "%s is not before the request expires (expires: %s): it would never be taken", time.Duration(e.After), time.Duration(expires))
		}
		prev = max(prev, e.After)
		if len(e.Notify) == 0 {
			add(field+".notify", "is empty: name the users or groups to mention")
		}
		if len(e.Notify) > MaxNotify {
			add(field+".notify", "names %d entries; at most %d", len(e.Notify), MaxNotify)
		}
		for _, a := range e.Notify {
			g, isGroup := Group(a)
			if strings.TrimSpace(strings.TrimPrefix(a, "@")) == "" || (isGroup && strings.TrimSpace(g) == "") {
				add(field+".notify", "has an empty entry")
			}
		}
	}
	if len(p.Escalate) > MaxEscalation {
		add("escalate", "has %d steps; at most %d", len(p.Escalate), MaxEscalation)
	}
	return out
}

// Bounds of an escalation.
const (
	MaxEscalation = 10
	MaxNotify     = 20
)

// lists returns the policy's lists of people, by field name.
func lists(p runmodel.Policy) map[string][]string {
	return map[string][]string{
		"approvers": p.Approvers, "require_groups": p.RequireGroups, "break_glass": p.BreakGlass,
		"runners": p.Runners, "read_only_runners": p.ReadOnlyRunners,
	}
}

// checkNames checks that every user and group the policy names exists.
func (c Config) checkNames(ctx context.Context, k Known) []Problem {
	var out []Problem
	c.each(func(path string, p runmodel.Policy) {
		fields := lists(p)
		for _, field := range []string{"approvers", "require_groups", "break_glass", "runners", "read_only_runners"} {
			for _, a := range fields[field] {
				if pr, ok := k.checkEntry(ctx, a); !ok {
					pr.Path = path + "." + field
					out = append(out, pr)
				}
			}
		}
		for i, e := range p.Escalate {
			for _, a := range e.Notify {
				if pr, ok := k.checkEntry(ctx, a); !ok {
					pr.Path = fmt.Sprintf("%s.escalate[%d].notify", path, i)
					out = append(out, pr)
				}
			}
		}
	})
	return out
}

// checkTeam checks that team, named at path, is a team of some target: an
// error (with did-you-mean) when every target that answered lists all its
// teams and none has it; a warning when the bot's account cannot see it
// (it has no role on it, so it may exist) or a target did not answer.
func (k Known) checkTeam(ctx context.Context, path, team string) []Problem {
	if k.ConcourseTeams == nil || len(k.Targets) == 0 {
		return nil
	}
	var known []string
	var unseen, failed []string
	for _, t := range k.Targets {
		teams, all, err := k.ConcourseTeams(ctx, t)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", t, err))
			continue
		}
		if contains(teams, team) {
			return nil
		}
		known = union(known, teams)
		if !all {
			unseen = append(unseen, t)
		}
	}
	sort.Strings(known)
	switch {
	case len(unseen) > 0:
		return []Problem{{Path: path, Warning: true, Msg: fmt.Sprintf("the bot's Concourse account cannot see team %q on %s: it has no role on it, or there is no such team%s; groundcrew cannot read or change that team's things there (give the account a role on the team, or check the name)",
			team, strings.Join(unseen, ", "), teamHint(team, known))}}
	case len(failed) > 0:
		return []Problem{{Path: path, Warning: true, Msg: fmt.Sprintf("could not check that team %q exists: %s", team, strings.Join(failed, "; "))}}
	}
	msg := fmt.Sprintf("no team %q on %s%s", team, strings.Join(k.Targets, ", "), teamHint(team, known))
	return []Problem{{Path: path, Msg: msg}}
}

// teamHint is "; did you mean "x"?" or " (teams: a, b)" for a team name
// that none of known is.
func teamHint(team string, known []string) string {
	if s := textmodel.Suggest(team, known); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	if len(known) > 0 && len(known) <= 12 {
		return " (teams: " + strings.Join(known, ", ") + ")"
	}
	return ""
}

// checkEntry checks one policy entry against the platform.
func (k Known) checkEntry(ctx context.Context, a string) (Problem, bool) {
	if g, ok := Group(a); ok {
		if k.Members == nil || strings.TrimSpace(g) == "" {
			return Problem{}, true
		}
		if _, err := k.Members(ctx, g); err != nil {
			if errors.Is(err, ErrUnknown) {
				return Problem{Msg: fmt.Sprintf("no group %q on the chat platform%s", g, didYouMean(err))}, false
			}
			return Problem{Msg: fmt.Sprintf("could not look up group %q: %v", g, err), Warning: true}, false
		}
		return Problem{}, true
	}
	name := strings.TrimPrefix(a, "@")
	if k.User == nil || strings.TrimSpace(name) == "" {
		return Problem{}, true
	}
	_, notPerson, err := k.User(ctx, name)
	switch {
	case errors.Is(err, ErrUnknown):
		return Problem{Msg: fmt.Sprintf("no user %q on the chat platform%s", name, didYouMean(err))}, false
	case err != nil:
		return Problem{Msg: fmt.Sprintf("could not look up user %q: %v", name, err), Warning: true}, false
	case notPerson != "":
		return Problem{Msg: fmt.Sprintf("%q cannot act: %s", name, notPerson)}, false
	}
	return Problem{}, true
}

// didYouMean is "; did you mean "x"?" when err (a look-up of a name the
// platform does not know) carries a close known name: an error in its
// chain with a DidYouMean() string method.
func didYouMean(err error) string {
	var s interface{ DidYouMean() string }
	if errors.As(err, &s) && s.DidYouMean() != "" {
		return fmt.Sprintf("; did you mean %q?", s.DidYouMean())
	}
	return ""
}

// people expands a list to user ids where it can: complete is false when
// some group cannot be listed.
func (k Known) people(ctx context.Context, list []string) (ids map[string]bool, complete bool) {
	ids, complete = map[string]bool{}, true
	for _, a := range list {
		if g, ok := Group(a); ok {
			if k.Members == nil {
				complete = false
				continue
			}
			ms, err := k.Members(ctx, g)
			if err != nil {
				complete = false
				continue
			}
			for _, m := range ms {
				ids[m] = true
			}
			continue
		}
		name := strings.TrimPrefix(a, "@")
		if k.User == nil {
			ids[name] = true
			continue
		}
		id, notPerson, err := k.User(ctx, name)
		switch {
		case errors.Is(err, ErrUnknown), err == nil && (notPerson != "" || id == ""):
			// matches nobody
		case err != nil:
			complete = false
		default:
			ids[id] = true
		}
	}
	return ids, complete
}

// cached returns k with each user and group looked up once: the checks
// below resolve the same names for many combinations of levels.
func (k Known) cached() Known {
	if k.User != nil {
		type res struct {
			id, notPerson string
			err           error
		}
		user, seen := k.User, map[string]res{}
		k.User = func(ctx context.Context, entry string) (string, string, error) {
			r, ok := seen[entry]
			if !ok {
				r.id, r.notPerson, r.err = user(ctx, entry)
				seen[entry] = r
			}
			return r.id, r.notPerson, r.err
		}
	}
	if k.ConcourseTeams != nil {
		type res struct {
			teams []string
			all   bool
			err   error
		}
		teams, seen := k.ConcourseTeams, map[string]res{}
		k.ConcourseTeams = func(ctx context.Context, target string) ([]string, bool, error) {
			r, ok := seen[target]
			if !ok {
				r.teams, r.all, r.err = teams(ctx, target)
				seen[target] = r
			}
			return r.teams, r.all, r.err
		}
	}
	if k.Members != nil {
		type res struct {
			ids []string
			err error
		}
		members, seen := k.Members, map[string]res{}
		k.Members = func(ctx context.Context, group string) ([]string, error) {
			r, ok := seen[group]
			if !ok {
				r.ids, r.err = members(ctx, group)
				seen[group] = r
			}
			return r.ids, r.err
		}
	}
	return k
}

// approvable says who can approve a gate under p when that can be
// counted: the people in every approvers list, less the requester when
// self-approval is off and every person who may start the run is one of
// them. It returns "" when enough people can approve it (or when a group
// cannot be listed or anyone may approve: then nothing is refused).
func (k Known) approvable(ctx context.Context, p runmodel.Policy, changing bool) string {
	eligible, complete := k.people(ctx, p.Approvers)
	if len(p.Approvers) == 0 {
		complete = false // anyone
	}
	// Every list an approver must be in bounds who can approve: their
	// intersection is an upper bound of the eligible people.
	for _, also := range p.AlsoApprovers {
		more, ok := k.people(ctx, also)
		switch {
		case !ok:
		case !complete:
			eligible, complete = more, true
		default:
			for id := range eligible {
				if !more[id] {
					delete(eligible, id)
				}
			}
		}
	}
	if !complete {
		return ""
	}
	n := len(eligible)
	if n > p.Required || n == p.Required && p.SelfApproval {
		return ""
	}
	if n >= p.Required {
		// Exactly enough: a run started by one of them cannot be approved.
		// That refuses only when every run is started by one of them.
		lists := [][]string{p.Runners}
		if !changing {
			lists = append(lists, p.ReadOnlyRunners)
		}
		for _, l := range lists {
			runners, ok := k.people(ctx, l)
			if len(l) == 0 || !ok || len(runners) == 0 {
				return ""
			}
			for id := range runners {
				if !eligible[id] {
					return ""
				}
			}
		}
		return fmt.Sprintf("only %d other than the requester can approve it (self-approval is off, and every person who may start the run is an approver: %s)",
			n-1, DisplayList(p.Runners))
	}
	if n == 0 {
		return "no one can approve it"
	}
	return fmt.Sprintf("only %d %s can approve it", n, map[bool]string{true: "person", false: "people"}[n == 1])
}

// levelRank orders the policy levels from the least specific.
var levelRank = map[string]int{"default": 0, "targets": 1, "runbooks": 2, "operations": 3}

// fieldSource returns the most specific configuration key of (target,
// runbook, op) that sets a field, "" for the built-in default.
func (c Config) fieldSource(target, runbook, op string, set func(runmodel.Policy) bool) string {
	if p, ok := c.Operations[op]; ok && op != "" && set(p) {
		return "approvals.operations." + op
	}
	if p, ok := c.Runbooks[runbook]; ok && set(p) {
		return "approvals.runbooks." + runbook
	}
	if p, ok := c.Targets[target]; ok && set(p) {
		return "approvals.targets." + target
	}
	if set(c.Default) {
		return "approvals.default"
	}
	return ""
}

// checkLevels reports the policies, as merged for a gate on each target,
// runbook and operation the configuration names, that no one can satisfy
// (`approvers: [alice], required: 2`): every run needing that approval
// would only expire. Each mistake is reported once, at the most specific
// key that sets the approvers or the count.
func (c Config) checkLevels(ctx context.Context, k Known) []Problem {
	var out []Problem
	targets := k.Targets
	if len(targets) == 0 {
		targets = []string{""}
	}
	rbs := append([]string{""}, sortedKeys(c.Runbooks)...)
	ops := []string{""}
	for _, op := range sortedKeys(c.Operations) {
		if k.Ops == nil || k.Ops[op] != "read" { // a read opens no gate
			ops = append(ops, op)
		}
	}
	// op "" stands for approval steps and the operations not configured:
	// a gate there is on a changing run when such an operation changes something.
	otherChanging := k.Ops == nil
	for op, class := range k.Ops {
		if _, ok := c.Operations[op]; !ok && class != "read" {
			otherChanging = true
		}
	}
	seen := map[string]bool{}
	for _, t := range targets {
		for _, rb := range rbs {
			for _, op := range ops {
				p := c.Resolve(t, rb, op)
				who := k.approvable(ctx, p, op != "" || otherChanging)
				if who == "" {
					continue
				}
				from := c.fieldSource(t, rb, op, func(p runmodel.Policy) bool { return len(p.Approvers) > 0 })
				count := c.fieldSource(t, rb, op, func(p runmodel.Policy) bool { return p.Required > 0 })
				path, detail := from, ""
				if count != "" && count != from {
					if levelRank[strings.Split(count, ".")[1]] > levelRank[strings.Split(from, ".")[1]] {
						path = count
					}
					detail = fmt.Sprintf(" (approvers from %s, required from %s)", from, count)
				}
				if strings.Contains(who, "self-approval") {
					if src := c.fieldSource(t, rb, op, func(p runmodel.Policy) bool { return len(p.Runners) > 0 }); levelRank[strings.Split(src, ".")[1]] > levelRank[strings.Split(path, ".")[1]] {
						path = src
					}
				}
				fix := "lower required or add approvers"
				if strings.Contains(who, "self-approval") {
					fix += ", or let others start runs"
				}
				msg := fmt.Sprintf("needs %d approval%s from %s%s, and %s: every run that needs this approval would expire; %s",
					p.Required, plural(p.Required), describeApprovers(p), detail, who, fix)
				if seen[path+msg] {
					continue
				}
				seen[path+msg] = true
				out = append(out, Problem{Path: path, Msg: msg})
			}
		}
	}
	// A team's level applies over all of them, for its things (a
	// <target>/<team> key on its target only).
	for _, key := range sortedKeys(c.Teams) {
		team, on := key, targets
		if t, tm, ok := strings.Cut(key, "/"); ok {
			team, on = tm, []string{t}
		}
		for _, t := range on {
			for _, rb := range rbs {
				for _, op := range ops {
					if k.approvable(ctx, c.Resolve(t, rb, op), op != "" || otherChanging) != "" {
						continue // reported above, without the team
					}
					p := c.ResolveTeams(t, rb, op, []string{team}, false)
					who := k.approvable(ctx, p, op != "" || otherChanging)
					if who == "" {
						continue
					}
					path := "approvals.teams." + key
					msg := fmt.Sprintf("needs %d approval%s from %s for team %s's things, and %s: every such run would expire; lower required or add approvers",
						p.Required, plural(p.Required), describeApprovers(p), team, who)
					if seen[path+msg] {
						continue
					}
					seen[path+msg] = true
					out = append(out, Problem{Path: path, Msg: msg})
				}
			}
		}
	}
	return out
}

// checkNarrowing reports the runbook steps whose own approval settings,
// combined with the policy for some target, no one can satisfy.
func (c Config) checkNarrowing(ctx context.Context, k Known, rb *runbookmodel.Runbook) []Problem {
	var out []Problem
	changing := false // the runbook changes something: its runners start it
	for _, st := range rb.Steps {
		if st.Kind == runbookmodel.KindAction && (k.Ops == nil || k.Ops[st.Op] != "read") {
			changing = true
		}
	}
	for i, st := range rb.Steps {
		if st.Approval == nil || len(st.Approval.Approvers) == 0 && st.Approval.Required <= 1 {
			continue
		}
		op := ""
		switch {
		case st.Kind == runbookmodel.KindAction:
			op = st.Op
		case st.Kind == runbookmodel.KindApproval && st.Goto == "" && i+1 < len(rb.Steps):
			// Combined with the next step's gate when that step changes something.
			if next := rb.Steps[i+1]; next.Kind == runbookmodel.KindAction && k.Ops[next.Op] != "" && k.Ops[next.Op] != "read" {
				op = next.Op
			}
		}
		targets := k.Targets
		if len(targets) == 0 {
			targets = []string{""}
		}
		for _, t := range targets {
			base := c.Resolve(t, rb.Name, op)
			if (op == "" || k.Ops[op] != "read") && k.approvable(ctx, base, changing) != "" {
				continue // the policy alone cannot be satisfied: reported by checkLevels
			}
			p := base.Narrow(st.Approval.Approvers, st.Approval.Required, st.Approval.Expires)
			who := k.approvable(ctx, p, changing)
			if who == "" {
				continue
			}
			where := fmt.Sprintf("step %s of runbook %s", st.ID, rb.Name)
			if rb.Source != "" {
				where = fmt.Sprintf("%s:%d: %s", rb.Source, st.Line, where)
			}
			path := "approvals"
			if t != "" {
				path = "approvals (target " + t + ")"
			}
			out = append(out, Problem{Path: path, Msg: fmt.Sprintf("%s needs %d approval%s from %s, and %s (a runbook's approval settings narrow the policy: an approver must be allowed by both)",
				where, p.Required, plural(p.Required), describeApprovers(p), who)})
		}
	}
	return out
}

func sortedKeys(m map[string]runmodel.Policy) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
