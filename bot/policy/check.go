package policy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/runbooks"
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
	Runbooks []*runbooks.Runbook
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
	keys := func(level string, m map[string]Policy, known []string, what string) {
		for _, n := range sortedKeys(m) {
			if contains(known, n) {
				continue
			}
			msg := fmt.Sprintf("no %s %q", what, n)
			if s := runbooks.Suggest(n, known); s != "" {
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
		m    map[string]Policy
	}{{"targets", c.Targets}, {"runbooks", c.Runbooks}, {"operations", c.Operations}} {
		for _, n := range sortedKeys(lvl.m) {
			out = append(out, checkValues("approvals."+lvl.name+"."+n, lvl.m[n])...)
		}
	}
	out = append(out, c.checkNames(ctx, k)...)
	for _, rb := range k.Runbooks {
		out = append(out, c.checkNarrowing(ctx, k, rb)...)
	}
	return out
}

// SelfApprovalAt lists the configuration paths that let requesters
// approve their own runs (the binary logs each loudly).
func (c Config) SelfApprovalAt() []string {
	var out []string
	c.each(func(path string, p Policy) {
		if p.SelfApproval {
			out = append(out, path)
		}
	})
	return out
}

// each calls fn for every configured policy, in a stable order.
func (c Config) each(fn func(path string, p Policy)) {
	fn("approvals.default", c.Default)
	for _, lvl := range []struct {
		name string
		m    map[string]Policy
	}{{"targets", c.Targets}, {"runbooks", c.Runbooks}, {"operations", c.Operations}} {
		for _, n := range sortedKeys(lvl.m) {
			fn("approvals."+lvl.name+"."+n, lvl.m[n])
		}
	}
}

func checkValues(path string, p Policy) []Problem {
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
	for field, list := range p.lists() {
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
	return out
}

// lists returns the policy's lists of people, by field name.
func (p Policy) lists() map[string][]string {
	return map[string][]string{
		"approvers": p.Approvers, "require_groups": p.RequireGroups, "break_glass": p.BreakGlass,
		"runners": p.Runners, "read_only_runners": p.ReadOnlyRunners,
	}
}

// checkNames checks that every user and group the policy names exists.
func (c Config) checkNames(ctx context.Context, k Known) []Problem {
	var out []Problem
	c.each(func(path string, p Policy) {
		fields := p.lists()
		for _, field := range []string{"approvers", "require_groups", "break_glass", "runners", "read_only_runners"} {
			for _, a := range fields[field] {
				if pr, ok := k.checkEntry(ctx, a); !ok {
					pr.Path = path + "." + field
					out = append(out, pr)
				}
			}
		}
	})
	return out
}

// checkEntry checks one policy entry against the platform.
func (k Known) checkEntry(ctx context.Context, a string) (Problem, bool) {
	if g, ok := Group(a); ok {
		if k.Members == nil || strings.TrimSpace(g) == "" {
			return Problem{}, true
		}
		if _, err := k.Members(ctx, g); err != nil {
			if errors.Is(err, ErrUnknown) {
				return Problem{Msg: fmt.Sprintf("no group %q on the chat platform", g)}, false
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
		return Problem{Msg: fmt.Sprintf("no user %q on the chat platform", name)}, false
	case err != nil:
		return Problem{Msg: fmt.Sprintf("could not look up user %q: %v", name, err), Warning: true}, false
	case notPerson != "":
		return Problem{Msg: fmt.Sprintf("%q cannot act: %s", name, notPerson)}, false
	}
	return Problem{}, true
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

// checkNarrowing reports the runbook steps whose own approval settings,
// combined with the policy for some target, no one can satisfy.
func (c Config) checkNarrowing(ctx context.Context, k Known, rb *runbooks.Runbook) []Problem {
	var out []Problem
	for i, st := range rb.Steps {
		if st.Approval == nil || len(st.Approval.Approvers) == 0 && st.Approval.Required <= 1 {
			continue
		}
		op := ""
		switch {
		case st.Kind == runbooks.KindAction:
			op = st.Op
		case st.Kind == runbooks.KindApproval && st.Goto == "" && i+1 < len(rb.Steps):
			// Combined with the next step's gate when that step changes something.
			if next := rb.Steps[i+1]; next.Kind == runbooks.KindAction && k.Ops[next.Op] != "" && k.Ops[next.Op] != "read" {
				op = next.Op
			}
		}
		targets := k.Targets
		if len(targets) == 0 {
			targets = []string{""}
		}
		for _, t := range targets {
			p := c.Resolve(t, rb.Name, op).Narrow(st.Approval.Approvers, st.Approval.Required, st.Approval.Expires)
			eligible, complete := k.people(ctx, p.Approvers)
			if len(p.Approvers) == 0 {
				complete = false // anyone
			}
			// Every list an approver must be in bounds who can approve:
			// their intersection is an upper bound of the eligible people.
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
			if !complete || len(eligible) >= p.Required {
				continue
			}
			where := fmt.Sprintf("step %s of runbook %s", st.ID, rb.Name)
			if rb.Source != "" {
				where = fmt.Sprintf("%s:%d: %s", rb.Source, st.Line, where)
			}
			who := "no one can approve it"
			if len(eligible) > 0 {
				who = fmt.Sprintf("only %d %s can approve it", len(eligible), map[bool]string{true: "person", false: "people"}[len(eligible) == 1])
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

func sortedKeys(m map[string]Policy) []string {
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
