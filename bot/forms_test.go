package bot_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

type formRecorder struct{ forms []chatmodel.Form }

func (f *formRecorder) OpenForm(_ context.Context, _ chatmodel.Event, form chatmodel.Form) error {
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
	assert.Equal(t, chatmodel.Form{Title: "Run waiter", Command: "run waiter target=infra-prd",
		Fields: []chatmodel.FormField{{Name: "worker", Required: true}}}, f)
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs, "nothing starts before the form is submitted")

	h.cmd(alice, chatmodel.FormCommand(f, map[string]string{"worker": "w-0"}))
	assert.Equal(t, "w-0", h.onlyRun().Params["worker"])
	assert.Len(t, forms.forms, 1, "a complete command opens no form")
}

// A form's values are checked as the command would check them (the same
// parameter validation), each problem on its field, before anything runs.
func TestEngine_CheckFormPutsProblemsOnTheirFields(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	check := bot.FormCheckerOf(h.eng)
	errs := check.CheckForm(h.ctx, chan1, "run waiter", map[string]string{"worker": "w\u202e0", "target": "infra-prdd"})
	require.Len(t, errs, 2)
	assert.Contains(t, errs["worker"], `Parameter "worker": character 2 is U+202E RIGHT-TO-LEFT OVERRIDE`)
	assert.Contains(t, errs["target"], `Unknown target "infra-prdd"`)

	errs = check.CheckForm(h.ctx, chan1, "run waiter target=infra-prd", map[string]string{"worker": ""})
	assert.Equal(t, map[string]string{"worker": `Missing required parameter "worker"; add worker=….`}, errs)

	assert.Nil(t, check.CheckForm(h.ctx, chan1, "run waiter target=infra-prd", map[string]string{"worker": "w-0"}))
	assert.Nil(t, check.CheckForm(h.ctx, chan1, "run no-such-runbook", map[string]string{"worker": "w-0"}), "left to the command's answer")
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs)
}

// `/runbook show` has a ▶ Run button where forms open; pressing it opens
// the runbook's form with every parameter, and nothing starts.
func TestEngine_ShowRunButtonOpensTheForm(t *testing.T) {
	forms := &formRecorder{}
	h := newHarness(t, stalledWorld(), func(o *bot.Options) { o.Capabilities.Forms = forms })
	h.cmd(alice, "show waiter")
	show := h.chat.LastEphemeral()
	assert.Contains(t, show.Text, "waiter")
	require.Len(t, show.Buttons, 1)
	b := show.Buttons[0]
	assert.Equal(t, chatmodel.Button{Action: chatmodel.IntentRun, Label: "▶ Run", Value: "waiter", Style: "primary"}, b)

	require.NoError(t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventButton, ID: "slack:action:T1", User: alice, Conversation: chan1, Intent: b.Action, Value: b.Value}))
	h.idle()
	require.Len(t, forms.forms, 1)
	f := forms.forms[0]
	assert.Equal(t, "run waiter", f.Command[:len("run waiter")])
	names := []string{}
	for _, fd := range f.Fields {
		names = append(names, fd.Name)
	}
	assert.Contains(t, names, "worker")
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs)

	// Without forms there is no button.
	h2 := newHarness(t, stalledWorld(), nil)
	h2.cmd(alice, "show waiter")
	assert.Empty(t, h2.chat.LastEphemeral().Buttons)
}
