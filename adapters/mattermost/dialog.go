package mattermost

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// DialogPath is where Mattermost posts a submitted form (an interactive
// dialog).
const DialogPath = "/mattermost/dialog"

// triggers remembers the trigger_id of recent slash commands by event id:
// a dialog is opened with the trigger of the command that lacked its
// parameters (Mattermost accepts it for a few seconds).
type triggers struct {
	mu sync.Mutex
	by map[string]triggerEntry
}

type triggerEntry struct {
	id string
	at time.Time
}

const triggerTTL = time.Minute

func (t *triggers) put(eventID, trigger string, now time.Time) {
	if eventID == "" || trigger == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]triggerEntry{}
	}
	for k, e := range t.by {
		if now.Sub(e.at) > triggerTTL {
			delete(t.by, k)
		}
	}
	if len(t.by) < 10000 {
		t.by[eventID] = triggerEntry{id: trigger, at: now}
	}
}

func (t *triggers) get(eventID string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.by[eventID].id
}

func (a *Adapter) triggers() *triggers { return &a.trig }

var _ chatmodel.FormOpener = (*Adapter)(nil)

// dialogState is what a dialog carries back, signed: the command it
// completes and the thread it was typed in, for the user and channel
// Mattermost names on submission.
type dialogState struct {
	Command string `json:"c"`
	Thread  string `json:"t,omitempty"`
	Sig     string `json:"s"`
}

