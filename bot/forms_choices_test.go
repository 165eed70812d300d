package bot

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// A parameter with choices is a select of what the target lists; with
// more than 100, without a known target, or when the target cannot be
// read, it is free text, and the form's note says why.
func TestRunForm_LiveChoices(t *testing.T) {
	rb := &runbookmodel.Runbook{Name: "pause", Params: []runbookmodel.Param{
		{Name: "pipeline", Required: true, Choices: runbookmodel.ChoicesPipelines},
		{Name: "team", Default: "ops", Choices: runbookmodel.ChoicesTeams},
		{Name: "note"},
	}}
	var asked []string
	list := func(n int) choiceReader {
		return func(p runbookmodel.Param, target string) ([]string, error) {
			asked = append(asked, p.Name+"@"+target)
			if n < 0 {
				return nil, fmt.Errorf("listing on %s: %w", target, errors.New("dial tcp 10.0.0.7:443: connect: connection refused"))
			}
			var out []string
			for i := range n {
				out = append(out, fmt.Sprintf("%s-%d", p.Choices, i))
			}
			return out, nil
		}
	}
	f := runForm(rb, "infra-prd", []string{"infra-prd", "infra-dev"}, nil, list(2), false)
	require.NotNil(t, f)
	assert.Equal(t, []string{"pipelines-0", "pipelines-1"}, f.Fields[0].Options)
	assert.Equal(t, []string{"ops", "teams-0", "teams-1"}, f.Fields[1].Options, "the default stays a choice")
	assert.Empty(t, f.Fields[2].Options)
	assert.Equal(t, []string{"pipeline@infra-prd", "team@infra-prd"}, asked)
	assert.Empty(t, f.Note)

	f = runForm(rb, "infra-prd", []string{"infra-prd"}, nil, list(101), false)
	assert.Empty(t, f.Fields[0].Options, "more than Slack's 100: free text")
	assert.Equal(t, "infra-prd has more than 100 pipelines and teams: type pipeline and team.", f.Note)

	f = runForm(rb, "infra-prd", []string{"infra-prd"}, nil, list(-1), false)
	assert.Empty(t, f.Fields[0].Options, "unreadable target: free text")
	assert.Equal(t, "Could not read the pipelines and teams of infra-prd (dial tcp 10.0.0.7:443: connect: connection refused): type pipeline and team.", f.Note)

	asked = nil
	f = runForm(rb, "", []string{"infra-prd", "infra-dev"}, nil, list(2), false)
	assert.Equal(t, "target", f.Fields[0].Name)
	assert.True(t, f.Fields[0].Refresh, "the target decides the other fields' options")
	assert.Empty(t, f.Fields[1].Options, "target not chosen yet: free text")
	assert.Empty(t, asked)
	assert.Empty(t, f.Note)

	f = runForm(rb, "", []string{"infra-prd"}, nil, list(1), false)
	assert.Equal(t, []string{"pipelines-0"}, f.Fields[0].Options, "the only target is the target")

	// Picked in the form: that target's choices; a value that is none of
	// them is not kept, the runbook's default is.
	asked = nil
	f = runForm(rb, "", []string{"infra-prd", "infra-dev"}, map[string]string{"target": "infra-dev", "pipeline": "elsewhere/x", "team": "teams-1", "note": " hi "}, list(2), true)
	assert.Equal(t, chatmodel.FormField{Name: "target", Help: "the Concourse target", Required: true, Default: "infra-dev", Options: []string{"infra-prd", "infra-dev"}, Refresh: true}, f.Fields[0])
	assert.Equal(t, []string{"pipeline@infra-dev", "team@infra-dev"}, asked)
	assert.Equal(t, "", f.Fields[1].Default)
	assert.Equal(t, "teams-1", f.Fields[2].Default)
	assert.Equal(t, "hi", f.Fields[3].Default)
	assert.Equal(t, "run pause", f.Command, "the target stays a field")

	plain := &runbookmodel.Runbook{Name: "hello", Params: []runbookmodel.Param{{Name: "who", Required: true}}}
	f = runForm(plain, "", []string{"infra-prd", "infra-dev"}, nil, list(2), false)
	assert.False(t, f.Fields[0].Refresh, "nothing depends on the target")
}
