package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGroundcrewBinaryHello runs the real `groundcrew serve` with the
// Mattermost adapter: the binary registers /runbook, answers help
// ephemerally, runs the built-in hello runbook in a thread, answers a
// command typed in that thread, and finishes the run when someone reacts ✅
// on its manual step.
func TestGroundcrewBinaryHello(t *testing.T) {
	groundcrewBinary(t) // fail fast on a build error, before starting servers
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alice, carol := w.Users["alice"], w.Users["carol"]
	createOncall(ctx, t, w, carol) // the policy's approver group must exist
	startGroundcrew(t, w, e2eSim(t))
	waitCommand(ctx, t, w)

	resp, err := alice.runCommand(ctx, w.Channel.Id, "", "/runbook help")
	require.NoError(t, err)
	assert.Equal(t, model.CommandResponseTypeEphemeral, resp.ResponseType)
	assert.Contains(t, resp.Text, "/runbook run", "help comes back as the command's ephemeral answer")

	since := time.Now()
	_, err = alice.runCommand(ctx, w.Channel.Id, "", "/runbook run hello who=alice")
	require.NoError(t, err)
	root := findRunRoot(ctx, t, w, carol, since, "hello", "Hello, alice!")
	waitRoot(ctx, t, carol, root.Id, "waiting for a person")
	posts, err := threadPosts(ctx, carol.Client4, root.Id)
	require.NoError(t, err)
	var manual *model.Post
	for _, p := range posts {
		if strings.Contains(p.Message, "Wave back") {
			manual = p
		}
	}
	require.NotNil(t, manual, "the manual step is in the thread:\n%s", threadText(ctx, t, carol, root.Id))
	assert.Equal(t, w.BotUser.Id, manual.UserId)

	// A command typed in the run's thread is answered there, ephemerally.
	runID := between(root.Message, "run `", "`")
	require.NotEmpty(t, runID, root.Message)
	resp, err = alice.runCommand(ctx, w.Channel.Id, root.Id, "/runbook status "+runID)
	require.NoError(t, err)
	assert.Contains(t, resp.Text, runID)

	_, _, err = carol.SaveReaction(ctx, &model.Reaction{UserId: carol.User.Id, PostId: manual.Id, EmojiName: "white_check_mark"})
	require.NoError(t, err)
	waitRoot(ctx, t, carol, root.Id, "succeeded")
}

// between returns the text between the first from and the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}
