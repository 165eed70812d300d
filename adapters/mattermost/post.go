package mattermost

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// errIDRootID is Mattermost's error for a RootId that is not a root post.
const errIDRootID = "api.post.create_post.root_id.app_error"

// Post implements chatmodel.Chat. The message is posted by the bot account; with
// to.Thread it is a reply in that thread (a reply's id is mapped to its
// root). It is one write, buttons included: a new post's buttons are
// signed for its channel (its id is the server's to choose); an edit signs
// them for the post. m.PostKey is sent as Mattermost's pending_post_id:
// the same post sent again (its first try timed out on a server that took
// it) within 30 s of the server taking the first is not posted twice.
// Content over Mattermost's size limit goes to extra replies in the
// thread. Broadcast replies are announced in the channel with a short
// post linking the thread.
func (a *Adapter) Post(ctx context.Context, to chatmodel.Conversation, m chatmodel.Message) (chatmodel.MessageRef, error) {
	channel, err := a.channelID(ctx, to.Channel)
	if err != nil {
		return chatmodel.MessageRef{}, err
	}
	if len(m.Mentions) > 0 {
		m.Text = a.mentions(ctx, m.Mentions) + m.Text
	}
	r := render(m, false)
	post := &model.Post{ChannelId: channel, RootId: to.Thread, Message: r.message, FileIds: a.uploadFiles(ctx, channel, m.Files),
		PendingPostId: pendingPostID(m.PostKey)}
	if atts := a.attachments(r, m.Buttons, channelScope(channel), to.Thread); atts != nil {
		post.AddProp(model.PostPropsAttachments, atts)
	}
	created, err := a.createPost(ctx, post)
	if err != nil {
		return chatmodel.MessageRef{}, err
	}
	ref := chatmodel.MessageRef{Platform: Platform, Channel: channel, ID: created.Id, Thread: created.RootId}
	a.watches.add(ref, a.now(), true)
	root := created.RootId
	if root == "" {
		root = created.Id
	}
	for i, part := range r.overflow {
		if _, err := a.createPost(ctx, &model.Post{ChannelId: channel, RootId: root, Message: part, PendingPostId: pendingPostID(partKey(m.PostKey, fmt.Sprint("part", i+1)))}); err != nil {
			a.log.Error("could not post the rest of a long message", "post", ref.ID, "part", i+1, "of", len(r.overflow), "err", err)
			break
		}
	}
	if m.Broadcast && created.RootId != "" {
		link := fmt.Sprintf("%s · [open thread](%s)", firstLine(r.message), a.permalink(created.Id))
		if _, err := a.createPost(ctx, &model.Post{ChannelId: channel, Message: link, PendingPostId: pendingPostID(partKey(m.PostKey, "broadcast"))}); err != nil {
			a.log.Error("could not announce a thread reply in the channel", "post", ref.ID, "err", err)
		}
	}
	return ref, nil
}

// Update implements chatmodel.Chat by patching the post in place (message and
// attachments; buttons are re-signed). Content over the size limit is
// truncated with a note, since an update cannot add replies.
func (a *Adapter) Update(ctx context.Context, ref chatmodel.MessageRef, m chatmodel.Message) error {
	if ref.ID == "" {
		return fmt.Errorf("updating mattermost post: empty message reference")
	}
	return a.patch(ctx, ref, render(m, true), m.Buttons)
}

func (a *Adapter) patch(ctx context.Context, ref chatmodel.MessageRef, r rendered, buttons []chatmodel.Button) error {
	props := postProps(a.attachments(r, buttons, ref.ID, ref.Thread))
	patch := &model.PostPatch{Message: &r.message, Props: &props}
	return a.queue.do(ctx, ref.Channel, a.retry.channelSpace, func() error {
		return a.call(ctx, "updating post "+ref.ID, true, func(ctx context.Context) (*model.Response, error) {
			_, resp, err := a.client.PatchPost(ctx, ref.ID, patch)
			return resp, err
		})
	})
}

