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
