package opmodel

import (
	"fmt"
	"strings"
)

// Found is what a plan resolved again right before executing found of one
// object of the approved plan that it no longer includes: the object moved
// first (Concourse removed the stalled worker, the build finished, someone
// paused the pipeline). Text says it in one sentence that names the object
// and the cause as far as it is known: "worker-1 is no longer registered:
// it was removed while the approval was asked (Concourse's stalled-worker-timeout
// or someone else)", "build 812 already finished (succeeded)", "main/app
// is already paused (by alice)".
type Found struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	Text string `json:"text"`
	// Gone is true when the object no longer exists (an unregistered
	// worker, a deleted pipeline), false when it is there in another state.
	Gone bool `json:"gone,omitempty"`
}

// FoundOf returns what p found of the object kind/id, "" when it says
// nothing of it.
func (p *Plan) FoundOf(kind, id string) string {
	f, _ := p.found(kind, id)
	return f.Text
}

func (p *Plan) found(kind, id string) (Found, bool) {
	if p == nil {
		return Found{}, false
	}
	for _, f := range p.Found {
		if f.Kind == kind && f.ID == id {
			return f, true
		}
	}
	return Found{}, false
}

// Includes reports whether p has an item kind/id.
func (p *Plan) Includes(kind, id string) bool {
	if p == nil {
		return false
	}
	for _, it := range p.Items {
		if it.Kind == kind && it.ID == id {
			return true
		}
	}
	return false
}

// Gone returns the items of c.Approved (the plan a person approved) that
// pl does not include: the objects whose Found a Plan function must say.
// Nil when the call re-resolves no approved plan.
func (c Call) Gone(pl Plan) []PlanItem {
	if c.Approved == nil {
		return nil
	}
	var out []PlanItem
	for _, it := range c.Approved.Items {
		if !pl.Includes(it.Kind, it.ID) {
			out = append(out, it)
		}
	}
	return out
}

// Approves reports whether c re-resolves an approved plan that includes
// kind/id.
func (c Call) Approves(kind, id string) bool {
	return c.Approved != nil && c.Approved.Includes(kind, id)
}

// NothingToDoData is steps.<id>.result of a gated step that had nothing to
// do — its plan, resolved (again), was empty — so a runbook can branch on
// it (`steps.prune.result.nothing_to_do`) and no call was made.
type NothingToDoData struct {
	NothingToDo bool `json:"nothing_to_do"` // always true
	// Found is, per object of the approved plan, what the re-check found
	// (empty when no plan was approved: nothing matched from the start).
	Found []FoundData `json:"found"`
	// Gone are the ids of the objects found no longer there (a worker no
	// longer registered): `len(steps.prune.result.gone) > 0`.
	Gone []string `json:"gone"`
	// Notes are the plan's notes (objects named and skipped, and why).
	Notes []string `json:"notes"`
}

// FoundData is one object of NothingToDoData.
type FoundData struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
	// Found says what the re-check found of it.
	Found string `json:"found"`
	// Gone is true when it no longer exists.
	Gone bool `json:"gone"`
}

// NothingToDo is the result of a gated call whose plan cur is empty: no
// call is made. approved is the plan a person approved (nil when the plan
// was empty from the start); each of its objects is an item already done,
// with what cur found of it as the reason. The summary says what was found
// of the objects, then cur's summary ("nothing to prune").
func NothingToDo(cur Plan, approved *Plan) Result {
	data := NothingToDoData{NothingToDo: true, Found: []FoundData{}, Gone: []string{}, Notes: append([]string{}, cur.Notes...)}
	var res Result
	var lines []string
	said := map[string]bool{} // objects found the same way (their pipeline is gone) are said once
	if approved != nil {
		for _, it := range approved.Items {
			f, _ := cur.found(it.Kind, it.ID)
			text := f.Text
			if text == "" {
				text = fmt.Sprintf("%s %s is no longer in the plan", it.Kind, it.ID)
			}
			if f.Gone {
				data.Gone = append(data.Gone, it.ID)
			}
			if !said[text] {
				lines = append(lines, text)
				said[text] = true
			}
			data.Found = append(data.Found, FoundData{Kind: it.Kind, ID: it.ID, Found: text, Gone: f.Gone})
			res.Items = append(res.Items, ItemResult{ID: it.ID, Outcome: OutcomeAlreadyDone, Reason: text})
		}
	}
	what := cur.Summary
	if what == "" || !strings.HasPrefix(what, "nothing") {
		what = "nothing to do" + optionalColon(what)
	}
	switch {
	case len(lines) == 0:
		res.Summary = what
		if len(cur.Notes) > 0 {
			res.Summary += " (" + strings.Join(cur.Notes, "; ") + ")"
		}
	case len(lines) <= 3:
		res.Summary = strings.Join(lines, "; ") + " — " + what
	default:
		res.Summary = fmt.Sprintf("%s; … and %d more — %s", strings.Join(lines[:3], "; "), len(lines)-3, what)
		res.Detail = strings.Join(lines, "\n")
	}
	res.Data = data
	return res
}

func optionalColon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
