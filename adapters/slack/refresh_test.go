package slack

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// targetForms is a FormRefresher that answers as the engine does for a
// run form with a target field: the workers of the target picked, the
// values still valid kept, a note for a target that cannot be read.
type targetForms struct {
	mu      sync.Mutex
	workers map[string][]string // target → workers; absent: cannot be read
	asked   []map[string]string
}

func (r *targetForms) RefreshForm(_ context.Context, _ chatmodel.Conversation, command string, values map[string]string) (chatmodel.Form, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, values)
	return r.form(values), nil
}

func (r *targetForms) form(values map[string]string) chatmodel.Form {
	f := chatmodel.Form{Title: "Run worker-stalled", Command: "run worker-stalled", Fields: []chatmodel.FormField{
		{Name: "target", Required: true, Options: []string{"infra-dev", "infra-down", "infra-prd"}, Default: values["target"], Refresh: true},
		{Name: "worker", Required: true},
		{Name: "note", Default: values["note"]},
	}}
	if ws, ok := r.workers[values["target"]]; ok {
		f.Fields[1].Options = ws
		for _, w := range ws {
			if w == values["worker"] {
				f.Fields[1].Default = w
			}
		}
	} else if values["target"] != "" {
		f.Note = "Could not read the workers of " + values["target"] + " (connection refused): type worker."
	}
	return f
}

// openedForm opens the form for a /runbook run without its target and
// returns the modal as Slack got it, with the view's id and hash.
func openedForm(t *testing.T, a *Adapter, f *fakeSlack, r *targetForms) (slackapi.ModalViewRequest, fakeView) {
	t.Helper()
	ev := a.commandEvent(slackapi.SlashCommand{TriggerID: "T77", UserID: "UALICE", UserName: "alice", ChannelID: "C0OPS", Text: "run worker-stalled"})
	require.NoError(t, a.OpenForm(context.Background(), ev, r.form(nil)))
	f.mu.Lock()
	v := f.views[len(f.views)-1]
	f.mu.Unlock()
	var view slackapi.ModalViewRequest
	require.NoError(t, json.Unmarshal([]byte(v.View), &view))
	return view, v
}

// inputBlocks are a modal's input blocks by field (action id).
func inputBlocks(t *testing.T, view slackapi.ModalViewRequest) map[string]*slackapi.InputBlock {
	t.Helper()
	out := map[string]*slackapi.InputBlock{}
	for _, b := range view.Blocks.BlockSet {
		if in, ok := b.(*slackapi.InputBlock); ok {
			switch el := in.Element.(type) {
			case *slackapi.SelectBlockElement:
				out[el.ActionID] = in
			case *slackapi.PlainTextInputBlockElement:
				out[el.ActionID] = in
			}
		}
	}
	return out
}

func optionValues(in *slackapi.InputBlock) []string {
	sel, ok := in.Element.(*slackapi.SelectBlockElement)
	if !ok {
		return nil
	}
	var out []string
	for _, o := range sel.Options {
		out = append(out, o.Value)
	}
	return out
}

// noteText is the text of a modal's note block ("" without one).
func noteText(view slackapi.ModalViewRequest) string {
	for _, b := range view.Blocks.BlockSet {
		if c, ok := b.(*slackapi.ContextBlock); ok && c.BlockID == noteBlock {
			for _, el := range c.ContextElements.Elements {
				if tx, ok := el.(*slackapi.TextBlockObject); ok {
					return tx.Text
				}
			}
		}
	}
	return ""
}

// targetPicked is the block_actions payload Slack sends when the target
// select of view changes to target, the view's state holding the values
// entered, with the view's hash as the client last saw it.
func targetPicked(t *testing.T, view slackapi.ModalViewRequest, id, hash, target string, entered map[string]string) string {
	t.Helper()
	blocks := inputBlocks(t, view)
	state := map[string]map[string]any{}
	for name, v := range entered {
		state[blocks[name].BlockID] = map[string]any{name: map[string]any{"type": "plain_text_input", "value": v}}
	}
	tb := blocks["target"].BlockID
	state[tb] = map[string]any{"target": map[string]any{"type": "static_select", "selected_option": map[string]any{"value": target}}}
	b, err := json.Marshal(map[string]any{
		"type": "block_actions", "trigger_id": "T-change", "user": map[string]any{"id": "UALICE", "name": "alice"},
		"container": map[string]any{"type": "view", "view_id": id},
		"view":      map[string]any{"id": id, "hash": hash, "callback_id": view.CallbackID, "private_metadata": view.PrivateMetadata, "state": map[string]any{"values": state}},
		"actions": []map[string]any{{"type": "static_select", "action_id": "target", "block_id": tb,
			"selected_option": map[string]any{"value": target}, "action_ts": "1795979200.000100"}},
	})
	require.NoError(t, err)
	return string(b)
}

