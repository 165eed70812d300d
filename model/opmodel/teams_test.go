package opmodel

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPlan_Teams(t *testing.T) {
	p := Plan{Items: []PlanItem{
		{Kind: "build", ID: "3", Attrs: map[string]string{AttrTeam: "platform"}},
		{Kind: "build", ID: "1", Attrs: map[string]string{AttrTeam: "payments"}},
		{Kind: "build", ID: "2", Attrs: map[string]string{AttrTeam: "payments"}},
	}}
	assert.Equal(t, []string{"payments", "platform"}, p.Teams())
	assert.False(t, p.Teamless())
	p.Items = append(p.Items, PlanItem{Kind: "worker", ID: "w-0", Attrs: map[string]string{AttrTeam: ""}})
	assert.True(t, p.Teamless(), "a global worker belongs to no team")
	assert.Nil(t, Plan{}.Teams())

	// The team is an attribute: it is hashed, so an approval binds to it.
	a := Plan{Op: "x", Items: []PlanItem{{Kind: "pipeline", ID: "p", Attrs: map[string]string{AttrTeam: "payments"}}}}
	b := Plan{Op: "x", Items: []PlanItem{{Kind: "pipeline", ID: "p", Attrs: map[string]string{AttrTeam: "platform"}}}}
	assert.NotEqual(t, a.Hash(), b.Hash())
}
