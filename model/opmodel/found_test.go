package opmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNothingToDo_SaysWhatWasFoundOfEachApprovedObject(t *testing.T) {
	approved := &Plan{Items: []PlanItem{{Kind: "worker", ID: "worker-1", Attrs: map[string]string{"state": "stalled"}}}}
	cur := Plan{Summary: "nothing to prune", Found: []Found{{Kind: "worker", ID: "worker-1",
		Text: "worker-1 is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout or someone else)"}}}
	res := NothingToDo(cur, approved)
	assert.Equal(t, "worker-1 is no longer registered: it was removed while the approval was asked (Concourse's stalled-worker-timeout or someone else) — nothing to prune", res.Summary)
	assert.Equal(t, []ItemResult{{ID: "worker-1", Outcome: OutcomeAlreadyDone, Reason: cur.Found[0].Text}}, res.Items)
	d := res.Data.(NothingToDoData)
	assert.True(t, d.NothingToDo)
	assert.Equal(t, []FoundData{{Kind: "worker", ID: "worker-1", Found: cur.Found[0].Text}}, d.Found)

	t.Run("an object the plan says nothing of", func(t *testing.T) {
		res := NothingToDo(Plan{Summary: "nothing to prune"}, approved)
		assert.Equal(t, "worker worker-1 is no longer in the plan — nothing to prune", res.Summary)
	})
	t.Run("many objects: three said, the rest one tap away", func(t *testing.T) {
		a := &Plan{}
		cur := Plan{Summary: "no pending or started build matches"}
		for _, id := range []string{"1", "2", "3", "4", "5"} {
			a.Items = append(a.Items, PlanItem{Kind: "build", ID: id})
			cur.Found = append(cur.Found, Found{Kind: "build", ID: id, Text: "build " + id + " already aborted"})
		}
		res := NothingToDo(cur, a)
		assert.Equal(t, "build 1 already aborted; build 2 already aborted; build 3 already aborted; … and 2 more — nothing to do: no pending or started build matches", res.Summary)
		assert.Contains(t, res.Detail, "build 5 already aborted")
	})
	t.Run("empty from the start: the plan's notes", func(t *testing.T) {
		res := NothingToDo(Plan{Summary: "nothing to prune", Notes: []string{"worker w-9 is not registered; skipped"}}, nil)
		assert.Equal(t, "nothing to prune (worker w-9 is not registered; skipped)", res.Summary)
		assert.Empty(t, res.Items)
		assert.True(t, res.Data.(NothingToDoData).NothingToDo)
	})
}

func TestPlanDiff_SaysRemovedObjectsAsFound(t *testing.T) {
	old := &Plan{Items: []PlanItem{{Kind: "build", ID: "812"}, {Kind: "build", ID: "813"}}}
	cur := &Plan{Items: []PlanItem{{Kind: "build", ID: "813"}}, Found: []Found{{Kind: "build", ID: "812", Text: "build 812 already finished (succeeded)"}}}
	assert.Equal(t, "no longer included: build 812 already finished (succeeded)", PlanDiff(old, cur))
	assert.Equal(t, "no longer included `812`", PlanDiff(old, &Plan{Items: cur.Items}))
}

func TestCallGone(t *testing.T) {
	c := Call{Approved: &Plan{Items: []PlanItem{{Kind: "worker", ID: "a"}, {Kind: "worker", ID: "b"}}}}
	assert.Equal(t, []PlanItem{{Kind: "worker", ID: "a"}}, c.Gone(Plan{Items: []PlanItem{{Kind: "worker", ID: "b"}}}))
	assert.True(t, c.Approves("worker", "a"))
	assert.False(t, c.Approves("pipeline", "a"))
	assert.Nil(t, Call{}.Gone(Plan{}))
}
