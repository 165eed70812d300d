package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/require"
)

const userPassword = "E2e-Passw0rd!x"

// mmUser is a logged-in human user.
type mmUser struct {
	*model.Client4
	User *model.User
}

// world is a bootstrapped Mattermost: an admin, three users (alice starts
// runs, carol and dave approve), team "ops", channel "ci-ops" and a bot
// account "groundcrew" (team admin, so it can register /runbook) with a
// token.
type world struct {
	Server   *mmServer
	Admin    *mmUser
	Users    map[string]*mmUser
	Team     *model.Team
	Channel  *model.Channel
	BotUser  *model.User
	BotToken string
}

func bootstrap(t *testing.T, srv *mmServer) *world {
	t.Helper()
	w := bootstrapPeople(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, _, err := w.Admin.CreateBot(ctx, &model.Bot{Username: "groundcrew", DisplayName: "groundcrew", Description: "runbook bot"})
	require.NoError(t, err, "creating the bot (EnableBotAccountCreation)")
	tok, _, err := w.Admin.CreateUserAccessToken(ctx, b.UserId, "e2e")
	require.NoError(t, err, "creating the bot token")
	w.BotToken = tok.Token
	_, _, err = w.Admin.AddTeamMember(ctx, w.Team.Id, b.UserId)
	require.NoError(t, err, "adding the bot to the team")
	_, err = w.Admin.UpdateTeamMemberSchemeRoles(ctx, w.Team.Id, b.UserId, &model.SchemeRoles{SchemeUser: true, SchemeAdmin: true})
	require.NoError(t, err, "making the bot team admin")
	_, _, err = w.Admin.AddChannelMember(ctx, w.Channel.Id, b.UserId)
	require.NoError(t, err, "adding the bot to the channel")
	w.BotUser, _, err = w.Admin.GetUser(ctx, b.UserId, "")
	require.NoError(t, err)
	return w
}

// bootstrapPeople is bootstrap without the bot: the admin, the users, the
// team and the channel.
func bootstrapPeople(t *testing.T, srv *mmServer) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := &world{Server: srv, Users: map[string]*mmUser{}}

	// The first user of an empty server becomes system admin.
	w.Admin = createUser(ctx, t, srv.URL, "admin")
	for _, name := range []string{"alice", "carol", "dave"} {
		w.Users[name] = createUser(ctx, t, srv.URL, name)
	}
	var err error
	w.Team, _, err = w.Admin.CreateTeam(ctx, &model.Team{Name: "ops", DisplayName: "Ops", Type: model.TeamOpen})
	require.NoError(t, err, "creating team")
	w.Channel, _, err = w.Admin.CreateChannel(ctx, &model.Channel{TeamId: w.Team.Id, Name: "ci-ops", DisplayName: "CI ops", Type: model.ChannelTypeOpen})
	require.NoError(t, err, "creating channel")
	for _, u := range w.Users {
		_, _, err = w.Admin.AddTeamMember(ctx, w.Team.Id, u.User.Id)
		require.NoError(t, err, "adding %s to the team", u.User.Username)
		_, _, err = w.Admin.AddChannelMember(ctx, w.Channel.Id, u.User.Id)
		require.NoError(t, err, "adding %s to the channel", u.User.Username)
	}
	return w
}

func createUser(ctx context.Context, t *testing.T, url, name string) *mmUser {
	t.Helper()
	c := model.NewAPIv4Client(url)
	u, _, err := c.CreateUser(ctx, &model.User{Username: name, Email: name + "@example.com", Password: userPassword})
	require.NoError(t, err, "creating user %s", name)
	_, _, err = c.Login(ctx, name, userPassword)
	require.NoError(t, err, "logging in as %s", name)
	return &mmUser{Client4: c, User: u}
}

// runCommand types a slash command as u in the channel, optionally inside
// a thread (Client4.ExecuteCommand cannot set root_id).
func (u *mmUser) runCommand(ctx context.Context, channelID, rootID, command string) (*model.CommandResponse, error) {
	body := map[string]string{"channel_id": channelID, "command": command, "root_id": rootID}
	r, err := u.DoAPIPostJSON(ctx, "/commands/execute", body)
	if err != nil {
		return nil, fmt.Errorf("running %q as %s: %w", command, u.User.Username, err)
	}
	defer r.Body.Close()
	return model.CommandResponseFromJSON(r.Body)
}

// threadPosts returns the posts of a thread, oldest first.
func threadPosts(ctx context.Context, c *model.Client4, rootID string) ([]*model.Post, error) {
	list, _, err := c.GetPostThread(ctx, rootID, "", false)
	if err != nil {
		return nil, err
	}
	list.SortByCreateAt()
	out := make([]*model.Post, 0, len(list.Order))
	for i := len(list.Order) - 1; i >= 0; i-- {
		out = append(out, list.Posts[list.Order[i]])
	}
	return out, nil
}
