package bot

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/runbooks"
)

// A parameter with choices is a select of what the target lists; with
// more than 100, without a known target, or when the target cannot be
// read, it is free text.
func TestRunForm_LiveChoices(t *testing.T) {
	rb := &runbooks.Runbook{Name: "pause", Params: []runbooks.Param{
		{Name: "pipeline", Required: true, Choices: runbooks.ChoicesPipelines},
		{Name: "team", Default: "ops", Choices: runbooks.ChoicesTeams},
		{Name: "note"},
	}}
	var asked []string
	list := func(n int) func(p runbooks.Param, target string) []string {
		return func(p runbooks.Param, target string) []string {
			asked = append(asked, p.Name+"@"+target)
			if n < 0 {
				return nil // the target cannot be read
			}
			var out []string
			for i := range n {
				out = append(out, fmt.Sprintf("%s-%d", p.Choices, i))
			}
			return out
		}
	}
	f := runForm(rb, "infra-prd", []string{"infra-prd", "infra-dev"}, nil, list(2), false)
	require.NotNil(t, f)
	assert.Equal(t, []string{"pipelines-0", "pipelines-1"}, f.Fields[0].Options)
	assert.Equal(t, []string{"ops", "teams-0", "teams-1"}, f.Fields[1].Options, "the default stays a choice")
	assert.Empty(t, f.Fields[2].Options)
	assert.Equal(t, []string{"pipeline@infra-prd", "team@infra-prd"}, asked)

	f = runForm(rb, "infra-prd", []string{"infra-prd"}, nil, list(101), false)
	assert.Empty(t, f.Fields[0].Options, "more than Slack's 100: free text")

	f = runForm(rb, "infra-prd", []string{"infra-prd"}, nil, list(-1), false)
	assert.Empty(t, f.Fields[0].Options, "unreadable target: free text")

	asked = nil
	f = runForm(rb, "", []string{"infra-prd", "infra-dev"}, nil, list(2), false)
	assert.Equal(t, "target", f.Fields[0].Name)
	assert.Empty(t, f.Fields[1].Options, "target not chosen yet: free text")
	assert.Empty(t, asked)

	f = runForm(rb, "", []string{"infra-prd"}, nil, list(1), false)
	assert.Equal(t, []string{"pipelines-0"}, f.Fields[0].Options, "the only target is the target")
}
