package mattermost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// ErrUnknownGroup is wrapped by GroupMembers when a name matches no role,
// user group or private channel. That error also wraps chatmodel.ErrNotFound
// (`config check` fails on it; the engine counts no members) and, when a
// known name is close, says it (DidYouMean).
var ErrUnknownGroup = errors.New("unknown mattermost group")

// UnknownGroupError is the error of GroupMembers for a name that matches
// nothing.
type UnknownGroupError struct {
	Name       string
	Team       string // chat.mattermost.team
	Suggestion string // the closest known name, or ""
}

func (e *UnknownGroupError) Error() string {
	msg := fmt.Sprintf("%v: %q is not system_admin, team_admin, a user group or a private channel of team %q the bot is in", ErrUnknownGroup, e.Name, e.Team)
	if e.Suggestion != "" {
		msg += fmt.Sprintf("; did you mean %q?", e.Suggestion)
	}
	return msg
}

// Unwrap makes errors.Is find ErrUnknownGroup and chatmodel.ErrNotFound.
func (e *UnknownGroupError) Unwrap() []error { return []error{ErrUnknownGroup, chatmodel.ErrNotFound} }

// DidYouMean is the closest known group name, or "".
func (e *UnknownGroupError) DidYouMean() string { return e.Suggestion }

// Role names GroupMembers resolves to the holders of a role.
const (
	GroupSystemAdmin = "system_admin"
	GroupTeamAdmin   = "team_admin"
)

// GroupMembers implements chatmodel.GroupResolver. A group name ("ci-oncall",
// "group:ci-oncall" or "@ci-oncall") resolves, in this order, to:
//   - system_admin: the active system admins;
//   - team_admin: the admins of the configured team;
//   - a Mattermost user group with that name (needs a licensed server);
//   - the members of the private channel with that URL name in the
//     configured team, which the bot must belong to (a stand-in for groups
//     on servers without the licence; public channels are never used, as
//     anyone can join them).
//
// Bots and deactivated users are left out. Results are not cached here:
// the engine's directory is the one group cache.
func (a *Adapter) GroupMembers(ctx context.Context, group string) ([]string, error) {
	name := strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(group), "group:"), "@")
	if name == "" {
		return nil, fmt.Errorf("%w: empty group name", ErrUnknownGroup)
	}
	members, err := a.resolveGroup(ctx, name)
	if err != nil {
		return nil, err
	}
	members, err = a.onlyActiveHumans(ctx, members)
	if err != nil {
		return nil, fmt.Errorf("checking the members of group %q: %w", name, err)
	}
	slices.Sort(members)
	members = slices.Compact(members)
	return members, nil
}

func (a *Adapter) resolveGroup(ctx context.Context, name string) ([]string, error) {
	if name == GroupSystemAdmin {
		return a.pagedUsers(ctx, "listing system admins", "role=system_admin&active=true")
	}
	teamID, err := a.team(ctx)
	if err != nil {
		return nil, err
	}
	switch name {
	case GroupTeamAdmin:
		if teamID == "" {
			return nil, fmt.Errorf("resolving group team_admin: chat.mattermost.team is not set")
		}
		return a.teamAdmins(ctx, teamID)
	}
	ids, found, err := a.userGroup(ctx, name)
	if err != nil || found {
		return ids, err
	}
	if teamID != "" {
		ids, found, err = a.privateChannelMembers(ctx, teamID, name)
		if err != nil || found {
			return ids, err
		}
	}
	return nil, &UnknownGroupError{Name: name, Team: a.cfg.team, Suggestion: textmodel.Suggest(name, a.groupNames(ctx, teamID))}
}

// team returns the id of chat.mattermost.team ("" when not set), looking
// it up when Run has not yet (`config check`, the check at serve start).
func (a *Adapter) team(ctx context.Context) (string, error) {
	a.mu.Lock()
	teamID := a.teamID
	a.mu.Unlock()
	if teamID != "" || a.cfg.team == "" {
		return teamID, nil
	}
	var team *model.Team
	err := a.call(ctx, fmt.Sprintf("looking up team %q", a.cfg.team), true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		team, resp, err = a.client.GetTeamByName(ctx, a.cfg.team, "")
		return resp, err
	})
	if err != nil {
		if s := statusOf(err); s == http.StatusNotFound || s == http.StatusForbidden {
			return "", fmt.Errorf("chat.mattermost.team: team %q not found or the bot is not a member: %w", a.cfg.team, err)
		}
		return "", err
	}
	a.mu.Lock()
	a.teamID = team.Id
	a.mu.Unlock()
	return team.Id, nil
}