// Ephemeral implements chatmodel.Chat. During a slash command or button callback
// the text goes into the HTTP answer (a real ephemeral message). Otherwise
// it is posted with CreatePostEphemeral, which Mattermost allows only to
// accounts with the create_post_ephemeral permission (system admins); for a
// plain bot the adapter falls back to a normal post in the thread that
// mentions the user, and tries the API again after ephemeralRecheck. The
// same stand-in (same user, thread and text) is posted once within
// fallbackTTL: a refusal of ✅ and 👍 by one person is one post (#22.4).
func (a *Adapter) Ephemeral(ctx context.Context, to chatmodel.Conversation, user chatmodel.User, m chatmodel.Message) error {
	channel, err := a.channelID(ctx, to.Channel)
	if err != nil {
		return err
	}
	r := render(m, true)
	text := r.message
	if r.detail != "" {
		text += "\n" + r.detail
	}
	if a.interactions.capture(user.ID, channel, to.Thread, text, m.Buttons) {
		return nil
	}
	a.mu.Lock()
	forbidden := a.now().Before(a.noEphemeral)
	a.mu.Unlock()
	if !forbidden {
		err := a.queue.do(ctx, channel, a.retry.channelSpace, func() error {
			return a.call(ctx, "posting ephemeral message", false, func(ctx context.Context) (*model.Response, error) {
				_, resp, err := a.client.CreatePostEphemeral(ctx, &model.PostEphemeral{
					UserID: user.ID,
					Post:   a.ephemeralPost(channel, to.Thread, user.ID, text, m.Buttons),
				})
				return resp, err
			})
		})
		if err == nil {
			return nil
		}
		if statusOf(err) != http.StatusForbidden {
			return err
		}
		a.log.Info("the bot may not post ephemeral messages (needs create_post_ephemeral); mentioning users in the thread instead", "retry_in", a.ephemeralRecheck)
		a.mu.Lock()
		a.noEphemeral = a.now().Add(a.ephemeralRecheck)
		a.mu.Unlock()
	}
	key := channel + "\x00" + to.Thread + "\x00" + user.ID + "\x00" + text
	if !a.claimFallback(key) {
		a.log.Debug("not repeating a public stand-in for an ephemeral message", "channel", channel, "thread", to.Thread, "user", user.ID)
		return nil
	}
	name := user.Name
	if name == "" {
		name = a.userName(ctx, user.ID)
	}
	mention := "@" + name
	if name == "" {
		mention = "@" + user.ID
	}
	fallback := m
	fallback.Text = mention + " " + m.Text
	_, err = a.Post(ctx, chatmodel.Conversation{Platform: Platform, Channel: channel, Thread: to.Thread}, fallback)
	if err != nil {
		a.releaseFallback(key)
	}
	return err
}

// fallbackTTL is how long the same public stand-in for an ephemeral
// message is not posted again (an approval request's default lifetime);
// maxFallbacks bounds that memory.
const (
	fallbackTTL  = 30 * time.Minute
	maxFallbacks = 10000
)

// claimFallback reports whether the public stand-in with key may be posted
// now (it was not within fallbackTTL), and records it.
func (a *Adapter) claimFallback(key string) bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if at, ok := a.fallbackSent[key]; ok && now.Sub(at) < fallbackTTL {
		return false
	}
	if len(a.fallbackSent) >= maxFallbacks {
		for k, at := range a.fallbackSent {
			if now.Sub(at) >= fallbackTTL {
				delete(a.fallbackSent, k)
			}
		}
		if len(a.fallbackSent) >= maxFallbacks {
			a.fallbackSent = map[string]time.Time{}
		}
	}
	a.fallbackSent[key] = now
	return true
}

// releaseFallback forgets a stand-in whose post failed, so a retry posts it.
func (a *Adapter) releaseFallback(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.fallbackSent, key)
}

// pendingPostID is the pending_post_id of a post with key: Mattermost
// keeps it 30 s, and a second create with it returns the first post.
// Mattermost's own clients send "<user id>:<ms>"; any string up to the
// field's size is taken.
func pendingPostID(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte("groundcrew/post/" + key))
	return "gc:" + hex.EncodeToString(sum[:16])
}

// partKey is the key of an extra post of the post with key ("" for none).
func partKey(key, part string) string {
	if key == "" {
		return ""
	}
	return key + "/" + part
}

// createPost creates a post through the channel's queue. A RootId that
// turns out to be a reply is replaced by that reply's root, once.
func (a *Adapter) createPost(ctx context.Context, post *model.Post) (*model.Post, error) {
	var created *model.Post
	send := func() error {
		return a.queue.do(ctx, post.ChannelId, a.retry.channelSpace, func() error {
			return a.call(ctx, "posting in channel "+post.ChannelId, false, func(ctx context.Context) (*model.Response, error) {
				var resp *model.Response
				var err error
				created, resp, err = a.client.CreatePost(ctx, post)
				return resp, err
			})
		})
	}
	err := send()
	if err != nil && post.RootId != "" && errorID(err) == errIDRootID {
		root, rerr := a.rootOf(ctx, post.RootId)
		if rerr == nil && root != post.RootId {
			post.RootId = root
			err = send()
		}
	}
	if err != nil {
		var ae *APIError
		if errors.As(err, &ae) && cannotPost(ae.StatusCode) {
			return nil, fmt.Errorf("%w (%w)", err, chatmodel.ErrCannotPost)
		}
		return nil, err
	}
	return created, nil
}

// cannotPost reports whether Mattermost's answer to creating a post means
// the same post can never be created: no permission or no channel (403,
// 404), or a post the server refuses as it is (400: an invalid RootId, a
// bad property; 413: too large). The outbox gives such a post up, loudly,
// instead of holding its thread behind it for every retry. A 401 (the
// token), a 429 and a 5xx are not: they pass.
func cannotPost(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		return true
	}
	return false
}

