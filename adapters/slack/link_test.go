package slack

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestRender_ALinkIsAContextBlockUnderTheText(t *testing.T) {
	r, err := render(chatmodel.Message{Text: "🛠 *worker-stalled*", Link: &chatmodel.Link{URL: "https://gc.example.com/runs/r-1?t=abc-def", Label: "Run page & more"}})
	require.NoError(t, err)
	require.Len(t, r.main.blocks, 2)
	b, _ := json.Marshal(r.main.blocks[1])
	assert.JSONEq(t, `{"type":"context","elements":[{"type":"mrkdwn","text":"<https://gc.example.com/runs/r-1?t=abc-def|Run page &amp; more>"}]}`, string(b))
}
