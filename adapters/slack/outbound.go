package slack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Post implements chatmodel.Chat. A message into a Conversation with a Thread is a
// thread reply (thread_ts), also shown in the channel when m.Broadcast is set
// (reply_broadcast). Content that does not fit the message (a long Detail,
// overflowing text) follows as replies in the message's thread. The returned
// ref carries the channel id (also when to.Channel was "#name") and the ts.
func (a *Adapter) Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	r, err := render(m)
	if err != nil {
		return chatmodel.MessageRef{}, err
	}
	ch, err := a.dir.channelID(ctx, to.Channel)
	if err != nil {
		return chatmodel.MessageRef{}, err
	}
	var ref chatmodel.MessageRef
	err = a.lanes.with(ctx, ch, func(s *laneSession) error {
		opts := msgOptions(r.main)
		if to.Thread != "" {
			opts = append(opts, slackapi.MsgOptionTS(to.Thread))
			if m.Broadcast {
				opts = append(opts, slackapi.MsgOptionBroadcast())
			}
		}
		var ts string
		err := a.postMessage(ctx, s, ch, &ts, opts)
		if err != nil {
			if cannotPost(err) {
				return fmt.Errorf("posting to slack channel %s: %w (%w)", to.Channel, err, chatmodel.ErrCannotPost)
			}
			return fmt.Errorf("posting to slack channel %s: %w", to.Channel, err)
		}
		ref = chatmodel.MessageRef{Platform: Platform, Channel: ch, ID: ts, Thread: to.Thread}
		thread := to.Thread
		if thread == "" {
			thread = ts
		}
		a.postReplies(ctx, s, ch, thread, r.replies)
		return nil
	})
	if err != nil {
		return chatmodel.MessageRef{}, err
	}
	a.rememberReplies(ref, r.repliesKey())
	a.uploadFiles(ctx, ch, to.Thread, m.Files)
	return ref, nil
}

// cannotPost reports whether a post failed for good: the bot is not in a
// private channel (joining failed), the channel is gone or restricted, or
// Slack refuses the message as it is.
func cannotPost(err error) bool {
	code := slackErrorCode(err)
	switch code {
	case "not_in_channel", "channel_not_found", "is_archived", "restricted_action",
		// The message as it is: sent again it is refused again, and it
		// would hold its thread's later posts behind it in the outbox.
		"invalid_blocks", "invalid_blocks_format", "msg_too_long", "no_text", "too_many_attachments",
		"invalid_arguments", "cannot_reply_to_message":
		return true
	}
	// restricted_action_read_only_channel, …_thread_locked, …
	return strings.HasPrefix(code, "restricted_action_")
}

// CanPost implements chatmodel.PostChecker: the bot may post in a public channel
// (it joins it) or in a private one it was invited to. A private channel
// it is not in is refused with how to invite it.
func (a *Adapter) CanPost(ctx context.Context, to chatmodel.Conversation) error {
	ch, err := a.dir.channelID(ctx, to.Channel)
	if err != nil {
		return err
	}
	var c *slackapi.Channel
	err = a.retry.do(ctx, "conversations.info", retryTransient, func(ctx context.Context) error {
		var err error
		c, err = a.api.GetConversationInfoContext(ctx, &slackapi.GetConversationInfoInput{ChannelID: ch})
		return err
	})
	invite := &chatmodel.UserError{Msg: "⛔ I cannot post in this channel: it is private (or a direct message) and I am not in it. Invite me with `/invite @" + a.selfName() + "`, then run the command again."}
	switch {
	case slackErrorCode(err) == "channel_not_found":
		return invite
	case err != nil && permanent(err):
		// Slack answered, and will answer the same again: starting the run
		// would leave it waiting where nobody sees it (#22.3).
		a.log.Warn("slack: cannot check the channel; refusing the run", "channel", ch, "err", err)
		return &chatmodel.UserError{Msg: "⛔ I cannot check that I may post in this channel: " + permanentFix(err, ch)}
	case err != nil:
		// Slack unreachable or failing for now: the outbox retries the posts.
		return fmt.Errorf("checking slack channel %s: %w", to.Channel, err)
	case c.IsArchived:
		return &chatmodel.UserError{Msg: "⛔ This channel is archived: start the run in another channel."}
	case c.IsPrivate && !c.IsMember:
		return invite
	}
	return nil
}

