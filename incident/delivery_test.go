package incident_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/delivery/deliverytest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/store"
)

// outageRig is groundcrew's incident side as serve wires it: the bbolt
// store holds the incidents and the outbox; the chat can go down.
type outageRig struct {
	path  string
	db    *store.DB
	chat  *deliverytest.Chat
	clock *bottest.Clock
	out   *delivery.Outbox
	m     *incident.Manager
}

func (r *outageRig) start(t *testing.T) {
	t.Helper()
	db, err := store.Open(r.path, store.Options{})
	require.NoError(t, err)
	r.db = db
	r.out = delivery.New(delivery.Options{Chat: r.chat, Store: db, Now: r.clock.Now})
	r.m, err = incident.New(incident.Options{Store: db, Chat: r.chat, Outbox: r.out, Platform: "slack", Now: r.clock.Now})
	require.NoError(t, err)
}

// restart is a kill -9: nothing is drained, the store is reopened.
func (r *outageRig) restart(t *testing.T) {
	t.Helper()
	require.NoError(t, r.db.Close())
	r.start(t)
}

// tick is the engine's tick: the outbox is flushed every second.
func (r *outageRig) tick(d time.Duration) {
	for end := r.clock.Now().Add(d); r.clock.Now().Before(end); {
		r.clock.Advance(time.Second)
		r.out.Flush(context.Background())
	}
}

func newOutageRig(t *testing.T) *outageRig {
	r := &outageRig{path: t.TempDir() + "/gc.db", chat: &deliverytest.Chat{}, clock: bottest.NewClock(time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC))}
	r.start(t)
	t.Cleanup(func() { _ = r.db.Close() })
	return r
}

// TestChatDownTwoMinutesLosesNothing: chat fails for 2 minutes while an
// alert fires, changes and repeats, and groundcrew restarts in between.
// Within seconds of chat coming back the incident thread is there,
// complete and in order, and its root shows the latest state. (Before,
// the webhook answered 200, the root post failed with a log line, and the
// thread appeared only when Alertmanager repeated the group, hours later
// with repeat_interval: 4h.)
func TestChatDownTwoMinutesLosesNothing(t *testing.T) {
	r := newOutageRig(t)
	ctx := context.Background()
	r.chat.Down()
	// Six volumes: more than the root shows, so a 🔔 Firing reply lists the sixth.
	var vols []string
	for i := range 6 {
		vols = append(vols, fmt.Sprintf("`worker-0` vol%d 8%% left", i))
	}
	in, err := r.m.Signal(ctx, diskSignal(true, vols...))
	require.NoError(t, err, "the incident is recorded while chat is down")
	r.tick(30 * time.Second)
	_, err = r.m.Signal(ctx, diskSignal(true, vols...))
	require.NoError(t, err)
	r.tick(30 * time.Second)
	_, err = r.m.Signal(ctx, diskSignal(true, append(vols, "`worker-1` 9% left")...))
	require.NoError(t, err)
	r.restart(t) // kill -9 during the outage
	r.tick(30 * time.Second)
	_, _, err = r.m.Acknowledge(ctx, in.ID, chatmodel.User{ID: "U2", Name: "bob"}, "command")
	require.NoError(t, err)
	r.restart(t)
	r.tick(30 * time.Second)
	assert.Empty(t, r.chat.Posts(), "chat was down")

	r.chat.Up()
	r.tick(10 * time.Second)
	posts := r.chat.Posts()
	require.Len(t, posts, 4, "root, firing, changed, acknowledged")
	root := posts[0]
	assert.Empty(t, root.To.Thread)
	assert.Contains(t, root.Message.Text, "incident `"+in.ID+"`")
	var replies []string
	for _, p := range posts[1:] {
		assert.Equal(t, root.Ref.ID, p.To.Thread, "in the incident's thread")
		replies = append(replies, strings.SplitN(p.Message.Text, "\n", 2)[0])
	}
	assert.Equal(t, []string{"🔔 Firing: the other 1 (the incident message shows the first 5)", "🔁 Changed: 1 new", "👀 @bob acknowledged — 1 min after it started."}, replies, "in order")
	assert.Equal(t, "🔁 Changed: 1 new\n• `worker-1` 9% left  🆕\n"+
		"6 others still firing — the incident message shows the first 5; `/runbook incidents show "+in.ID+"` lists them all, with the timeline",
		posts[2].Message.Text, "what changed, not the six that did not")
	latest := root.Message.Text
	if es := r.chat.Edits(); len(es) > 0 {
		latest = es[len(es)-1].Message.Text
	}
	assert.Contains(t, latest, "3 notifications")
	assert.Contains(t, latest, "acknowledged by @bob")
	got, err := r.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.Equal(t, root.Ref.ID, got.Root.ID, "the incident knows its message: buttons and 👀 find it")
	assert.Empty(t, r.out.Pending(ctx), "nothing left in the outbox")
}

// TestStormCoalescesRootEdits: 100 groups that open and are repeated 5
// times within a second (30 duplicate notifications gave 29 edits of a
// root in 38 ms; Slack allows about one post per second per channel and
// chat.update ~50 a minute). Each root is edited at most twice (the first
// repeat, then the latest state), and none of the latest states is lost at
// shutdown.
func TestStormCoalescesRootEdits(t *testing.T) {
	r := newOutageRig(t)
	ctx := context.Background()
	const groups, repeats = 100, 5
	for round := 0; round <= repeats; round++ {
		for g := range groups {
			s := diskSignal(true, fmt.Sprintf("`worker-%d` 8%% left", g))
			s.Key = fmt.Sprintf("group-%d", g)
			_, err := r.m.Signal(ctx, s)
			require.NoError(t, err)
		}
		r.clock.Advance(100 * time.Millisecond)
	}
	r.out.Drain(ctx) // shutdown
	posts, edits := r.chat.Posts(), r.chat.Edits()
	assert.Len(t, posts, groups, "a root per group, and no 🔔 Firing reply: the root lists its one alert")
	for _, p := range posts {
		assert.Empty(t, p.To.Thread, "no reply repeats the root: %s", p.Message.Text)
	}
	t.Logf("%d groups × %d notifications: %d posts, %d edits, %d chat calls", groups, repeats+1, len(posts), len(edits), r.chat.Calls())
	assert.LessOrEqual(t, len(edits), 2*groups, "at most two edits per root, not one per repeat (%d)", groups*repeats)
	latest := map[string]string{}
	for _, p := range posts {
		if p.To.Thread == "" {
			latest[p.Ref.ID] = p.Message.Text
		}
	}
	for _, e := range edits {
		latest[e.Ref.ID] = e.Message.Text
	}
	require.Len(t, latest, groups)
	for id, text := range latest {
		assert.Contains(t, text, fmt.Sprintf("%d notifications", repeats+1), "root %s shows the latest state", id)
	}
	assert.Empty(t, r.out.Pending(ctx))
}
