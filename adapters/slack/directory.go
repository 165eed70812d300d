package slack

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"golang.org/x/sync/singleflight"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

const (
	userNameTTL = time.Hour
	channelTTL  = 10 * time.Minute
	// channelMissRefresh bounds how often an unknown channel name triggers a
	// new conversations.list.
	channelMissRefresh = time.Minute
)

// usergroupID matches a Slack usergroup id (S…), accepted instead of a handle.
var usergroupID = regexp.MustCompile(`^S[A-Z0-9]{6,}$`)

// directory caches the names and ids the adapter looks up: channel names,
// user names, usergroup handles and members. It is safe for concurrent use;
// concurrent misses for one key make one call (singleflight).
type directory struct {
	api   *slackapi.Client
	retry *retrier
	ttl   time.Duration // usergroups
	now   func() time.Time
	log   *slog.Logger
	sf    singleflight.Group

	mu            sync.Mutex
	channels      map[string]string // name (without #, lower case) -> id
	channelsAt    time.Time
	users         map[string]cached[chatmodel.User]
	emails        map[string]string // user id -> the e-mail the account signs in with (users:read.email), "" for none
	names         map[string]string // handle (lower case) -> user id
	namesAt       time.Time
	groupIDs      map[string]string // handle (lower case) -> id
	groupIDsAt    time.Time
	channelsTried time.Time
}

type cached[T any] struct {
	v  T
	at time.Time
}

func newDirectory(api *slackapi.Client, retry *retrier, ttl time.Duration, now func() time.Time, log *slog.Logger) *directory {
	return &directory{
		api: api, retry: retry, ttl: ttl, now: now, log: log,
		channels: map[string]string{},
		users:    map[string]cached[chatmodel.User]{},
		emails:   map[string]string{},
		names:    map[string]string{},
		groupIDs: map[string]string{},
	}
}

// channelID resolves "#name" to a channel id; anything else is returned as
// is (already an id).
func (d *directory) channelID(ctx context.Context, channel string) (string, error) {
	name, ok := strings.CutPrefix(strings.TrimSpace(channel), "#")
	if !ok {
		if channel == "" {
			return "", fmt.Errorf("%w: no channel given", ErrInvalidMessage)
		}
		return channel, nil
	}
	name = strings.ToLower(name)
	d.mu.Lock()
	id, found := d.channels[name]
	fresh := d.now().Sub(d.channelsAt) < channelTTL
	recentlyTried := d.now().Sub(d.channelsTried) < channelMissRefresh
	d.mu.Unlock()
	if found && fresh {
		return id, nil
	}
	if !found && recentlyTried && fresh {
		return "", fmt.Errorf("slack channel #%s: %w (invite the bot to it, or check the name)", name, chatmodel.ErrNotFound)
	}
	if _, err, _ := d.sf.Do("channels", func() (any, error) { return nil, d.loadChannels(ctx) }); err != nil {
		if found { // serve the stale id rather than fail a post
			d.log.Warn("slack: refreshing channel list failed, using cached id", "channel", name, "err", err)
			return id, nil
		}
		return "", fmt.Errorf("resolving slack channel #%s: %w", name, err)
	}
	d.mu.Lock()
	id, found = d.channels[name]
	d.mu.Unlock()
	if !found {
		return "", fmt.Errorf("slack channel #%s: %w (invite the bot to it, or check the name)", name, chatmodel.ErrNotFound)
	}
	return id, nil
}

func (d *directory) loadChannels(ctx context.Context) error {
	m := map[string]string{}
	cursor := ""
	for {
		var chans []slackapi.Channel
		var next string
		err := d.retry.do(ctx, "conversations.list", retryTransient, func(ctx context.Context) error {
			var err error
			chans, next, err = d.api.GetConversationsContext(ctx, &slackapi.GetConversationsParameters{
				Cursor: cursor, Limit: 1000, ExcludeArchived: true,
				Types: []string{"public_channel", "private_channel"},
			})
			return err
		})
		if err != nil {
			d.mu.Lock()
			d.channelsTried = d.now()
			d.mu.Unlock()
			return fmt.Errorf("listing channels: %w", err)
		}
		for _, c := range chans {
			m[strings.ToLower(c.Name)] = c.ID
		}
		if next == "" {
			break
		}
		cursor = next
	}
	d.mu.Lock()
	d.channels, d.channelsAt, d.channelsTried = m, d.now(), d.now()
	d.mu.Unlock()
	return nil
}

