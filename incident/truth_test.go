package incident_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// TestRootCountsDeliveries: the root said "3 notifications" for two
// deliveries and a retry of the one that timed out. A delivery
// Alertmanager gave up waiting for (Unanswered) and sends again is its
// retry: counted once, nothing edited for it. The same content otherwise
// is a repeat (repeat_interval): counted.
func TestRootCountsDeliveries(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first := diskSignal(true, "a")
	first.Delivery = "d1"
	in, err := f.m.Signal(ctx, first)
	require.NoError(t, err)
	require.NoError(t, f.m.Unanswered(ctx, first.Key, "d1")) // Alertmanager timed out
	f.clock.Advance(10 * time.Second)                        // its retry at the next group_interval
	_, err = f.m.Signal(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, 0, f.chat.Posts()[0].Edits, "a retry edits nothing")
	assert.Contains(t, f.root(t, in.ID).Text, "· 1 notification")

	f.clock.Advance(time.Minute)
	_, err = f.m.Signal(ctx, first) // answered last time: a repeat
	require.NoError(t, err)
	assert.Contains(t, f.root(t, in.ID).Text, "· 2 notifications", "a repeat is a notification")
	second := diskSignal(true, "a", "b")
	second.Delivery = "d2"
	_, err = f.m.Signal(ctx, second)
	require.NoError(t, err)
	assert.Contains(t, f.root(t, in.ID).Text, "· 3 notifications")
	require.NoError(t, f.m.Unanswered(ctx, first.Key, "d1"), "not the last delivery: nothing to do")
	_, err = f.m.Signal(ctx, first)
	require.NoError(t, err)
	assert.Contains(t, f.root(t, in.ID).Text, "· 4 notifications")
}

// TestResolutionFoundByPollingIsSaidSo: after a silence the root said "2
// notifications" where Alertmanager sent one and the resolution came from
// groundcrew's own poll. The poll is not a notification; the root says
// how the resolution was found.
func TestResolutionFoundByPollingIsSaidSo(t *testing.T) {
	f, sil := silencingFixture(t, false)
	ctx := context.Background()
	in := f.silenced(t)
	sil.setFiring(0)
	f.clock.Advance(5 * time.Minute)
	require.NoError(t, f.m.CheckSilences(ctx))
	f.m.Wait()
	root := f.root(t, in.ID).Text
	assert.Contains(t, root, "Status: resolved at 04:05 UTC after 5 min (found by asking Alertmanager: it sends no resolve while a silence lasts)")
	assert.Contains(t, root, "· 1 notification", "the poll is not counted")
}

// TestSilenceEndsWithItsIncident: a resolved incident's silence stayed
// active for its hour: if the alert fired again Alertmanager told nobody,
// and nothing said a silence was in force. Now it is expired when the
// incident resolves, and the thread says so.
func TestSilenceEndsWithItsIncident(t *testing.T) {
	f, sil := silencingFixture(t, false)
	ctx := context.Background()
	in := f.silenced(t)
	f.clock.Advance(3 * time.Minute)
	f.resolved(t) // Alertmanager's resolve (a silence made after it fired)
	assert.Equal(t, []string{"sil-1"}, sil.expiredIDs())
	got, err := f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	assert.Empty(t, got.SilenceID)
	root := f.root(t, in.ID)
	assert.NotContains(t, root.Text, "silence")
	assert.Empty(t, actions(root), "nothing left to press")
	_, ok := f.chat.Find("🔔 Silence `sil-1` expired with the incident: Alertmanager notifies again if these alerts fire.")
	assert.True(t, ok)
	assert.Contains(t, f.m.TimelineText(got), "unsilenced — silence sil-1 expired: the incident resolved")
}

// TestSilenceKeptAfterResolveIsSaid: with keep_after_resolve the silence
// stays; the resolved root says it is still in force, until when, and
// offers to expire it, which works on the resolved incident.
func TestSilenceKeptAfterResolveIsSaid(t *testing.T) {
	f, sil := silencingFixture(t, true)
	in := f.silenced(t)
	f.clock.Advance(3 * time.Minute)
	f.resolved(t)
	assert.Empty(t, sil.expiredIDs(), "kept")
	root := f.root(t, in.ID)
	assert.Contains(t, root.Text, "🔕 Its silence `sil-1` (by @carol) is still in force until 05:00 UTC: kept after the resolution (alerts.silences.keep_after_resolve)")
	assert.Equal(t, []chatmodel.Intent{incident.ActionUnsilence}, actions(root))

	f.press(t, chatmodel.User{ID: "U2", Name: "bob"}, incident.ActionUnsilence, in.ID)
	assert.Equal(t, []string{"sil-1"}, sil.expiredIDs())
	root = f.root(t, in.ID)
	assert.NotContains(t, root.Text, "silence")
	assert.Empty(t, actions(root))
	_, ok := f.chat.Find("🔔 @bob expired the silence `sil-1`")
	assert.True(t, ok)
}