// permanent reports whether Slack answered a call with an error that
// repeating it will not cure (missing_scope, invalid_auth, a 4xx); not a
// 5xx, a timeout, a network error, a 429 or a cancelled context.
func permanent(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if _, ok := rateLimitWait(err); ok {
		return false
	}
	return !transient(err)
}

// permanentFix says what an operator must change after a Slack error that
// repeating the call will not cure.
func permanentFix(err error, ch string) string {
	code := slackErrorCode(err)
	switch code {
	case "missing_scope":
		scope := "channels:read, groups:read, im:read and mpim:read"
		if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok && se.Needed != "" {
			scope = se.Needed
		} else if strings.HasPrefix(ch, "G") {
			scope = "groups:read"
		} else if strings.HasPrefix(ch, "D") {
			scope = "im:read"
		}
		return "the Slack app lacks the `" + scope + "` scope (Slack answered missing_scope to conversations.info). " +
			"Ask a Slack admin to add it to the app's bot token scopes and reinstall the app, then run the command again."
	case "not_authed", "invalid_auth", "account_inactive", "token_revoked", "token_expired":
		return "Slack refused the bot token (" + code + "). An operator must check `bot_token` in the configuration."
	case "":
		return "Slack answered " + err.Error() + ". Tell an operator; the run was not started."
	}
	return "Slack answered `" + code + "` to conversations.info. Tell an operator; the run was not started."
}

// postMessage posts once (429s waited out), joining a public channel the bot
// is not in yet and trying again.
func (a *Adapter) postMessage(ctx context.Context, s *laneSession, ch string, ts *string, opts []slackapi.MsgOption) error {
	return a.joiningIfNeeded(ctx, ch, func() error {
		return s.call(ctx, "chat.postMessage", retryRateLimitOnly, func(ctx context.Context) error {
			var err error
			_, *ts, err = a.api.PostMessageContext(ctx, ch, opts...)
			return err
		})
	})
}

// joiningIfNeeded runs write; when Slack answers not_in_channel, it joins the
// channel (public channels only: a private one needs an /invite) and runs
// write once more.
func (a *Adapter) joiningIfNeeded(ctx context.Context, ch string, write func() error) error {
	err := write()
	if slackErrorCode(err) != "not_in_channel" {
		return err
	}
	a.log.Info("slack: bot not in channel, joining it", "channel", ch)
	jerr := a.retry.do(ctx, "conversations.join", retryTransient, func(ctx context.Context) error {
		_, _, _, err := a.api.JoinConversationContext(ctx, ch)
		return err
	})
	if jerr != nil {
		return fmt.Errorf("%w (and joining the channel failed: %w; invite the bot with /invite)", err, jerr)
	}
	return write()
}

// postReplies posts the continuation of a message into its thread. The
// message itself is already posted, so a failure here is logged, not
// returned: returning it would make the engine post the message again.
func (a *Adapter) postReplies(ctx context.Context, s *laneSession, ch, thread string, replies []slackMsg) {
	for i, rep := range replies {
		opts := append(msgOptions(rep), slackapi.MsgOptionTS(thread))
		err := s.call(ctx, "chat.postMessage", retryTransient, func(ctx context.Context) error {
			_, _, err := a.api.PostMessageContext(ctx, ch, opts...)
			return err
		})
		if err != nil {
			a.log.Error("slack: posting the rest of a message into its thread failed; it is missing from the thread",
				"channel", ch, "thread", thread, "part", i+1, "of", len(replies), "err", err)
			return
		}
	}
}