// slackUserID matches a Slack user id (U…, W… on Enterprise Grid).
var slackUserID = regexp.MustCompile(`^[UW][A-Z0-9]{4,}$`)

// user returns what Slack says of a user id, cached: the handle (the
// account's name, never the editable display name) and Kind: bots
// (including Slackbot), deactivated accounts, and ids Slack does not know.
func (d *directory) user(ctx context.Context, id string) (chatmodel.User, error) {
	fresh := chatmodel.WantsFresh(ctx)
	d.mu.Lock()
	c, ok := d.users[id]
	d.mu.Unlock()
	if ok && !fresh && d.now().Sub(c.at) < userNameTTL {
		return c.v, nil
	}
	v, err, _ := d.sf.Do("user:"+id, func() (any, error) {
		var u *slackapi.User
		err := d.retry.do(ctx, "users.info", retryTransient, func(ctx context.Context) error {
			var err error
			u, err = d.api.GetUserInfoContext(ctx, id, slackapi.GetUserInfoOptionIncludeLocale(false))
			return err
		})
		var out chatmodel.User
		switch {
		case err != nil && strings.Contains(err.Error(), "user_not_found"):
			out = chatmodel.User{ID: id, Kind: chatmodel.UserUnknown}
		case err != nil:
			return chatmodel.User{}, fmt.Errorf("looking up slack user %s: %w", id, err)
		default:
			out = userOf(u)
		}
		email := ""
		if u != nil && err == nil && !u.IsStranger {
			// A member's sign-in address (Slack confirms it); a Slack
			// Connect user's belongs to another organisation.
			email = u.Profile.Email
		}
		d.mu.Lock()
		d.users[id] = cached[chatmodel.User]{v: out, at: d.now()}
		d.emails[id] = email
		d.mu.Unlock()
		return out, nil
	})
	if err != nil {
		if ok && !fresh {
			return c.v, nil
		}
		return chatmodel.User{}, err
	}
	return v.(chatmodel.User), nil
}

// userRefetchInterval bounds how often refetchUser asks Slack again for one
// id, so payloads with a wrong name cannot make a users.info call each.
const userRefetchInterval = time.Minute

// refetchUser is user with a cached answer older than userRefetchInterval
// dropped first: a user renamed since it was cached gets their new name.
func (d *directory) refetchUser(ctx context.Context, id string) (chatmodel.User, error) {
	d.mu.Lock()
	c, ok := d.users[id]
	if ok && d.now().Sub(c.at) < userRefetchInterval {
		d.mu.Unlock()
		return c.v, nil
	}
	delete(d.users, id)
	d.mu.Unlock()
	u, err := d.user(ctx, id)
	if err != nil && ok {
		d.mu.Lock()
		if _, again := d.users[id]; !again {
			d.users[id] = c
		}
		d.mu.Unlock()
		return c.v, err
	}
	return u, err
}

func userOf(u *slackapi.User) chatmodel.User {
	out := chatmodel.User{ID: u.ID, Name: u.Name}
	switch {
	case u.IsBot || u.ID == "USLACKBOT" || u.IsAppUser:
		out.Kind = chatmodel.UserBot
	case u.Deleted:
		out.Kind = chatmodel.UserDeactivated
	}
	return out
}

