package mattermost

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestRender_ALinkIsAMarkdownLinkAfterTheText(t *testing.T) {
	r := render(chatmodel.Message{Text: "🛠 *worker-stalled*", Link: &chatmodel.Link{URL: "https://gc.example.com/runs/r-1?t=abc-def", Label: "Run [page]"}}, false)
	assert.Equal(t, "🛠 **worker-stalled**\n[Run (page)](https://gc.example.com/runs/r-1?t=abc-def)", r.message)
}