// Update implements chatmodel.Chat with chat.update. What does not fit the message
// (a long Detail) is posted as new thread replies only when it changed since
// the message was last posted or updated, so repeated updates do not repeat
// it.
func (a *Adapter) Update(ctx context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	r, err := render(m)
	if err != nil {
		return err
	}
	ch, err := a.dir.channelID(ctx, ref.Channel)
	if err != nil {
		return err
	}
	if ref.ID == "" {
		return fmt.Errorf("%w: update of a message without id", ErrInvalidMessage)
	}
	key := r.repliesKey()
	repliesChanged := key != "" && a.lastReplies(ref) != key
	err = a.lanes.with(ctx, ch, func(s *laneSession) error {
		opts := msgOptions(r.main)
		err := s.call(ctx, "chat.update", retryTransient, func(ctx context.Context) error {
			_, _, _, err := a.api.UpdateMessageContext(ctx, ch, ref.ID, opts...)
			return err
		})
		if err != nil {
			return fmt.Errorf("updating slack message %s in %s: %w", ref.ID, ch, err)
		}
		if repliesChanged {
			thread := ref.Thread
			if thread == "" {
				thread = ref.ID
			}
			a.postReplies(ctx, s, ch, thread, r.replies)
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.rememberReplies(ref, key)
	return nil
}

// Ephemeral implements chatmodel.Chat with chat.postEphemeral (in the thread when
// the Conversation has one). Ephemeral messages cannot have replies, so what
// does not fit follows as further ephemeral messages. Where the bot cannot
// post (a private channel or a DM it is not in), the answer goes through the
// response_url of the user's last slash command in that channel, which
// Slack accepts there (#22.3).
func (a *Adapter) Ephemeral(ctx context.Context, to chatmodel.Conversation, user chatmodel.User, m chatmodel.Message) error {
	if user.ID == "" {
		return fmt.Errorf("%w: ephemeral message without a user", ErrInvalidMessage)
	}
	r, err := render(m)
	if err != nil {
		return err
	}
	ch, err := a.dir.channelID(ctx, to.Channel)
	if err != nil {
		return err
	}
	sent := 0
	err = a.lanes.with(ctx, ch, func(s *laneSession) error {
		for _, msg := range r.flatten() {
			opts := msgOptions(msg)
			if to.Thread != "" {
				opts = append(opts, slackapi.MsgOptionTS(to.Thread))
			}
			err := a.joiningIfNeeded(ctx, ch, func() error {
				return s.call(ctx, "chat.postEphemeral", retryRateLimitOnly, func(ctx context.Context) error {
					_, err := a.api.PostEphemeralContext(ctx, ch, user.ID, opts...)
					return err
				})
			})
			if err != nil {
				return fmt.Errorf("posting ephemeral message to %s in %s: %w", user.ID, ch, err)
			}
			sent++
		}
		return nil
	})
	if err == nil || !notPostable(err) {
		return err
	}
	used, rerr := a.respond(ctx, ch, user.ID, r.flatten()[sent:])
	switch {
	case !used:
		return err
	case rerr != nil:
		return fmt.Errorf("%w; %w", err, rerr)
	}
	a.log.Info("slack: answered through the command's response_url: the bot cannot post in the channel", "channel", ch, "user", user.ID)
	return nil
}

// notPostable reports whether chat.postEphemeral failed because the bot may
// not post in the channel (not a member, cannot see it, cannot join it).
func notPostable(err error) bool {
	return cannotPost(err) || slackErrorCode(err) == "method_not_supported_for_channel_type"
}

func msgOptions(m slackMsg) []slackapi.MsgOption {
	return []slackapi.MsgOption{
		slackapi.MsgOptionText(m.text, false),
		slackapi.MsgOptionBlocks(m.blocks...),
	}
}

func refKey(ref chatmodel.MessageRef) string { return ref.Channel + "/" + ref.ID }

// maxRemembered bounds the replies memory; past it the memory starts over,
// at worst posting one Detail a second time.
const maxRemembered = 10000

func (a *Adapter) rememberReplies(ref chatmodel.MessageRef, key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if key == "" {
		delete(a.replies, refKey(ref))
		return
	}
	if len(a.replies) >= maxRemembered {
		a.replies = map[string]string{}
	}
	a.replies[refKey(ref)] = key
}

func (a *Adapter) lastReplies(ref chatmodel.MessageRef) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.replies[refKey(ref)]
}

// GroupMembers implements chatmodel.GroupResolver with Slack usergroups: group is
// a handle ("ci-oncall", "@ci-oncall", "group:ci-oncall") or an id (S…).
// Unknown handles wrap chatmodel.ErrNotFound.
func (a *Adapter) GroupMembers(ctx context.Context, group string) ([]string, error) {
	return a.dir.groupMembers(ctx, group)
}

// ReadThread implements chatmodel.ThreadReader with conversations.replies: the
// root message and its replies, oldest first, with user names resolved.
func (a *Adapter) ReadThread(ctx context.Context, c chatmodel.Conversation) ([]chatmodel.ThreadMessage, error) {
	if c.Thread == "" {
		return nil, fmt.Errorf("%w: reading a thread without a thread id", ErrInvalidMessage)
	}
	ch, err := a.dir.channelID(ctx, c.Channel)
	if err != nil {
		return nil, err
	}
	var msgs []slackapi.Message
	cursor := ""
	for {
		var page []slackapi.Message
		var more bool
		var next string
		err := a.retry.do(ctx, "conversations.replies", retryTransient, func(ctx context.Context) error {
			var err error
			page, more, next, err = a.api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
				ChannelID: ch, Timestamp: c.Thread, Cursor: cursor, Limit: 200,
			})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("reading slack thread %s in %s: %w", c.Thread, ch, err)
		}
		msgs = append(msgs, page...)
		if !more || next == "" {
			break
		}
		cursor = next
	}
	self := a.selfID()
	out := make([]chatmodel.ThreadMessage, 0, len(msgs))
	for _, m := range msgs {
		tm := chatmodel.ThreadMessage{
			Time:   tsTime(m.Timestamp),
			Author: chatmodel.User{ID: m.User},
			Text:   messageText(m),
			Bot:    m.BotID != "" || m.SubType == "bot_message" || (self != "" && m.User == self),
		}
		switch {
		case m.User != "":
			if u, err := a.dir.user(ctx, m.User); err == nil {
				tm.Author.Name = u.Name
			} else if errors.Is(err, context.Canceled) {
				return nil, err
			}
		case m.BotID != "":
			tm.Author = chatmodel.User{ID: m.BotID, Name: m.Username}
		}
		out = append(out, tm)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}

// messageText is a message's text for summaries: the text of its section and
// context blocks when it has some (the top-level text of our own messages is
// only the notification fallback), else its text, unescaped.
func messageText(m slackapi.Message) string {
	var parts []string
	for _, b := range m.Blocks.BlockSet {
		switch b := b.(type) {
		case *slackapi.SectionBlock:
			if b.Text != nil {
				parts = append(parts, b.Text.Text)
			}
		case *slackapi.ContextBlock:
			for _, e := range b.ContextElements.Elements {
				if t, ok := e.(*slackapi.TextBlockObject); ok {
					parts = append(parts, t.Text)
				}
			}
		}
	}
	if len(parts) == 0 {
		return unescaper.Replace(m.Text)
	}
	return unescaper.Replace(strings.Join(parts, "\n"))
}

// tsTime converts a Slack ts ("1795979057.000200") to a time.
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	var ns int64
	if frac != "" {
		frac = (frac + "000000000")[:9]
		ns, _ = strconv.ParseInt(frac, 10, 64)
	}
	return time.Unix(s, ns).UTC()
}

// uploadFiles shares files in the channel (or thread) of a message just
// posted, with Slack's external upload (files.getUploadURLExternal, the
// upload, files.completeUploadExternal: slack-go's UploadFileContext). A
// file is extra: the message is already posted, so a failed upload is
// logged and the post still succeeds (posting again would duplicate it).
func (a *Adapter) uploadFiles(ctx context.Context, ch, thread string, files []chatmodel.File) {
	for _, f := range files {
		err := a.retry.do(ctx, "files.upload", retryRateLimitOnly, func(ctx context.Context) error {
			_, err := a.api.UploadFileContext(ctx, slackapi.UploadFileParameters{
				Filename: f.Name, FileSize: len(f.Data), Reader: bytes.NewReader(f.Data), Title: f.Alt, AltTxt: f.Alt,
				Channel: ch, ThreadTimestamp: thread,
			})
			return err
		})
		if err != nil {
			a.log.Warn("slack: file not uploaded; the message was posted without it (needs the files:write scope)", "channel", ch, "file", f.Name, "err", err)
		}
	}
}
