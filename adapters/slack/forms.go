package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// formCallback names groundcrew's modals.
const formCallback = "groundcrew-run"

// formState is what a modal carries back (private_metadata: only Slack
// sends it back, with the submitting user).
type formState struct {
	Command string   `json:"c"`
	Channel string   `json:"ch"`
	Thread  string   `json:"t,omitempty"`
	Fields  []string `json:"f"`
}

var _ chatmodel.FormOpener = (*Adapter)(nil)

// OpenForm implements chatmodel.FormOpener with a modal (views.open with the slash
// command's trigger_id): a text input per parameter, a static select where
// the runbook lists allowed values (Slack allows 100 options), defaults
// filled in, optional when not required.
func (a *Adapter) OpenForm(ctx context.Context, ev chatmodel.Event, f chatmodel.Form) error {
	// A slash command's or a button press's trigger_id (a press without
	// one has an id of user:action_ts, with a colon).
	trigger, ok := strings.CutPrefix(ev.ID, "slack:command:")
	if !ok {
		trigger, ok = strings.CutPrefix(ev.ID, "slack:action:")
		ok = ok && !strings.Contains(trigger, ":")
	}
	if !ok || trigger == "" {
		return errors.New("no modal: the command or button has no trigger_id")
	}
	st := formState{Command: f.Command, Channel: ev.Conversation.Channel, Thread: ev.Conversation.Thread}
	var blocks []slackapi.Block
	for _, fd := range f.Fields {
		st.Fields = append(st.Fields, fd.Name)
		var el slackapi.BlockElement
		if len(fd.Options) > 0 && len(fd.Options) <= 100 {
			var opts []*slackapi.OptionBlockObject
			var initial *slackapi.OptionBlockObject
			for _, o := range fd.Options {
				ob := slackapi.NewOptionBlockObject(o, slackapi.NewTextBlockObject(slackapi.PlainTextType, truncateRunes(o, 75), false, false), nil)
				opts = append(opts, ob)
				if o == fd.Default {
					initial = ob
				}
			}
			sel := slackapi.NewOptionsSelectBlockElement(slackapi.OptTypeStatic, nil, fd.Name, opts...)
			sel.InitialOption = initial
			el = sel
		} else {
			in := slackapi.NewPlainTextInputBlockElement(nil, fd.Name)
			in.InitialValue, in.MaxLength = fd.Default, 150
			el = in
		}
		var hint *slackapi.TextBlockObject
		if fd.Help != "" {
			hint = slackapi.NewTextBlockObject(slackapi.PlainTextType, truncateRunes(fd.Help, 150), false, false)
		}
		b := slackapi.NewInputBlock(fd.Name, slackapi.NewTextBlockObject(slackapi.PlainTextType, fd.Name, false, false), hint, el)
		b.Optional = !fd.Required
		blocks = append(blocks, b)
	}
	meta, err := json.Marshal(st)
	if err != nil {
		return err
	}
	view := slackapi.ModalViewRequest{Type: slackapi.VTModal, CallbackID: formCallback, PrivateMetadata: string(meta),
		Title:  slackapi.NewTextBlockObject(slackapi.PlainTextType, truncateRunes(f.Title, 24), false, false),
		Submit: slackapi.NewTextBlockObject(slackapi.PlainTextType, "Run", false, false),
		Close:  slackapi.NewTextBlockObject(slackapi.PlainTextType, "Cancel", false, false),
		Blocks: slackapi.Blocks{BlockSet: blocks}}
	return a.retry.do(ctx, "views.open", retryRateLimitOnly, func(ctx context.Context) error {
		_, err := a.api.OpenViewContext(ctx, trigger, view)
		return err
	})
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// SetFormChecker makes a submitted form's values checked before the
// submission is taken: a refused value is shown on its field (the
// view_submission answered with response_action "errors") and the modal
// stays open. Call it before Run.
func (a *Adapter) SetFormChecker(c chatmodel.FormChecker) { a.formChecker = c }

// submissionErrors is the answer to a view_submission of groundcrew's form
// whose values the checker refuses, or nil to take it (close the modal).
func (a *Adapter) submissionErrors(ctx context.Context, cb slackapi.InteractionCallback) *slackapi.ViewSubmissionResponse {
	if a.formChecker == nil || cb.Type != slackapi.InteractionTypeViewSubmission {
		return nil
	}
	st, values, ok := a.submission(cb)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second) // Slack waits 3 s for the answer
	defer cancel()
	errs := a.formChecker.CheckForm(ctx, st.Command, values)
	out := map[string]string{}
	for name, msg := range errs {
		if _, onForm := values[name]; onForm {
			out[name] = truncateRunes(msg, 2000)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return slackapi.NewErrorsViewSubmissionResponse(out)
}

// submission reads groundcrew's form from a view_submission: its state
// and the values by field (spaces removed: a command value has none); ok
// is false for a view that is not groundcrew's form.
func (a *Adapter) submission(cb slackapi.InteractionCallback) (formState, map[string]string, bool) {
	if cb.View.CallbackID != formCallback || cb.View.State == nil {
		return formState{}, nil, false
	}
	var st formState
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &st); err != nil || st.Channel == "" {
		a.log.Warn("slack: a form submission without its state", "user", cb.User.ID, "err", err)
		return formState{}, nil, false
	}
	values := map[string]string{}
	for _, name := range st.Fields {
		act, ok := cb.View.State.Values[name][name]
		if !ok {
			continue
		}
		v := act.Value
		if act.SelectedOption.Value != "" {
			v = act.SelectedOption.Value
		}
		values[name] = strings.Join(strings.Fields(v), "")
	}
	return st, values, true
}

// submissionEvent converts a submitted modal into the command typed in
// full; ok is false for a view that is not groundcrew's form.
func (a *Adapter) submissionEvent(cb slackapi.InteractionCallback) (chatmodel.Event, bool) {
	st, values, ok := a.submission(cb)
	if !ok {
		return chatmodel.Event{}, false
	}
	form := chatmodel.Form{Command: st.Command}
	names := make([]string, 0, len(values))
	for name := range values {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		form.Fields = append(form.Fields, chatmodel.FormField{Name: name})
	}
	e := chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: cb.User.ID, Name: cb.User.Name}, Text: chatmodel.FormCommand(form, values), Time: a.now(),
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: st.Channel, Thread: st.Thread}}
	if cb.View.ID != "" {
		e.ID = fmt.Sprintf("slack:view:%s:%s", cb.View.ID, cb.View.Hash)
	}
	return e, true
}
