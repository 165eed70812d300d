package slack

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// manifest is the part of a Slack app manifest the adapter depends on.
type manifest struct {
	Features struct {
		SlashCommands []struct {
			Command      string `yaml:"command"`
			URL          string `yaml:"url"`
			ShouldEscape bool   `yaml:"should_escape"`
		} `yaml:"slash_commands"`
	} `yaml:"features"`
	OAuth struct {
		Scopes struct {
			Bot []string `yaml:"bot"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Events struct {
			RequestURL string   `yaml:"request_url"`
			BotEvents  []string `yaml:"bot_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			IsEnabled  bool   `yaml:"is_enabled"`
			RequestURL string `yaml:"request_url"`
		} `yaml:"interactivity"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func loadManifest(t *testing.T, name string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "slack", name))
	require.NoError(t, err)
	var m manifest
	require.NoError(t, yaml.Unmarshal(b, &m))
	return m
}

// TestManifest checks the app manifests ask for what the adapter uses: the
// scopes of every Web API method it calls, the events it handles, and, for
// HTTP, request URLs on the paths HTTPHandler serves.
func TestManifest(t *testing.T) {
	socket := loadManifest(t, "manifest.yaml")
	http := loadManifest(t, "manifest-http.yaml")

	needScopes := []string{
		"commands",                     // slash command
		"chat:write",                   // chat.postMessage, chat.update, chat.postEphemeral
		"files:write",                  // the digest chart: files.getUploadURLExternal, files.completeUploadExternal
		"channels:join",                // conversations.join on not_in_channel
		"channels:read", "groups:read", // conversations.list
		"channels:history", "groups:history", // conversations.replies
		"reactions:read",  // reaction_added / reaction_removed
		"users:read",      // users.info
		"usergroups:read", // usergroups.list, usergroups.users.list
	}
	for name, m := range map[string]manifest{"socket": socket, "http": http} {
		t.Run(name, func(t *testing.T) {
			assert.ElementsMatch(t, needScopes, m.OAuth.Scopes.Bot, "exactly the scopes the adapter needs")
			assert.ElementsMatch(t, []string{"reaction_added", "reaction_removed"}, m.Settings.Events.BotEvents)
			assert.True(t, m.Settings.Interactivity.IsEnabled, "buttons need interactivity")
			require.Len(t, m.Features.SlashCommands, 1)
			assert.Equal(t, "/runbook", m.Features.SlashCommands[0].Command)
			assert.False(t, m.Features.SlashCommands[0].ShouldEscape)
		})
	}

	assert.True(t, socket.Settings.SocketMode)
	assert.Empty(t, socket.Settings.Events.RequestURL)
	assert.Empty(t, socket.Features.SlashCommands[0].URL)

	assert.False(t, http.Settings.SocketMode)
	assert.Equal(t, "https://groundcrew.example.com"+PathCommands, http.Features.SlashCommands[0].URL)
	assert.Equal(t, "https://groundcrew.example.com"+PathEvents, http.Settings.Events.RequestURL)
	assert.Equal(t, "https://groundcrew.example.com"+PathInteractivity, http.Settings.Interactivity.RequestURL)
}