// CanPost implements chatmodel.PostChecker: the bot must be a member of the
// channel. Otherwise the run is refused with how to add it.
func (a *Adapter) CanPost(ctx context.Context, to chatmodel.Conversation) error {
	channel, err := a.channelID(ctx, to.Channel)
	if err != nil {
		return err
	}
	err = a.call(ctx, "checking the bot is in channel "+channel, true, func(ctx context.Context) (*model.Response, error) {
		_, resp, err := a.client.GetChannelMember(ctx, channel, a.BotUserID(), "")
		return resp, err
	})
	var ae *APIError
	if errors.As(err, &ae) && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusForbidden) {
		return &chatmodel.UserError{Msg: "⛔ I cannot post in this channel: I am not a member. Add me with `/invite @" + a.botName() + "` (or `mmctl channel users add <team>:<channel> " + a.botName() + "`), then run the command again."}
	}
	return err
}

// rootOf returns the root post id of the thread postID belongs to.
func (a *Adapter) rootOf(ctx context.Context, postID string) (string, error) {
	var p *model.Post
	err := a.call(ctx, "reading post "+postID, true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		p, resp, err = a.client.GetPost(ctx, postID, "")
		return resp, err
	})
	if err != nil {
		return "", err
	}
	if p.RootId != "" {
		return p.RootId, nil
	}
	return p.Id, nil
}

// ChannelID implements chatmodel.ChannelResolver: "#name" (the channel's
// URL name in the configured team) to its id, an id as it is; a channel
// the server does not have (or the bot cannot see) wraps
// chatmodel.ErrNotFound.
func (a *Adapter) ChannelID(ctx context.Context, nameOrID string) (string, error) {
	id, err := a.channelID(ctx, nameOrID)
	var ae *APIError
	if errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound {
		return "", fmt.Errorf("mattermost channel %s: %w", nameOrID, chatmodel.ErrNotFound)
	}
	return id, err
}

// channelID resolves "#name" (the channel's URL name in the configured
// team) to a channel id; anything else is taken as an id.
func (a *Adapter) channelID(ctx context.Context, ch string) (string, error) {
	name, ok := strings.CutPrefix(ch, "#")
	if !ok {
		if ch == "" {
			return "", fmt.Errorf("posting to mattermost: no channel given")
		}
		return ch, nil
	}
	a.mu.Lock()
	id, cached := a.channelIDs[name]
	a.mu.Unlock()
	if cached {
		return id, nil
	}
	if a.cfg.team == "" {
		return "", fmt.Errorf("resolving channel %s: chat.mattermost.team must be set to use channel names", ch)
	}
	// The team is looked up at start; when the server did not answer then
	// (it hangs, or is down), it is looked up now, and that error is said.
	teamID, err := a.team(ctx)
	if err != nil {
		return "", fmt.Errorf("resolving channel %s: %w", ch, err)
	}
	var c *model.Channel
	err = a.call(ctx, "looking up channel "+ch, true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		c, resp, err = a.client.GetChannelByName(ctx, name, teamID, "")
		return resp, err
	})
	switch s := statusOf(err); {
	case err == nil:
	case s == http.StatusNotFound || s == http.StatusForbidden:
		return "", fmt.Errorf("resolving channel %s in team %s (use the channel's URL name and add the bot to it): %w", ch, a.cfg.team, err)
	default:
		return "", fmt.Errorf("resolving channel %s in team %s: %w", ch, a.cfg.team, err)
	}
	a.mu.Lock()
	a.channelIDs[name] = c.Id
	a.mu.Unlock()
	return c.Id, nil
}

// permalink returns a link to a post, on the server's SiteURL when known.
func (a *Adapter) permalink(postID string) string {
	a.mu.Lock()
	base := a.siteURL
	a.mu.Unlock()
	if base == "" {
		base = a.cfg.url
	}
	if a.cfg.team != "" {
		return fmt.Sprintf("%s/%s/pl/%s", base, a.cfg.team, postID)
	}
	return fmt.Sprintf("%s/_redirect/pl/%s", base, postID)
}

// mentions renders user ids as @username mentions (which notify), followed
// by a space; ids that do not name a user are left out.
func (a *Adapter) mentions(ctx context.Context, ids []string) string {
	us, err := a.lookupUsers(ctx, ids)
	if err != nil {
		a.log.Warn("could not look up the users to mention", "err", err)
		return ""
	}
	var b strings.Builder
	for _, id := range ids {
		if u, ok := us[id]; ok && u.name != "" && !u.deleted {
			b.WriteString("@" + u.name + " ")
		}
	}
	return b.String()
}

// uploadFiles uploads files to channel (POST /files) for a post to attach
// and returns their ids. A file is extra: one that cannot be uploaded is
// logged and the message is posted without it.
func (a *Adapter) uploadFiles(ctx context.Context, channel string, files []chatmodel.File) model.StringArray {
	var ids model.StringArray
	for _, f := range files {
		if len(ids) == 10 { // a post holds at most 10 files
			break
		}
		var up *model.FileUploadResponse
		err := a.call(ctx, "uploading file "+f.Name, false, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			up, resp, err = a.client.UploadFile(ctx, f.Data, channel, f.Name)
			return resp, err
		})
		if err != nil || up == nil || len(up.FileInfos) == 0 {
			a.log.Warn("mattermost: file not uploaded; the message is posted without it", "channel", channel, "file", f.Name, "err", err)
			continue
		}
		ids = append(ids, up.FileInfos[0].Id)
	}
	return ids
}
