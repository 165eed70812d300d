package chatplatform

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistry(t *testing.T) {
	assert.Equal(t, []string{"console", "mattermost", "slack"}, Names())
	ad, err := Open(Config{Platform: "console"}, Deps{})
	require.NoError(t, err)
	assert.True(t, ad.Console)
	assert.Nil(t, ad.Handler)
	_, err = Open(Config{Platform: "teams"}, Deps{})
	assert.ErrorContains(t, err, `"teams" is not a platform: use console, mattermost, slack`)
	_, err = Open(Config{Platform: "mattermost"}, Deps{})
	assert.ErrorContains(t, err, "chat.mattermost", "the adapter checks its settings")
}
