package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

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
	trigger, ok := strings.CutPrefix(ev.ID, "slack:command:")
	if !ok || trigger == "" {
		return errors.New("no modal: the command has no trigger_id")
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

// submissionEvent converts a submitted modal into the command typed in
// full; ok is false for a view that is not groundcrew's form.
func (a *Adapter) submissionEvent(cb slackapi.InteractionCallback) (chatmodel.Event, bool) {
	if cb.View.CallbackID != formCallback || cb.View.State == nil {
		return chatmodel.Event{}, false
	}
	var st formState
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &st); err != nil || st.Channel == "" {
		a.log.Warn("slack: a form submission without its state", "user", cb.User.ID, "err", err)
		return chatmodel.Event{}, false
	}
	form := chatmodel.Form{Command: st.Command}
	values := map[string]string{}
	names := append([]string(nil), st.Fields...)
	sort.Strings(names)
	for _, name := range names {
		act, ok := cb.View.State.Values[name][name]
		if !ok {
			continue
		}
		v := act.Value
		if act.SelectedOption.Value != "" {
			v = act.SelectedOption.Value
		}
		values[name] = strings.Join(strings.Fields(v), "") // a command value has no spaces
		form.Fields = append(form.Fields, chatmodel.FormField{Name: name})
	}
	e := chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: cb.User.ID, Name: cb.User.Name}, Text: chatmodel.FormCommand(form, values), Time: a.now(),
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: st.Channel, Thread: st.Thread}}
	if cb.View.ID != "" {
		e.ID = fmt.Sprintf("slack:view:%s:%s", cb.View.ID, cb.View.Hash)
	}
	return e, true
}
