package runbooks

import (
	"regexp"
	"strings"
	"testing"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every `/runbook run <name> k=v` a built-in runbook shows (instructions,
// descriptions, follow-ups) names a runbook that exists and only
// parameters it takes (issue 26: a hint named a `force` parameter that no
// runbook has).
func TestBuiltinHints_ParseAgainstTheirRunbook(t *testing.T) {
	rbs, err := LoadFS(Builtin(), nil)
	require.NoError(t, err)
	byName := map[string]*runbookmodel.Runbook{}
	for _, rb := range rbs {
		byName[rb.Name] = rb
	}
	hint := regexp.MustCompile(`/runbook run ([a-z0-9-]+)((?: [a-z_]+=[^\s` + "`" + `)]*)*)`)
	checked := 0
	for _, rb := range rbs {
		texts := []string{rb.Description}
		texts = append(texts, rb.FollowUp...)
		for _, s := range rb.Steps {
			texts = append(texts, s.Title, s.Text)
		}
		for _, text := range texts {
			for _, m := range hint.FindAllStringSubmatch(text, -1) {
				target, ok := byName[m[1]]
				if !assert.True(t, ok, "%s: hint %q names no built-in runbook", rb.Name, m[0]) {
					continue
				}
				known := map[string]bool{"target": true}
				for _, p := range target.Params {
					known[p.Name] = true
				}
				for _, kv := range strings.Fields(m[2]) {
					k, _, _ := strings.Cut(kv, "=")
					assert.True(t, known[k], "%s: hint %q: %s takes no parameter %q", rb.Name, m[0], m[1], k)
				}
				checked++
			}
		}
	}
	assert.Greater(t, checked, 5)
}
