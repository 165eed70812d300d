package e2e

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// TestFilesAndMentionsOnServer: a digest's chart is uploaded and attached
// to the digest's post (the file is found on the post, as an image), and
// an escalation's mentions are @usernames that Mattermost turns into
// notifications.
func TestFilesAndMentionsOnServer(t *testing.T) {
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := interactiveAdapter(t, srv, w)
	runAdapter(ctx, t, a, newRecorder())

	img := image.NewRGBA(image.Rect(0, 0, 96, 54))
	for x := range 96 {
		img.Set(x, x/2, color.RGBA{R: 0xe6, G: 0x7e, B: 0x22, A: 0xff})
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	ref, err := a.Post(ctx, chatmodel.Conversation{Channel: w.Channel.Id}, chatmodel.Message{Text: "🟢 *Health digest* `infra-prd`",
		Files: []chatmodel.File{{Name: "digest-infra-prd-20261202-0800.png", Alt: "Chart of infra-prd over the last 3 digests", Data: buf.Bytes()}}})
	require.NoError(t, err)
	alice := w.Users["alice"]
	p, _, err := alice.GetPost(ctx, ref.ID, "")
	require.NoError(t, err)
	assert.Equal(t, "🟢 **Health digest** `infra-prd`", p.Message, "the text is the digest")
	require.Len(t, p.FileIds, 1, "the chart is attached to the post")
	info, _, err := alice.GetFileInfo(ctx, p.FileIds[0])
	require.NoError(t, err)
	assert.Equal(t, "digest-infra-prd-20261202-0800.png", info.Name)
	assert.Equal(t, "image/png", info.MimeType)
	assert.Equal(t, int64(buf.Len()), info.Size)
	data, _, err := alice.GetFile(ctx, p.FileIds[0])
	require.NoError(t, err)
	assert.Equal(t, buf.Bytes(), data)

	ref, err = a.Post(ctx, chatmodel.Conversation{Channel: w.Channel.Id, Thread: ref.ID}, chatmodel.Message{Text: "🔔 Escalation 1/1", Mentions: []string{alice.User.Id, "nobody-id-0000000000000000"}})
	require.NoError(t, err)
	p, _, err = alice.GetPost(ctx, ref.ID, "")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p.Message, "@alice 🔔 Escalation 1/1"), p.Message)
}