func (a *Adapter) signDialog(user, channel, thread, command string) string {
	m := hmac.New(sha256.New, a.cfg.hmacKey)
	var n [4]byte
	for _, f := range []string{"groundcrew/mattermost/dialog/v1", user, channel, thread, command} {
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// OpenForm implements chatmodel.FormOpener with an interactive dialog, opened
// with the trigger of the slash command ev. Fields with allowed values are
// selects; the others text. A field marked Refresh (the target) is a
// select with refresh: when it changes, Mattermost posts a refresh to the
// dialog's source_url and the adapter answers with the form for the
// values entered. Without buttons configured (callback URL and HMAC key)
// or a trigger, it fails and the engine answers in text.
func (a *Adapter) OpenForm(ctx context.Context, ev chatmodel.Event, f chatmodel.Form) error {
	trigger := a.triggers().get(ev.ID)
	if trigger == "" || !a.buttonsEnabled() {
		return errors.New("no dialog: the command has no trigger or callback_url/action_hmac_key are not set")
	}
	st, err := json.Marshal(dialogState{Command: f.Command, Thread: ev.Conversation.Thread,
		Sig: a.signDialog(ev.User.ID, ev.Conversation.Channel, ev.Conversation.Thread, f.Command)})
	if err != nil {
		return err
	}
	d := a.dialog(f, string(st))
	return a.call(ctx, "opening a dialog", false, func(ctx context.Context) (*model.Response, error) {
		return a.client.OpenInteractiveDialog(ctx, model.OpenDialogRequest{TriggerId: trigger, URL: a.cfg.callbackURL + DialogPath, Dialog: d})
	})
}

// dialog is the interactive dialog of f, carrying the signed state.
func (a *Adapter) dialog(f chatmodel.Form, state string) model.Dialog {
	intro := "Submitting is the same as typing `/" + Trigger + " " + f.Command + " …`"
	if f.Note != "" {
		intro = "⚠️ " + f.Note + "\n\n" + intro
	}
	d := model.Dialog{CallbackId: "groundcrew-run", Title: truncate(f.Title, 24), SubmitLabel: "Run", State: state, IntroductionText: intro}
	refresh := a.refresher() != nil
	for _, fd := range f.Fields {
		el := model.DialogElement{DisplayName: fd.Name, Name: fd.Name, Type: "text", Default: fd.Default, HelpText: fd.Help, Optional: !fd.Required, MaxLength: 150}
		if len(fd.Options) > 0 {
			el.Type, el.MaxLength = "select", 0
			for _, o := range fd.Options {
				el.Options = append(el.Options, &model.PostActionOptions{Text: o, Value: o})
			}
			if fd.Refresh && refresh {
				el.Refresh = true
				d.SourceURL = a.cfg.callbackURL + DialogPath
			}
		}
		d.Elements = append(d.Elements, el)
	}
	return d
}

// SetFormRefresher makes a change of a dialog's field marked Refresh (the
// target) answered with the form for the values entered: that target's
// workers, pipelines and teams. Call it before Run.
func (a *Adapter) SetFormRefresher(r chatmodel.FormRefresher) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.formRefresher = r
}

func (a *Adapter) refresher() chatmodel.FormRefresher {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.formRefresher
}

// refreshDialog answers a dialog's refresh (a field with refresh changed):
// the dialog of the form for the values entered, with the same state.
func (a *Adapter) refreshDialog(w http.ResponseWriter, r *http.Request, req model.SubmitDialogRequest, st dialogState) {
	refresher := a.refresher()
	if refresher == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	values := map[string]string{}
	for name, v := range req.Submission {
		if s, ok := v.(string); ok {
			values[name] = strings.TrimSpace(s)
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	f, err := refresher.RefreshForm(ctx, chatmodel.Conversation{Platform: Platform, Channel: req.ChannelId, Thread: st.Thread}, st.Command, values)
	if err != nil {
		a.log.Info("a dialog's refresh not answered", "user", req.UserId, "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	d := a.dialog(f, req.State)
	writeDialogResponse(w, model.SubmitDialogResponse{Type: string(model.SubmitDialogResponseTypeForm), Form: &d})
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// serveDialog handles a submitted dialog: the state's signature is checked
// first, then the values become the command typed in full (a refresh, a
// field with refresh changed, is answered with the form again). What the engine
// answers about a field (a value that does not match) is shown on that
// field and the dialog stays open; other answers are shown as its error.
func (a *Adapter) serveDialog(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	httpguard.Deadline(w, 0)
	var req model.SubmitDialogRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if req.Cancelled {
		w.WriteHeader(http.StatusOK)
		return
	}
	var st dialogState
	if err := json.Unmarshal([]byte(req.State), &st); err != nil || req.UserId == "" ||
		!hmac.Equal([]byte(st.Sig), []byte(a.signDialog(req.UserId, req.ChannelId, st.Thread, st.Command))) {
		a.log.Warn("refused a dialog submission", "user", req.UserId, "remote", r.RemoteAddr)
		writeDialogResponse(w, model.SubmitDialogResponse{Error: "This form could not be verified; type the command instead."})
		return
	}
	if req.Type == "refresh" {
		a.refreshDialog(w, r, req, st)
		return
	}
	form := chatmodel.Form{Command: st.Command}
	values := map[string]string{}
	errs := map[string]string{}
	for name, v := range req.Submission {
		s, _ := v.(string)
		s = strings.TrimSpace(s)
		if strings.ContainsAny(s, " \t\n") {
			errs[name] = "a value cannot contain spaces"
			continue
		}
		values[name] = s
		form.Fields = append(form.Fields, chatmodel.FormField{Name: name})
	}
	if len(errs) > 0 {
		writeDialogResponse(w, model.SubmitDialogResponse{Errors: errs})
		return
	}
	sortFields(form.Fields)
	e := chatmodel.Event{Kind: chatmodel.EventCommand, User: chatmodel.User{ID: req.UserId}, Text: chatmodel.FormCommand(form, values), Time: a.now(),
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: req.ChannelId, Thread: st.Thread}}
	got, done, err := a.interact(req.UserId, req.ChannelId, false, func() error { return a.deliver(e) })
	texts := got.texts
	if done && err != nil {
		writeDialogResponse(w, model.SubmitDialogResponse{Error: "groundcrew could not take this: " + err.Error()})
		return
	}
	for _, t := range texts {
		for name := range values {
			if strings.Contains(t, fmt.Sprintf("%q", name)) {
				errs[name] = t
			}
		}
	}
	if len(errs) > 0 {
		writeDialogResponse(w, model.SubmitDialogResponse{Errors: errs})
		return
	}
	if len(texts) > 0 {
		// Said privately, as the command's answer would be.
		_ = a.Ephemeral(r.Context(), e.Conversation, e.User, chatmodel.Message{Text: joinTexts(texts)})
	}
	w.WriteHeader(http.StatusOK)
}

func sortFields(fs []chatmodel.FormField) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].Name < fs[j-1].Name; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

func writeDialogResponse(w http.ResponseWriter, resp model.SubmitDialogResponse) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&resp)
}
