package incident

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Handler gives chat events about incidents to the Manager — 👀 on an
// incident message, the incident buttons — and every other event to Next
// (the engine). It is wired at the composition root in front of the
// engine, and as the engine's Commander: the engine parses every command
// and hands `/runbook incidents …` to RunCommand.
type Handler struct {
	M    *Manager
	Next chatmodel.Handler
}

var (
	_ chatmodel.Handler     = (*Handler)(nil)
	_ chatmodel.ThreadNoter = (*Handler)(nil)
	_ chatmodel.Commander   = (*Handler)(nil)
)

// ThreadNotes implements chatmodel.ThreadNoter: in an incident's thread, the
// engine's summary is headed by the incident and merges its timeline.
func (h *Handler) ThreadNotes(ctx context.Context, thread chatmodel.Conversation) (chatmodel.ThreadNotes, bool) {
	if thread.Thread == "" {
		return chatmodel.ThreadNotes{}, false
	}
	in, ok := h.incidentOf(ctx, chatmodel.MessageRef{Platform: thread.Platform, Channel: thread.Channel, ID: thread.Thread})
	if !ok {
		return chatmodel.ThreadNotes{}, false
	}
	return h.M.Notes(in), true
}

// Handle implements chatmodel.Handler: 👀 on an incident message and the
// incident buttons; every other event goes to Next (the engine), which
// parses every command and hands `/runbook incidents …` back through
// RunCommand.
func (h *Handler) Handle(ctx context.Context, ev chatmodel.Event) error {
	switch ev.Kind {
	case chatmodel.EventReaction:
		if ev.Intent == chatmodel.IntentAcknowledge && !ev.Removed { // 👀, as the chat adapters map it
			if in, ok := h.incidentOf(ctx, ev.Message); ok {
				_, _, err := h.M.Acknowledge(ctx, in.ID, ev.User, "reaction")
				return err
			}
		}
	case chatmodel.EventButton:
		if strings.HasPrefix(string(ev.Intent), "incident_") {
			return h.button(ctx, ev)
		}
	}
	return h.Next.Handle(ctx, ev)
}

// The incidents' command, as the engine's parser reads it.
var commands = []chatmodel.CommandSpec{{
	Name: "incidents", Aliases: []string{"incident"},
	Usage:   "incidents [unacked] [target=<target>] [all] [page <n>]",
	Help:    "the open incidents (from Alertmanager alerts and watch rules), those nobody acknowledged first; `all` lists the resolved too",
	MaxArgs: 5, // unacked target=x all page n
	Subs: []chatmodel.SubVerb{
		{Name: "show", Args: 1, Usage: "incidents show <incident>", Help: "an incident's timeline and the runs in its thread"},
		{Name: "ack", Args: 1, Usage: "incidents ack <incident>", Help: "acknowledge an incident (or react 👀 on it)"},
	},
}}

// Commands implements chatmodel.Commander.
func (h *Handler) Commands() []chatmodel.CommandSpec { return commands }

// RunCommand implements chatmodel.Commander: `/runbook incidents …`,
// parsed by the engine.
func (h *Handler) RunCommand(ctx context.Context, ev chatmodel.Event, inv chatmodel.Invocation) error {
	switch inv.Sub {
	case "show":
		in, ok := h.find(ctx, ev, inv.Args[0])
		if !ok {
			return nil
		}
		text := h.M.TimelineText(in)
		var rs []string
		for _, r := range h.M.LinkedRuns(ctx, in) {
			rs = append(rs, fmt.Sprintf("`%s` %s %s", r.ID, r.Runbook, r.State))
		}
		if len(rs) > 0 {
			text += "\nRuns in its thread: " + strings.Join(rs, ", ")
		}
		h.reply(ctx, ev, text)
		return nil
	case "ack":
		in, ok := h.find(ctx, ev, inv.Args[0])
		if !ok {
			return nil
		}
		return h.ack(ctx, ev, in, "command")
	}
	return h.list(ctx, ev, inv.Args)
}

// incidentOf finds the incident of a message: its root, or a reply in its thread.
func (h *Handler) incidentOf(ctx context.Context, ref chatmodel.MessageRef) (*Incident, bool) {
	if ref.IsZero() {
		return nil, false
	}
	in, err := h.M.o.Store.IncidentByMessage(ctx, ref)
	if err == nil {
		return in, true
	}
	if ref.Thread != "" && ref.Thread != ref.ID {
		in, err = h.M.o.Store.IncidentByMessage(ctx, chatmodel.MessageRef{Platform: ref.Platform, Channel: ref.Channel, ID: ref.Thread})
		if err == nil {
			return in, true
		}
	}
	if !errors.Is(err, ErrNotFound) {
		h.M.log.Warn("looking up an incident by message", "err", err)
	}
	return nil, false
}

func (h *Handler) reply(ctx context.Context, ev chatmodel.Event, text string) {
	to := ev.Conversation
	if to.Channel == "" {
		to.Channel = ev.Message.Channel
	}
	// A deadline of its own: a chat that hangs holds this answer no longer.
	ctx, cancel := context.WithTimeout(ctx, replyTimeout)
	defer cancel()
	if err := h.M.o.Chat.Ephemeral(ctx, to, ev.User, chatmodel.Message{Text: text}.Clean()); err != nil {
		h.M.log.Warn("ephemeral reply failed", "user", ev.User.ID, "err", err)
	}
}