// TestSilenceThatCannotBeExpiredIsSaid: Alertmanager refuses to expire the
// silence: the thread and the root say it is still in force and until
// when, and the root offers the button.
func TestSilenceThatCannotBeExpiredIsSaid(t *testing.T) {
	f, sil := silencingFixture(t, false)
	in := f.silenced(t)
	sil.failExpire(errors.New("503 Service Unavailable"))
	defer incident.SetExpireTries([]time.Duration{0, time.Millisecond})()
	f.resolved(t)
	root := f.root(t, in.ID)
	assert.Contains(t, root.Text, "⚠️ Its silence `sil-1` is still in force until 05:00 UTC: it could not be expired (503 Service Unavailable)")
	assert.Equal(t, []chatmodel.Intent{incident.ActionUnsilence}, actions(root))
	_, ok := f.chat.Find("⚠️ The silence `sil-1` could not be expired (503 Service Unavailable): it is still in force until 05:00 UTC")
	assert.True(t, ok)
}

// TestSecondSilencePressIsAnsweredPrivately: two people press "Silence"
// at the same moment: one silence; the other is told, privately, who
// silenced and until when.
func TestSecondSilencePressIsAnsweredPrivately(t *testing.T) {
	f, sil := silencingFixture(t, false)
	ctx := context.Background()
	s := diskSignal(true, "a")
	s.Silence = map[string]string{"alertname": "FileSystemSpaceFillingUp"}
	in, err := f.m.Signal(ctx, s)
	require.NoError(t, err)
	carol, bob := chatmodel.User{ID: "U3", Name: "carol"}, chatmodel.User{ID: "U2", Name: "bob"}
	var wg sync.WaitGroup
	for _, u := range []chatmodel.User{carol, bob} {
		wg.Add(1)
		go func() { defer wg.Done(); f.press(t, u, incident.ActionSilence, in.ID) }()
	}
	wg.Wait()
	assert.Equal(t, 1, sil.n)
	got, err := f.db.GetIncident(ctx, in.ID)
	require.NoError(t, err)
	loser := bob
	if got.SilencedBy.ID == bob.ID {
		loser = carol
	}
	answers := strings.Join(f.chat.Ephemerals(loser.ID), "\n")
	assert.Contains(t, answers, "is already silenced until 05:00 UTC by "+got.SilencedBy.Display())
}

// silencingFixture is a fixture whose manager silences through a fake
// Alertmanager with one alert firing; keep is keep_after_resolve.
func silencingFixture(t *testing.T, keep bool) (*fixture, *silencer) {
	t.Helper()
	f := newFixture(t)
	sil := &silencer{firing: 1}
	f.silencer(t, sil, keep)
	return f, sil
}

// resolved sends Alertmanager's resolve of the disk alerts and waits for
// what the manager does in the background (expiring the silence).
func (f *fixture) resolved(t *testing.T) {
	t.Helper()
	_, err := f.m.Signal(context.Background(), diskSignal(false))
	require.NoError(t, err)
	f.m.Wait()
}

// silencer replaces the fixture's manager by one with sil.
func (f *fixture) silencer(t *testing.T, sil *silencer, keep bool) {
	t.Helper()
	var err error
	f.m, err = incident.New(incident.Options{Store: f.db, Chat: f.chat, Outbox: f.out, Silencer: sil, KeepSilences: keep, Platform: "slack", Now: f.clock.Now})
	require.NoError(t, err)
	f.h = &incident.Handler{M: f.m, Next: f.next}
}

// silenced opens an incident and has carol silence it.
func (f *fixture) silenced(t *testing.T) *incident.Incident {
	t.Helper()
	s := diskSignal(true, "a")
	s.Silence = map[string]string{"alertname": "FileSystemSpaceFillingUp"}
	in, err := f.m.Signal(context.Background(), s)
	require.NoError(t, err)
	f.press(t, chatmodel.User{ID: "U3", Name: "carol"}, incident.ActionSilence, in.ID)
	return in
}

func (s *silencer) failExpire(err error) {
	s.mu.Lock()
	s.expireErr = err
	s.mu.Unlock()
}

func (s *silencer) setFiring(n int) {
	s.mu.Lock()
	s.firing = n
	s.mu.Unlock()
}

func (s *silencer) expiredIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.expired...)
}