// userByName finds a user by handle (users.list, cached for the group
// TTL; Slack has no lookup by name). It wraps chatmodel.ErrNotFound.
func (d *directory) userByName(ctx context.Context, name string) (chatmodel.User, error) {
	key := strings.ToLower(name)
	d.mu.Lock()
	id, ok := d.names[key]
	fresh := d.now().Sub(d.namesAt) < d.ttl && !chatmodel.WantsFresh(ctx)
	d.mu.Unlock()
	if !ok || !fresh {
		_, err, _ := d.sf.Do("users.list", func() (any, error) {
			var all []slackapi.User
			err := d.retry.do(ctx, "users.list", retryTransient, func(ctx context.Context) error {
				var err error
				all, err = d.api.GetUsersContext(ctx)
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("listing slack users%s: %w", scopeHint(err), err)
			}
			names := make(map[string]string, len(all))
			d.mu.Lock()
			for i := range all {
				names[strings.ToLower(all[i].Name)] = all[i].ID
				d.users[all[i].ID] = cached[chatmodel.User]{v: userOf(&all[i]), at: d.now()}
			}
			d.names, d.namesAt = names, d.now()
			d.mu.Unlock()
			return nil, nil
		})
		if err != nil {
			return chatmodel.User{}, err
		}
		d.mu.Lock()
		id, ok = d.names[key]
		d.mu.Unlock()
	}
	if !ok {
		d.mu.Lock()
		known := make([]string, 0, len(d.names))
		for n := range d.names {
			known = append(known, n)
		}
		d.mu.Unlock()
		sort.Strings(known)
		return chatmodel.User{}, chatutil.NotFound("slack user", name, known)
	}
	return d.user(ctx, id)
}

// groupMembers returns the user ids of a usergroup given by handle
// ("ci-oncall", "@ci-oncall", "group:ci-oncall") or id ("S0123ABCD"), cached
// for the configured TTL. When Slack cannot be reached a stale list (up to a
// day old) is served, with a warning.
func (d *directory) groupMembers(ctx context.Context, group string) ([]string, error) {
	handle := strings.TrimSpace(group)
	handle = strings.TrimPrefix(handle, "group:")
	handle = strings.TrimPrefix(handle, "@")
	if handle == "" {
		return nil, fmt.Errorf("slack usergroup %q: %w", group, chatmodel.ErrNotFound)
	}
	id := handle
	if !usergroupID.MatchString(handle) {
		var err error
		if id, err = d.groupID(ctx, strings.ToLower(handle)); err != nil {
			return nil, err
		}
	}
	// Members are not cached here: the engine's directory is the one group
	// cache (with its stale fallback when Slack cannot be reached).
	v, err, _ := d.sf.Do("members:"+id, func() (any, error) {
		var ids []string
		err := d.retry.do(ctx, "usergroups.users.list", retryTransient, func(ctx context.Context) error {
			var err error
			ids, err = d.api.GetUserGroupMembersContext(ctx, id)
			return err
		})
		return ids, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing members of slack usergroup @%s: %w%s", handle, err, scopeHint(err))
	}
	return append([]string(nil), v.([]string)...), nil
}

// groupID maps a usergroup handle to its id with usergroups.list, cached.
func (d *directory) groupID(ctx context.Context, handle string) (string, error) {
	d.mu.Lock()
	id, ok := d.groupIDs[handle]
	mustAsk := chatmodel.WantsFresh(ctx)
	fresh := d.now().Sub(d.groupIDsAt) < d.ttl && !mustAsk
	d.mu.Unlock()
	if ok && fresh {
		return id, nil
	}
	_, err, _ := d.sf.Do("usergroups", func() (any, error) {
		var groups []slackapi.UserGroup
		err := d.retry.do(ctx, "usergroups.list", retryTransient, func(ctx context.Context) error {
			var err error
			groups, err = d.api.GetUserGroupsContext(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		m := make(map[string]string, len(groups))
		for _, g := range groups {
			m[strings.ToLower(g.Handle)] = g.ID
		}
		d.mu.Lock()
		d.groupIDs, d.groupIDsAt = m, d.now()
		d.mu.Unlock()
		return nil, nil
	})
	if err != nil {
		if ok && !mustAsk {
			d.log.Warn("slack: usergroups refresh failed, using cached id", "group", handle, "err", err)
			return id, nil
		}
		return "", fmt.Errorf("listing slack usergroups: %w%s", err, scopeHint(err))
	}
	d.mu.Lock()
	id, ok = d.groupIDs[handle]
	known := make([]string, 0, len(d.groupIDs))
	for h := range d.groupIDs {
		known = append(known, h)
	}
	d.mu.Unlock()
	if !ok {
		sort.Strings(known)
		nf := chatutil.NotFound("slack usergroup", handle, known)
		nf.Mention = true
		return "", nf
	}
	return id, nil
}

// scopeHint adds the fix for the Slack errors an operator can fix.
func scopeHint(err error) string {
	switch slackErrorCode(err) {
	case "missing_scope":
		return " (add the usergroups:read scope to the Slack app and reinstall it)"
	case "plan_upgrade_required":
		return " (usergroups need a paid Slack plan: list approvers by user instead)"
	}
	return ""
}

// email returns the e-mail of a user id (read with the user, cached as
// it is; "" without the users:read.email scope).
func (d *directory) email(ctx context.Context, id string) (string, error) {
	if _, err := d.user(ctx, id); err != nil {
		return "", err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.emails[id], nil
}
