package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
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
	// Blocks are the fields' block ids, in the order of Fields (a select's
	// id changes with its options, see blockID).
	Blocks []string `json:"b,omitempty"`
}

// blockOf is the block id of the field name (its name before the ids were
// kept).
func (st formState) blockOf(name string) string {
	for i, n := range st.Fields {
		if n == name && i < len(st.Blocks) {
			return st.Blocks[i]
		}
	}
	return name
}

// noteBlock is the id of the block that shows a form's note.
const noteBlock = "groundcrew.note"

var _ chatmodel.FormOpener = (*Adapter)(nil)

// OpenForm implements chatmodel.FormOpener with a modal (views.open with the slash
// command's trigger_id): a text input per parameter, a static select where
// the runbook lists allowed values (Slack allows 100 options), defaults
// filled in, optional when not required. A field marked Refresh (the
// target) dispatches its changes: the modal is then updated with the
// form for the values entered (refreshForm).
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
	view, err := a.formView(f, formState{Channel: ev.Conversation.Channel, Thread: ev.Conversation.Thread})
	if err != nil {
		return err
	}
	return a.retry.do(ctx, "views.open", retryRateLimitOnly, func(ctx context.Context) error {
		_, err := a.api.OpenViewContext(ctx, trigger, view)
		return err
	})
}

// formView is the modal of f for the conversation in st.
func (a *Adapter) formView(f chatmodel.Form, st formState) (slackapi.ModalViewRequest, error) {
	st.Command, st.Fields, st.Blocks = f.Command, nil, nil
	var blocks []slackapi.Block
	if f.Note != "" {
		blocks = append(blocks, slackapi.NewContextBlock(noteBlock,
			slackapi.NewTextBlockObject(slackapi.PlainTextType, "⚠️ "+truncateRunes(f.Note, 1000), true, false)))
	}
	refresh := a.refresher() != nil
	for _, fd := range f.Fields {
		id := blockID(fd)
		st.Fields, st.Blocks = append(st.Fields, fd.Name), append(st.Blocks, id)
		var el slackapi.BlockElement
		isSelect := len(fd.Options) > 0 && len(fd.Options) <= 100
		if isSelect {
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
		b := slackapi.NewInputBlock(id, slackapi.NewTextBlockObject(slackapi.PlainTextType, fd.Name, false, false), hint, el)
		b.Optional = !fd.Required
		b.DispatchAction = fd.Refresh && isSelect && refresh
		blocks = append(blocks, b)
	}
	meta, err := json.Marshal(st)
	if err != nil {
		return slackapi.ModalViewRequest{}, err
	}
	return slackapi.ModalViewRequest{Type: slackapi.VTModal, CallbackID: formCallback, PrivateMetadata: string(meta),
		Title:  slackapi.NewTextBlockObject(slackapi.PlainTextType, truncateRunes(f.Title, 24), false, false),
		Submit: slackapi.NewTextBlockObject(slackapi.PlainTextType, "Run", false, false),
		Close:  slackapi.NewTextBlockObject(slackapi.PlainTextType, "Cancel", false, false),
		Blocks: slackapi.Blocks{BlockSet: blocks}}, nil
}

// blockID is a field's block id: its name for text, its name and a hash
// of its options for a select. Slack keeps what was entered in a block
// across views.update when the block id stays; a select whose options
// change (another target's workers) gets a new id, so it shows the value
// the form gives, not a worker of the other target.
func blockID(fd chatmodel.FormField) string {
	if len(fd.Options) == 0 || len(fd.Options) > 100 {
		return fd.Name
	}
	h := fnv.New32a()
	for _, o := range fd.Options {
		h.Write([]byte(o))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%s.%08x", fd.Name, h.Sum32())
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
	errs := a.formChecker.CheckForm(ctx, chatmodel.Conversation{Platform: Platform, Channel: st.Channel, Thread: st.Thread}, st.Command, values)
	out := map[string]string{}
	for name, msg := range errs {
		if _, onForm := values[name]; onForm {
			out[st.blockOf(name)] = truncateRunes(msg, 2000)
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
	st, values, ok := a.formValues(cb)
	for name, v := range values {
		values[name] = strings.Join(strings.Fields(v), "")
	}
	return st, values, ok
}

// formValues reads groundcrew's form from a payload of its view (a
// submission, a change): its state and the values entered by field, as
// Slack sends them; ok is false for a view that is not groundcrew's form.
func (a *Adapter) formValues(cb slackapi.InteractionCallback) (formState, map[string]string, bool) {
	if cb.View.CallbackID != formCallback || cb.View.State == nil {
		return formState{}, nil, false
	}
	var st formState
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &st); err != nil || st.Channel == "" {
		a.log.Warn("slack: a form payload without its state", "user", cb.User.ID, "type", cb.Type, "err", err)
		return formState{}, nil, false
	}
	values := map[string]string{}
	for _, name := range st.Fields {
		act, ok := cb.View.State.Values[st.blockOf(name)][name]
		if !ok {
			continue
		}
		v := act.Value
		if act.SelectedOption.Value != "" {
			v = act.SelectedOption.Value
		}
		values[name] = v
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