func postInteraction(t *testing.T, a *Adapter, payload string) {
	t.Helper()
	res := serve(t, a.HTTPHandler(), PathInteractivity, formType, []byte(url.Values{"payload": {payload}}.Encode()), time.Now(), nil)
	require.Equal(t, http.StatusOK, res.Code)
	assert.Empty(t, res.Body.String(), "acknowledged at once")
}

// waitUpdates waits for n accepted views.update calls and returns the
// last one's view.
func waitUpdates(t *testing.T, f *fakeSlack, n int) (fakeView, slackapi.ModalViewRequest) {
	t.Helper()
	require.Eventually(t, func() bool { return len(f.viewUpdates()) >= n }, 5*time.Second, 10*time.Millisecond, "views.update #%d", n)
	ups := f.viewUpdates()
	require.Len(t, ups, n)
	var view slackapi.ModalViewRequest
	require.NoError(t, json.Unmarshal([]byte(ups[n-1].View), &view))
	return ups[n-1], view
}

// Picking the target inside the modal updates it (views.update with the
// view's id and hash) with that target's workers, keeping what was typed;
// nothing reaches the engine. A change sent with the hash of before the
// last update still lands (the adapter knows the newer hash); a view
// changed elsewhere (hash_conflict) is left as it is; a target that cannot
// be read is said in the modal and its worker is free text. The submitted
// modal is the command typed in full.
func TestForm_TargetChangeRefreshesTheModal(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeHTTP})
	forms := &targetForms{workers: map[string][]string{"infra-dev": {"dev-w-1", "dev-w-2"}, "infra-prd": {"prd-w-0"}}}
	a.SetFormRefresher(forms)
	rec := newRecorder()
	runAdapter(t, a, rec)

	view, opened := openedForm(t, a, f, forms)
	blocks := inputBlocks(t, view)
	assert.True(t, blocks["target"].DispatchAction, "a change of the target is sent at once")
	assert.False(t, blocks["worker"].DispatchAction)
	assert.IsType(t, &slackapi.PlainTextInputBlockElement{}, blocks["worker"].Element, "no target yet: free text")

	postInteraction(t, a, targetPicked(t, view, opened.ID, opened.Hash, "infra-dev", map[string]string{"note": "disk full", "worker": "w9"}))
	up, dev := waitUpdates(t, f, 1)
	assert.Equal(t, opened.ID, up.ID)
	assert.Equal(t, opened.Hash, up.Hash, "the view's hash guards the update")
	blocks = inputBlocks(t, dev)
	assert.Equal(t, []string{"dev-w-1", "dev-w-2"}, optionValues(blocks["worker"]), "infra-dev's workers")
	assert.Equal(t, "infra-dev", blocks["target"].Element.(*slackapi.SelectBlockElement).InitialOption.Value)
	assert.Equal(t, "disk full", blocks["note"].Element.(*slackapi.PlainTextInputBlockElement).InitialValue, "what was typed stays")
	assert.Equal(t, "note", blocks["note"].BlockID, "the same block: Slack keeps its value")
	assert.NotEqual(t, inputBlocks(t, view)["worker"].BlockID, blocks["worker"].BlockID, "a new block for new options")
	assert.Equal(t, map[string]string{"target": "infra-dev", "note": "disk full", "worker": "w9"}, forms.asked[0])
	assert.Empty(t, noteText(dev))
	rec.none(t, 50*time.Millisecond)

	// The person picked infra-prd before the first update reached them:
	// the payload carries the view's first hash; the update gives the
	// newer one.
	postInteraction(t, a, targetPicked(t, view, opened.ID, opened.Hash, "infra-prd", map[string]string{"note": "disk full"}))
	up, prd := waitUpdates(t, f, 2)
	assert.Equal(t, opened.ID+"-h1", up.Hash, "the hash of groundcrew's last update, not the payload's stale one")
	assert.Equal(t, []string{"prd-w-0"}, optionValues(inputBlocks(t, prd)["worker"]))

	// Changed elsewhere: both hashes are stale; the modal is left as it is.
	f.touchView(opened.ID)
	postInteraction(t, a, targetPicked(t, prd, opened.ID, opened.ID+"-h2", "infra-dev", nil))
	require.Eventually(t, func() bool {
		forms.mu.Lock()
		defer forms.mu.Unlock()
		return len(forms.asked) == 3
	}, 5*time.Second, 10*time.Millisecond)
	time.Sleep(100 * time.Millisecond)
	assert.Len(t, f.viewUpdates(), 2, "a conflicting update is not forced")
	assert.Equal(t, 1, hashConflicts(f))

	// The next change carries the view's current hash (newer than the one
	// groundcrew knows): refused with the known one, it lands with the
	// payload's. A target that cannot be read is said in the modal.
	f.mu.Lock()
	cur := f.viewHash[opened.ID]
	f.mu.Unlock()
	postInteraction(t, a, targetPicked(t, prd, opened.ID, cur, "infra-down", map[string]string{"note": "disk full"}))
	up, down := waitUpdates(t, f, 3)
	assert.Equal(t, cur, up.Hash)
	assert.Equal(t, 2, hashConflicts(f))
	assert.Equal(t, "⚠️ Could not read the workers of infra-down (connection refused): type worker.", noteText(down))
	blocks = inputBlocks(t, down)
	assert.IsType(t, &slackapi.PlainTextInputBlockElement{}, blocks["worker"].Element, "free text")
	assert.Equal(t, "infra-down", blocks["target"].Element.(*slackapi.SelectBlockElement).InitialOption.Value, "the modal stays usable")

	// Submitted from the refreshed modal (its blocks): the command in full.
	blocks = inputBlocks(t, dev)
	cb := slackapi.InteractionCallback{Type: slackapi.InteractionTypeViewSubmission, User: slackapi.User{ID: "UALICE", Name: "alice"}}
	cb.View.CallbackID, cb.View.PrivateMetadata, cb.View.ID, cb.View.Hash = dev.CallbackID, dev.PrivateMetadata, opened.ID, "h9"
	cb.View.State = &slackapi.ViewState{Values: map[string]map[string]slackapi.BlockAction{
		blocks["target"].BlockID: {"target": {SelectedOption: slackapi.OptionBlockObject{Value: "infra-dev"}}},
		blocks["worker"].BlockID: {"worker": {SelectedOption: slackapi.OptionBlockObject{Value: "dev-w-2"}}},
		"note":                   {"note": {Value: "disk full"}},
	}}
	evs := a.interactionEvents(cb)
	require.Len(t, evs, 1)
	assert.Equal(t, "run worker-stalled note=diskfull target=infra-dev worker=dev-w-2", evs[0].Text)

	// A refused value is shown on its field's block.
	check := &checkerStub{refuse: map[string]string{"worker": "No such worker."}, got: make(chan map[string]string, 1)}
	a.SetFormChecker(check)
	resp := a.submissionErrors(context.Background(), cb)
	require.NotNil(t, resp)
	assert.Equal(t, map[string]string{blocks["worker"].BlockID: "No such worker."}, resp.Errors)
}