// replyTimeout bounds a private answer to a person.
const replyTimeout = 10 * time.Second

const usage = "Usage: `/runbook incidents [unacked] [target=<target>] [all] [page <n>]` (the open incidents) · `/runbook incidents show <incident>` (its timeline) · `/runbook incidents ack <incident>`"

// list is `/runbook incidents [filters]`.
func (h *Handler) list(ctx context.Context, ev chatmodel.Event, args []string) error {
	f, err := ParseListFilter(args)
	if err != nil {
		h.reply(ctx, ev, "⚠️ "+err.Error()+"\n"+usage)
		return nil
	}
	ins, err := h.M.list(ctx, f)
	if err != nil {
		h.reply(ctx, ev, "⚠️ Could not list the incidents: "+err.Error())
		return err
	}
	if f.Target != "" && len(h.M.o.Targets) > 0 && !slices.Contains(h.M.o.Targets, f.Target) &&
		!slices.ContainsFunc(ins, func(in *Incident) bool { return strings.EqualFold(in.Target, f.Target) }) {
		// Not a quiet target: one that is not configured (an incident
		// of a target removed since is still listed by it).
		h.reply(ctx, ev, fmt.Sprintf("⚠️ There is no target `%.60s`; targets: %s.\n%s", f.Target, "`"+strings.Join(h.M.o.Targets, "`, `")+"`", usage))
		return nil
	}
	h.reply(ctx, ev, h.M.ListText(ins, f, func(in *Incident) []*runmodel.Run { return h.M.LinkedRuns(ctx, in) }))
	return nil
}

func (h *Handler) find(ctx context.Context, ev chatmodel.Event, id string) (*Incident, bool) {
	// Ids are written lower case ("i-b6cad1"); people copy them any way.
	in, err := h.M.o.Store.GetIncident(ctx, strings.ToLower(strings.Trim(id, "`")))
	if errors.Is(err, ErrNotFound) {
		h.reply(ctx, ev, fmt.Sprintf("⚠️ There is no incident %q. See `/runbook incidents`.", id))
		return nil, false
	}
	if err != nil {
		h.reply(ctx, ev, "⚠️ Could not read the incident: "+err.Error())
		return nil, false
	}
	return in, true
}

func (h *Handler) ack(ctx context.Context, ev chatmodel.Event, in *Incident, via string) error {
	got, changed, err := h.M.Acknowledge(ctx, in.ID, ev.User, via)
	if err != nil {
		h.reply(ctx, ev, "⚠️ Could not acknowledge: "+err.Error())
		return err
	}
	if !changed {
		switch {
		case got.State == StateResolved:
			h.reply(ctx, ev, fmt.Sprintf("Incident `%s` is already resolved.", got.ID))
		case got.AckedBy != nil:
			h.reply(ctx, ev, fmt.Sprintf("Incident `%s` was already acknowledged by %s.", got.ID, got.AckedBy.Display()))
		}
	}
	return nil
}

func (h *Handler) button(ctx context.Context, ev chatmodel.Event) error {
	if d := h.M.o.Dedupe; d != nil && ev.ID != "" {
		seen, err := d.SeenEvent(ctx, ev.ID, h.M.o.Now())
		if err != nil {
			return fmt.Errorf("recording event %s: %w", ev.ID, err)
		}
		if seen {
			return nil // a redelivered press
		}
	}
	in, ok := h.find(ctx, ev, ev.Value)
	if !ok {
		return nil
	}
	switch ev.Intent {
	case ActionAck:
		return h.ack(ctx, ev, in, "button")
	case ActionRun:
		before := len(h.M.LinkedRuns(ctx, in))
		if err := h.M.Run(ctx, in, ev.User, ev.ID, false); err != nil {
			var ue *chatmodel.UserError
			if errors.As(err, &ue) {
				return nil // refused: the engine told the person why; not acknowledged
			}
			h.reply(ctx, ev, "⚠️ Could not start the runbook: "+err.Error())
			return err
		}
		// A run that started acknowledges the incident; a press the engine
		// refused (who may run it, a parameter) does not.
		started := h.M.o.Runs == nil || len(h.M.LinkedRuns(ctx, in)) > before
		if started && in.State == StateOpen {
			if _, _, err := h.M.Acknowledge(ctx, in.ID, ev.User, "button"); err != nil {
				h.reply(ctx, ev, "⚠️ Could not acknowledge: "+err.Error())
				return err
			}
		}
	case ActionSilence:
		if _, err := h.M.Silence(ctx, in, ev.User, SilenceFor); errors.Is(err, ErrSilenced) {
			h.reply(ctx, ev, fmt.Sprintf("Incident `%s` is %s.", in.ID, err.Error()))
		} else if err != nil {
			h.reply(ctx, ev, "⚠️ Could not create the silence: "+err.Error())
		}
	case ActionUnsilence:
		if err := h.M.ExpireSilence(ctx, in, ev.User); err != nil {
			h.reply(ctx, ev, "⚠️ Could not expire the silence: "+err.Error())
		}
	}
	return nil
}
