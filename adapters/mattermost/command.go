package mattermost

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// HTTP paths served by HTTPHandler.
const (
	CommandPath = "/mattermost/command"
	ActionPath  = "/mattermost/action"
)

// Trigger is the slash command word.
const Trigger = "runbook"

// maxBody bounds request bodies of the HTTP endpoints.
const maxBody = 64 << 10

// HTTPHandler serves the slash command (CommandPath) and the button
// callbacks (ActionPath). Mount it on groundcrew's HTTP server.
func (a *Adapter) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(CommandPath, a.serveCommand)
	mux.HandleFunc(ActionPath, a.serveAction)
	mux.HandleFunc(DialogPath, a.serveDialog)
	return a.fromAllowedSources(mux)
}

// fromAllowedSources refuses requests whose peer address is not in
// allowed_sources (when set) before anything else is read.
func (a *Adapter) fromAllowedSources(next http.Handler) http.Handler {
	if len(a.cfg.sources) == 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.allowedSource(r.RemoteAddr) {
			a.log.Warn("refused a request from outside allowed_sources", "remote", r.RemoteAddr, "path", r.URL.Path)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *Adapter) allowedSource(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	for _, p := range a.cfg.sources {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// serveCommand handles "/runbook …". The token is checked before anything
// else; the engine's first replies go into the (ephemeral) answer when they
// come within ackWait, the run's messages are posted by the bot.
func (a *Adapter) serveCommand(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	httpguard.Deadline(w, 0) // a client trickling its body is cut off (#19.7)
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	token := r.Form.Get("token")
	if token == "" {
		token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Token ")
	}
	if !a.validCommandToken(token) {
		a.log.Warn("refused slash command with a bad token", "remote", r.RemoteAddr)
		http.Error(w, "invalid command token", http.StatusUnauthorized)
		return
	}
	text := strings.TrimSpace(r.Form.Get("text"))
	userID, channelID := r.Form.Get("user_id"), r.Form.Get("channel_id")
	if userID == "" || channelID == "" {
		http.Error(w, "missing user_id or channel_id", http.StatusBadRequest)
		return
	}
	if h, _ := a.currentHandler(); h == nil {
		writeCommandResponse(w, "⏳ groundcrew is starting; try again in a minute.")
		return
	}
	e := chatmodel.Event{
		Kind:         chatmodel.EventCommand,
		ID:           requestID("command", r.Form.Get("trigger_id")),
		User:         chatmodel.User{ID: userID, Name: r.Form.Get("user_name")},
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: channelID, Thread: r.Form.Get("root_id")},
		Text:         text,
		Time:         a.now(),
	}
	a.triggers().put(e.ID, r.Form.Get("trigger_id"), a.now()) // a form opens with it
	got, done, err := a.interact(userID, channelID, true, func() error {
		if e.Conversation.Thread != "" {
			_, ctx := a.currentHandler()
			if ctx == nil {
				ctx = context.Background()
			}
			// Clients send the root, but be safe: replies need a root post.
			if root, err := a.rootOf(ctx, e.Conversation.Thread); err == nil {
				e.Conversation.Thread = root
			} else {
				a.log.Warn("could not read the thread a command was typed in", "post", e.Conversation.Thread, "err", err)
			}
		}
		return a.deliver(e)
	})
	switch {
	case len(got.texts) > 0:
		resp := model.CommandResponse{ResponseType: model.CommandResponseTypeEphemeral, Text: joinTexts(got.texts)}
		if len(got.buttons) > 0 {
			resp.Attachments = []*model.SlackAttachment{{Actions: a.userActions(userID, channelID, got.thread, got.buttons)}}
		}
		writeCommandAnswer(w, resp)
	case done && err != nil:
		writeCommandResponse(w, "⚠️ groundcrew could not take this command: "+err.Error())
	default:
		writeCommandResponse(w, fmt.Sprintf("⏳ `/%s %s`", Trigger, text))
	}
}

func (a *Adapter) validCommandToken(token string) bool {
	if token == "" {
		return false
	}
	a.mu.Lock()
	extra := a.extraToken
	a.mu.Unlock()
	ok := false
	for _, want := range []string{a.cfg.commandToken, extra} {
		if want != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1 {
			ok = true
		}
	}
	return ok
}

func writeCommandResponse(w http.ResponseWriter, text string) {
	writeCommandAnswer(w, model.CommandResponse{ResponseType: model.CommandResponseTypeEphemeral, Text: text})
}

func writeCommandAnswer(w http.ResponseWriter, resp model.CommandResponse) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&resp)
}

// requestID turns a platform request id into an event id ("" if none).
func requestID(kind, id string) string {
	if id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(id))
	return kind + ":" + hex.EncodeToString(sum[:12])
}

// registerCommand creates /runbook in the team, or fixes its URL, and
// remembers its token. The bot needs the manage_slash_commands permission
// in the team (team admin).
func (a *Adapter) registerCommand(ctx context.Context) error {
	a.mu.Lock()
	teamID := a.teamID
	a.mu.Unlock()
	want := &model.Command{
		TeamId:           teamID,
		Trigger:          Trigger,
		Method:           model.CommandMethodPost,
		URL:              a.cfg.callbackURL + CommandPath,
		DisplayName:      "groundcrew",
		Description:      "Run incident runbooks for Concourse CI",
		AutoComplete:     true,
		AutoCompleteDesc: "Run a runbook, approve a step, list runs",
		AutoCompleteHint: "run <runbook> target=<target> … | help",
	}
	hint := fmt.Sprintf("registering /%s in team %s: make the bot a team admin (it needs manage_slash_commands) or register the command by hand and set command_token", Trigger, a.cfg.team)
	var cmds []*model.Command
	err := a.call(ctx, "listing slash commands", true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		cmds, resp, err = a.client.ListCommands(ctx, teamID, true)
		return resp, err
	})
	if err != nil {
		return fmt.Errorf("%s: %w", hint, err)
	}
	var existing *model.Command
	for _, c := range cmds {
		if c.Trigger == Trigger && c.DeleteAt == 0 {
			existing = c
			break
		}
	}
	var got *model.Command
	switch {
	case existing == nil:
		err = a.call(ctx, "creating the slash command", false, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			got, resp, err = a.client.CreateCommand(ctx, want)
			return resp, err
		})
	case existing.URL != want.URL || existing.Method != want.Method || !existing.AutoComplete:
		upd := *existing
		upd.URL, upd.Method, upd.AutoComplete = want.URL, want.Method, true
		upd.AutoCompleteDesc, upd.AutoCompleteHint = want.AutoCompleteDesc, want.AutoCompleteHint
		err = a.call(ctx, "updating the slash command", true, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			got, resp, err = a.client.UpdateCommand(ctx, &upd)
			return resp, err
		})
	default:
		got = existing
	}
	if err != nil {
		return fmt.Errorf("%s: %w", hint, err)
	}
	a.mu.Lock()
	a.extraToken = got.Token
	a.mu.Unlock()
	a.log.Info("slash command ready", "trigger", "/"+Trigger, "url", want.URL)
	return nil
}
