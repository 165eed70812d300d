package bot_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
)

type formRecorder struct{ forms []bot.Form }

func (f *formRecorder) OpenForm(_ context.Context, _ bot.Event, form bot.Form) error {
	f.forms = append(f.forms, form)
	return nil
}

// A run missing a required parameter opens a form with the runbook's
// parameters; submitting it is typing the command in full.
func TestEngine_MissingParametersOpenAForm(t *testing.T) {
	forms := &formRecorder{}
	h := newHarness(t, stalledWorld(), func(o *bot.Options) { o.Capabilities.Forms = forms })
	h.cmd(alice, "run waiter target=infra-prd")
	require.Len(t, forms.forms, 1)
	f := forms.forms[0]
	assert.Equal(t, bot.Form{Title: "Run waiter", Command: "run waiter target=infra-prd",
		Fields: []bot.FormField{{Name: "worker", Required: true}}}, f)
	runs, err := h.db.ListRuns(h.ctx, bot.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs, "nothing starts before the form is submitted")

	h.cmd(alice, bot.FormCommand(f, map[string]string{"worker": "w-0"}))
	assert.Equal(t, "w-0", h.onlyRun().Params["worker"])
	assert.Len(t, forms.forms, 1, "a complete command opens no form")
}

// A form's values are checked as the command would check them (the same
// parameter validation), each problem on its field, before anything runs.
func TestEngine_CheckFormPutsProblemsOnTheirFields(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	check := bot.FormCheckerOf(h.eng)
	errs := check.CheckForm(h.ctx, "run waiter", map[string]string{"worker": "w\u202e0", "target": "infra-prdd"})
	require.Len(t, errs, 2)
	assert.Contains(t, errs["worker"], `Parameter "worker": character 2 is U+202E RIGHT-TO-LEFT OVERRIDE`)
	assert.Contains(t, errs["target"], `Unknown target "infra-prdd"`)

	errs = check.CheckForm(h.ctx, "run waiter target=infra-prd", map[string]string{"worker": ""})
	assert.Equal(t, map[string]string{"worker": `Missing required parameter "worker"; add worker=….`}, errs)

	assert.Nil(t, check.CheckForm(h.ctx, "run waiter target=infra-prd", map[string]string{"worker": "w-0"}))
	assert.Nil(t, check.CheckForm(h.ctx, "run no-such-runbook", map[string]string{"worker": "w-0"}), "left to the command's answer")
	runs, err := h.db.ListRuns(h.ctx, bot.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs)
}