// groupNames lists the names a group may have, for did-you-mean: the
// roles, the user groups (licensed servers) and the private channels of
// the team the bot is in. Best effort: what cannot be listed is left out.
func (a *Adapter) groupNames(ctx context.Context, teamID string) []string {
	names := []string{GroupSystemAdmin, GroupTeamAdmin}
	var groups []*model.Group
	if a.call(ctx, "listing user groups", true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		groups, resp, err = a.client.GetGroups(ctx, model.GroupSearchOpts{PageOpts: &model.PageOpts{PerPage: 200}})
		return resp, err
	}) == nil {
		for _, g := range groups {
			if g.Name != nil && g.DeleteAt == 0 {
				names = append(names, *g.Name)
			}
		}
	}
	if teamID == "" {
		return names
	}
	var chans []*model.Channel
	if a.call(ctx, "listing the bot's channels", true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		chans, resp, err = a.client.GetChannelsForTeamForUser(ctx, teamID, "me", false, "")
		return resp, err
	}) == nil {
		for _, c := range chans {
			if c.Type == model.ChannelTypePrivate {
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// userGroup resolves a Mattermost user group. found is false when there is
// no such group or the server has no licence for groups.
func (a *Adapter) userGroup(ctx context.Context, name string) ([]string, bool, error) {
	var groups []*model.Group
	err := a.call(ctx, "looking up user group "+name, true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		groups, resp, err = a.client.GetGroupsByNames(ctx, []string{name})
		return resp, err
	})
	if err != nil {
		switch statusOf(err) {
		case http.StatusNotImplemented, http.StatusForbidden, http.StatusNotFound:
			return nil, false, nil // no licence, or not allowed: try the next kind
		}
		return nil, false, err
	}
	var g *model.Group
	for _, c := range groups {
		if c.Name != nil && *c.Name == name && c.DeleteAt == 0 {
			g = c
		}
	}
	if g == nil {
		return nil, false, nil
	}
	// Client4.GetGroupMembers reads only the first page (60 members).
	var ids []string
	for page := 0; ; page++ {
		var list model.GroupMemberList
		err = a.call(ctx, "listing members of user group "+name, true, func(ctx context.Context) (*model.Response, error) {
			r, err := a.client.DoAPIGet(ctx, fmt.Sprintf("/groups/%s/members?page=%d&per_page=200", g.Id, page), "")
			if err != nil {
				return model.BuildResponse(r), err
			}
			defer r.Body.Close()
			list = model.GroupMemberList{}
			return model.BuildResponse(r), json.NewDecoder(r.Body).Decode(&list)
		})
		if err != nil {
			return nil, true, err
		}
		for _, u := range list.Members {
			ids = append(ids, u.Id)
		}
		if len(list.Members) < 200 {
			return ids, true, nil
		}
	}
}

func (a *Adapter) privateChannelMembers(ctx context.Context, teamID, name string) ([]string, bool, error) {
	var ch *model.Channel
	err := a.call(ctx, "looking up channel "+name, true, func(ctx context.Context) (*model.Response, error) {
		var resp *model.Response
		var err error
		ch, resp, err = a.client.GetChannelByName(ctx, name, teamID, "")
		return resp, err
	})
	if err != nil {
		if s := statusOf(err); s == http.StatusNotFound || s == http.StatusForbidden {
			return nil, false, nil
		}
		return nil, false, err
	}
	if ch.Type != model.ChannelTypePrivate {
		return nil, false, nil
	}
	var ids []string
	for page := 0; ; page++ {
		var members model.ChannelMembers
		err := a.call(ctx, "listing members of channel "+name, true, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			members, resp, err = a.client.GetChannelMembers(ctx, ch.Id, page, 200, "")
			return resp, err
		})
		if err != nil {
			return nil, true, err
		}
		for _, m := range members {
			ids = append(ids, m.UserId)
		}
		if len(members) < 200 {
			return ids, true, nil
		}
	}
}

func (a *Adapter) teamAdmins(ctx context.Context, teamID string) ([]string, error) {
	var ids []string
	for page := 0; ; page++ {
		var members []*model.TeamMember
		err := a.call(ctx, "listing team members", true, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			members, resp, err = a.client.GetTeamMembers(ctx, teamID, page, 200, "")
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		for _, m := range members {
			if m.DeleteAt == 0 && (m.SchemeAdmin || slices.Contains(strings.Fields(m.Roles), model.TeamAdminRoleId)) {
				ids = append(ids, m.UserId)
			}
		}
		if len(members) < 200 {
			return ids, nil
		}
	}
}

func (a *Adapter) pagedUsers(ctx context.Context, op, query string) ([]string, error) {
	var ids []string
	for page := 0; ; page++ {
		var users []*model.User
		err := a.call(ctx, op, true, func(ctx context.Context) (*model.Response, error) {
			var resp *model.Response
			var err error
			users, resp, err = a.client.GetUsersWithCustomQueryParameters(ctx, page, 200, query, "")
			return resp, err
		})
		if err != nil {
			return nil, err
		}
		a.mu.Lock()
		for _, u := range users {
			a.users[u.Id] = userOf(u)
			ids = append(ids, u.Id)
		}
		a.mu.Unlock()
		if len(users) < 200 {
			return ids, nil
		}
	}
}

// onlyActiveHumans drops bots and deactivated accounts.
func (a *Adapter) onlyActiveHumans(ctx context.Context, ids []string) ([]string, error) {
	us, err := a.lookupUsers(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if u, ok := us[id]; ok && !u.bot && !u.deleted {
			out = append(out, id)
		}
	}
	return out, nil
}
