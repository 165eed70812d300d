package slack

import (
	"context"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// inbox is the unbounded FIFO between the transports, which acknowledge
// Slack at once, and the engine. One goroutine drains it, so the engine sees
// events in arrival order (a reaction added, then removed) and a slow Handle
// never delays an ack.
type inbox struct {
	mu   sync.Mutex
	q    []chatmodel.Event
	wake chan struct{}
}

func newInbox() *inbox { return &inbox{wake: make(chan struct{}, 1)} }

func (b *inbox) push(events ...chatmodel.Event) {
	if len(events) == 0 {
		return
	}
	b.mu.Lock()
	b.q = append(b.q, events...)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *inbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.q)
}

// run hands queued events to handle, one at a time, until ctx ends.
func (b *inbox) run(ctx context.Context, handle func(chatmodel.Event)) {
	for {
		b.mu.Lock()
		var e chatmodel.Event
		ok := len(b.q) > 0
		if ok {
			e = b.q[0]
			b.q[0] = chatmodel.Event{}
			b.q = b.q[1:]
		}
		b.mu.Unlock()
		if ctx.Err() != nil {
			if ok { // put it back so it is counted as unhandled
				b.mu.Lock()
				b.q = append([]chatmodel.Event{e}, b.q...)
				b.mu.Unlock()
			}
			return
		}
		if ok {
			handle(e)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
	}
}

// commandEvent converts a slash command. Its ID is the command's trigger_id,
// unique per invocation (Slack does not retry slash commands over HTTP; a
// Socket Mode redelivery carries the same payload).
func (a *Adapter) commandEvent(cmd slackapi.SlashCommand) chatmodel.Event {
	e := chatmodel.Event{
		Kind:         chatmodel.EventCommand,
		User:         chatmodel.User{ID: cmd.UserID, Name: cmd.UserName},
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: cmd.ChannelID},
		Text:         strings.TrimSpace(unescaper.Replace(cmd.Text)),
		Time:         a.now(),
	}
	if cmd.TriggerID != "" {
		e.ID = "slack:command:" + cmd.TriggerID
	}
	a.rememberResponseURL(cmd.ChannelID, cmd.UserID, cmd.ResponseURL)
	return e
}

// callbackEvents converts an Events API callback: reaction_added and
// reaction_removed on messages. Other events (which the manifest does not
// subscribe to) are ignored. Event.ID is Slack's event_id, the same in every
// retry of the event, so the engine can drop retries.
func (a *Adapter) callbackEvents(ev slackevents.EventsAPIEvent) []chatmodel.Event {
	if ev.Type != slackevents.CallbackEvent {
		return nil
	}
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		return nil
	}
	var (
		user, reaction, eventTS string
		item                    slackevents.Item
		removed                 bool
	)
	switch in := ev.InnerEvent.Data.(type) {
	case *slackevents.ReactionAddedEvent:
		user, reaction, item, eventTS = in.User, in.Reaction, in.Item, in.EventTimestamp
	case *slackevents.ReactionRemovedEvent:
		user, reaction, item, eventTS, removed = in.User, in.Reaction, in.Item, in.EventTimestamp, true
	default:
		a.log.Debug("slack: ignoring event", "type", ev.InnerEvent.Type, "event_id", cb.EventID)
		return nil
	}
	if item.Type != "message" || item.Channel == "" || item.Timestamp == "" {
		return nil
	}
	t := tsTime(eventTS)
	if t.IsZero() && cb.EventTime > 0 {
		t = time.Unix(int64(cb.EventTime), 0).UTC()
	}
	return []chatmodel.Event{{
		Kind:         chatmodel.EventReaction,
		ID:           cb.EventID,
		User:         chatmodel.User{ID: user},
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: item.Channel},
		Message:      chatmodel.MessageRef{Platform: Platform, Channel: item.Channel, ID: item.Timestamp},
		Intent:       chatutil.IntentOf(reaction),
		Removed:      removed,
		Time:         t,
	}}
}

// interactionEvents converts block_actions (button presses) into at most
// one event, a view_submission of groundcrew's modal into its command, and
// a change inside the modal into its refresh (no event); other interaction
// types are ignored. Each press has its own trigger_id, which
// makes the Event.ID (a Socket Mode redelivery carries the same one).
func (a *Adapter) interactionEvents(cb slackapi.InteractionCallback) []chatmodel.Event {
	if cb.Type == slackapi.InteractionTypeViewSubmission {
		if e, ok := a.submissionEvent(cb); ok {
			return []chatmodel.Event{e}
		}
		return nil
	}
	if cb.Type != slackapi.InteractionTypeBlockActions {
		a.log.Debug("slack: ignoring interaction", "type", cb.Type)
		return nil
	}
	if isFormChange(cb) {
		// The target picked in groundcrew's modal: the adapter refreshes
		// the modal; nothing reaches the engine as a button.
		a.formChanged(cb)
		return nil
	}
	channel := cb.Container.ChannelID
	if channel == "" {
		channel = cb.Channel.ID
	}
	msgTS := cb.Container.MessageTs
	if msgTS == "" {
		msgTS = cb.Message.Timestamp
	}
	thread := cb.Container.ThreadTs
	if thread == "" {
		thread = cb.Message.ThreadTimestamp
	}
	msgThread := thread
	if msgThread == msgTS { // a thread's root message: not a reply
		msgThread = ""
	}
	name := cb.User.Name
	if name == "" {
		name = cb.User.Username
	}
	// Slack sends one action per click. A payload carrying more is not a
	// click: the first is handled, the rest refused, so one request cannot
	// become hundreds of votes and refusals (#22.3).
	var act *slackapi.BlockAction
	extra := 0
	for _, x := range cb.ActionCallback.BlockActions {
		switch {
		case x == nil || x.ActionID == "":
			continue
		case act == nil:
			act = x
		default:
			extra++
		}
	}
	if extra > 0 {
		a.refusedActions.Add(int64(extra))
		a.log.Warn("slack: refused the extra actions of a block_actions payload: Slack sends one per click; only the first is handled",
			"user", cb.User.ID, "channel", channel, "trigger", cb.TriggerID, "actions", extra+1, "refused", extra)
	}
	if act == nil {
		a.log.Debug("slack: block_actions without a button action ignored", "trigger", cb.TriggerID)
		return nil
	}
	e := chatmodel.Event{
		Kind:         chatmodel.EventButton,
		User:         chatmodel.User{ID: cb.User.ID, Name: name},
		Conversation: chatmodel.Conversation{Platform: Platform, Channel: channel, Thread: thread},
		Message:      chatmodel.MessageRef{Platform: Platform, Channel: channel, ID: msgTS, Thread: msgThread},
		Intent:       chatmodel.Intent(act.ActionID),
		Value:        act.Value,
		Time:         tsTime(act.ActionTs),
	}
	if e.Time.IsZero() {
		e.Time = a.now()
	}
	if key := cb.TriggerID; key != "" {
		e.ID = "slack:action:" + key
	} else if act.ActionTs != "" {
		e.ID = "slack:action:" + cb.User.ID + ":" + act.ActionTs
	}
	return []chatmodel.Event{e}
}
