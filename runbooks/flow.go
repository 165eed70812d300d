package runbooks

import (
	"strings"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"gopkg.in/yaml.v3"
)

// edge is a possible move from one step to another.
type edge struct {
	from, to int
	// field is the field that makes the jump ("goto", "on_failure",
	// "on_timeout"), or "" for going on to the next step.
	field string
	node  *yaml.Node
}

// edges lists every move the engine can make from each step: on to the
// next step (after success, a false `when`, a skipped manual step, or a
// `continue`), and the jumps of goto, on_failure and on_timeout. Jumps to
// unknown steps are left out; they are reported elsewhere.
func (v *validator) edges() [][]edge {
	steps := v.r.rb.Steps
	out := make([][]edge, len(steps))
	next := func(i int) {
		if i+1 < len(steps) {
			out[i] = append(out[i], edge{from: i, to: i + 1})
		}
	}
	jump := func(i int, fieldName, target string) {
		switch target {
		case "", runbookmodel.TargetFail, runbookmodel.TargetEnd:
		case runbookmodel.TargetContinue:
			next(i)
		default:
			if j, ok := v.stepIndex[target]; ok {
				out[i] = append(out[i], edge{from: i, to: j, field: fieldName, node: v.r.steps[i].fields[fieldName].value})
			}
		}
	}
	for i, s := range steps {
		if s.Goto == "" {
			next(i)
		} else {
			jump(i, "goto", s.Goto)
			if s.When != "" || s.Kind == runbookmodel.KindManual {
				next(i) // skipped steps do not jump
			}
		}
		jump(i, "on_failure", s.OnFailure)
		jump(i, "on_timeout", s.OnTimeout)
	}
	return out
}

// flow reports cycles and steps that can never run. Every move forward is
// harmless, so a cycle always contains a jump back; each jump back that
// can reach its own step again is reported where it is written.
func (v *validator) flow() {
	steps := v.r.rb.Steps
	if len(steps) == 0 {
		return
	}
	g := v.edges()
	for i := range g {
		for _, e := range g[i] {
			if e.to > e.from {
				continue
			}
			path := findPath(g, e.to, e.from)
			if path == nil {
				continue
			}
			names := make([]string, 0, len(path)+1)
			for _, k := range path {
				names = append(names, steps[k].ID)
			}
			names = append(names, steps[e.to].ID)
			v.errorf(e.node, "steps form a cycle: %s (%s of step %q jumps back); a runbook must always move forward, use a wait step to repeat a check",
				strings.Join(names, " → "), e.field, steps[e.from].ID)
		}
	}
	if v.badTarget {
		return
	}
	reached := make([]bool, len(steps))
	reached[0] = true
	queue := []int{0}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, e := range g[i] {
			if !reached[e.to] {
				reached[e.to] = true
				queue = append(queue, e.to)
			}
		}
	}
	for i, ok := range reached {
		if !ok {
			v.errorf(v.r.steps[i].node, "step %s can never run: the steps before it jump past it and no goto, on_failure or on_timeout leads to it", v.stepName(i))
		}
	}
}

// findPath returns the steps of a shortest path from a to b (inclusive),
// or nil when b cannot be reached from a.
func findPath(g [][]edge, a, b int) []int {
	prev := make([]int, len(g))
	for i := range prev {
		prev[i] = -1
	}
	prev[a] = a
	queue := []int{a}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		if i == b {
			var path []int
			for k := b; ; k = prev[k] {
				path = append([]int{k}, path...)
				if k == a {
					return path
				}
			}
		}
		for _, e := range g[i] {
			if prev[e.to] < 0 {
				prev[e.to] = i
				queue = append(queue, e.to)
			}
		}
	}
	return nil
}
