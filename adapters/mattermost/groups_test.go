package mattermost

import (
	"context"
	"testing"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestGroupMembers(t *testing.T) {
	f := newFakeMM(t)
	f.channels["ci-ops-public"] = &model.Channel{Id: "publicchannel0000000000000", Name: "ci-ops-public", Type: model.ChannelTypeOpen}
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())

	tests := []struct {
		group   string
		want    []string
		wantErr error
	}{
		{group: "system_admin", want: []string{adminID}},
		{group: "group:team_admin", want: []string{adminID, carolID}}, // the bot is a team admin too, but a bot
		{group: "@ci-oncall", want: []string{aliceID, carolID}},       // private channel, bot left out
		{group: "ci-ops-public", wantErr: ErrUnknownGroup},            // public channels never count
		{group: "nope", wantErr: ErrUnknownGroup},
		{group: "group:", wantErr: ErrUnknownGroup},
	}
	for _, tt := range tests {
		t.Run(tt.group, func(t *testing.T) {
			got, err := a.GroupMembers(context.Background(), tt.group)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestGroupMembers_LicensedUserGroup(t *testing.T) {
	f := newFakeMM(t)
	f.userGroups = map[string][]string{"sre": {carolID, botID}, "ci-oncall": {adminID}}
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	got, err := a.GroupMembers(context.Background(), "group:sre")
	require.NoError(t, err)
	assert.Equal(t, []string{carolID}, got, "bots left out")
	got, err = a.GroupMembers(context.Background(), "ci-oncall")
	require.NoError(t, err)
	assert.Equal(t, []string{adminID}, got, "a user group wins over a private channel of the same name")
}

func TestReadThread(t *testing.T) {
	f := newFakeMM(t)
	a := newTestAdapter(t, f, nil)
	runAdapter(t, a, newRecorder())
	ctx := context.Background()
	root, err := a.Post(ctx, chatmodel.Conversation{Channel: channelID}, chatmodel.Message{Text: "🛠 run"})
	require.NoError(t, err)
	_, err = a.Post(ctx, chatmodel.Conversation{Channel: channelID, Thread: root.ID}, chatmodel.Message{Text: "1/2 ✅ Workers", Detail: "w0 stalled"})
	require.NoError(t, err)
	f.addPost(&model.Post{ChannelId: channelID, RootId: root.ID, UserId: carolID, Message: "restarted it by hand"})
	f.addPost(&model.Post{ChannelId: channelID, RootId: root.ID, UserId: aliceID, Type: model.PostTypeAddToChannel, Message: "alice added"})

	msgs, err := a.ReadThread(ctx, chatmodel.Conversation{Channel: channelID, Thread: root.ID})
	require.NoError(t, err)
	require.Len(t, msgs, 3, "system messages are left out")
	assert.Equal(t, "🛠 run", msgs[0].Text)
	assert.True(t, msgs[0].Bot)
	assert.Equal(t, chatmodel.User{ID: botID, Name: "groundcrew"}, msgs[0].Author)
	assert.Equal(t, "1/2 ✅ Workers\nw0 stalled", msgs[1].Text, "details included")
	assert.Equal(t, chatmodel.User{ID: carolID, Name: "carol"}, msgs[2].Author)
	assert.False(t, msgs[2].Bot)
	assert.True(t, msgs[1].Time.Before(msgs[2].Time))

	_, err = a.ReadThread(ctx, chatmodel.Conversation{Channel: channelID})
	assert.Error(t, err)
}