// hashConflicts is how many views.update calls the fake refused.
func hashConflicts(f *fakeSlack) int {
	return len(f.callsTo("views.update")) - len(f.viewUpdates())
}

// In Socket Mode a change arrives as an interactive envelope: acked at
// once, then the modal is updated the same way.
func TestForm_TargetChangeRefreshesTheModal_Socket(t *testing.T) {
	f := newFakeSlack(t)
	a := newTestAdapter(t, f, Config{Mode: ModeSocket})
	forms := &targetForms{workers: map[string][]string{"infra-dev": {"dev-w-1"}}}
	a.SetFormRefresher(forms)
	view, opened := openedForm(t, a, f, forms)
	payload := targetPicked(t, view, opened.ID, opened.Hash, "infra-dev", nil)
	script := &socketScript{acks: make(chan string, 10), payloads: make(chan json.RawMessage, 10), conns: [][]map[string]any{{
		envelope("env-change", "interactive", rawJSON([]byte(payload))),
	}}}
	f.setWebsocket(script.serve(t))
	rec := newRecorder()
	runAdapter(t, a, rec)

	select {
	case id := <-script.acks:
		assert.Equal(t, "env-change", id)
	case <-time.After(5 * time.Second):
		t.Fatal("the change was not acked")
	}
	_, dev := waitUpdates(t, f, 1)
	assert.Equal(t, []string{"dev-w-1"}, optionValues(inputBlocks(t, dev)["worker"]))
	rec.none(t, 50*time.Millisecond)
}
