package incident_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestIncidentRoot_LinksToItsPage(t *testing.T) {
	f := newFixture(t)
	var err error
	f.m, err = incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Platform: "slack", Now: f.clock.Now,
		Link: func(id string, opened time.Time) string { return "https://gc.example.com/incidents/" + id + "?t=x" }})
	require.NoError(t, err)
	in, err := f.m.Signal(context.Background(), diskSignal(true, "a"))
	require.NoError(t, err)
	root, ok := f.chat.Find("incident `" + in.ID + "`")
	require.True(t, ok)
	assert.Equal(t, &chatmodel.Link{URL: "https://gc.example.com/incidents/" + in.ID + "?t=x", Label: "Incident page"}, root.Msg.Link)
}
