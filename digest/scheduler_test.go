package digest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/delivery"
	"github.com/groundcrew/groundcrew/delivery/deliverytest"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

var parisTZ = func() *time.Location {
	l, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err)
	}
	return l
}()

// at returns a time in Paris on March 2025 (10 = Monday).
func at(day, hour, minute int) time.Time {
	return time.Date(2025, 3, day, hour, minute, 0, 0, parisTZ)
}

// fakeSource returns figures (or an error) and counts collections.
type fakeSource struct {
	mu    sync.Mutex
	err   error
	pend  int
	calls int
	teams [][]string // of each collection
}

func (s *fakeSource) Collect(_ context.Context, target string, teams []string, window time.Duration, _ *digest.Data) (digest.Data, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.teams = append(s.teams, teams)
	if s.err != nil {
		return digest.Data{}, s.err
	}
	return digest.Data{
		Workers: digest.WorkerFigures{ByState: map[string]int{"running": 2}, Names: []string{"w-0", "w-1"}},
		Builds:  digest.BuildFigures{ByStatus: map[string]int{"succeeded": 10, "pending": s.pend}},
	}, nil
}

// memHistory is an in-memory DigestHistory; failSave makes saves fail.
type memHistory struct {
	mu       sync.Mutex
	recs     map[string]digest.Record
	failSave bool
}

func (h *memHistory) LastDigest(_ context.Context, key string) (*digest.Record, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.recs[key]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

func (h *memHistory) SaveDigest(_ context.Context, key string, rec digest.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failSave {
		return errors.New("disk full")
	}
	if h.recs == nil {
		h.recs = map[string]digest.Record{}
	}
	h.recs[key] = rec
	return nil
}

func (h *memHistory) only(t *testing.T) digest.Record {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	require.Len(t, h.recs, 1)
	for _, r := range h.recs {
		return r
	}
	return digest.Record{}
}

// panicChat crashes on its first post, like a bot killed mid-post.
type panicChat struct{ *bottest.Chat }

func (panicChat) Post(context.Context, chatmodel.Conversation, chatmodel.Message) (chatmodel.MessageRef, error) {
	panic("killed while posting")
}

type schedEnv struct {
	clock *bottest.Clock
	chat  *bottest.Chat
	hist  *memHistory
	src   *fakeSource
	d     digest.Schedule
}

func newSchedEnv(now time.Time) *schedEnv {
	return &schedEnv{
		clock: bottest.NewClock(now), chat: &bottest.Chat{}, hist: &memHistory{}, src: &fakeSource{},
		d: digest.Schedule{Target: "infra-prd", Channel: "#ci-ops", Schedule: "0 8 * * *", Timezone: "Europe/Paris"},
	}
}

// start builds a scheduler over the env's history: a fresh one is a restart.
func (e *schedEnv) start(t *testing.T, chat chatmodel.Chat) *digest.Scheduler {
	t.Helper()
	if chat == nil {
		chat = e.chat
	}
	s, err := digest.NewScheduler(digest.Options{
		Digests: []digest.Schedule{e.d}, Source: e.src, History: e.hist, Chat: chat, Now: e.clock.Now,
	})
	require.NoError(t, err)
	return s
}

func (e *schedEnv) set(t time.Time) { e.clock.Advance(t.Sub(e.clock.Now())) }

func TestNewScheduler_ConfigErrors(t *testing.T) {
	good := digest.Schedule{Target: "infra-prd", Channel: "#ci-ops", Schedule: "0 8 * * 1-5", Timezone: "Europe/Paris"}
	tests := []struct {
		name  string
		bad   func(d *digest.Schedule)
		field string
		msg   string
	}{
		{"hour out of range", func(d *digest.Schedule) { d.Schedule = "0 25 * * *" }, "schedule",
			`digests[1].schedule: "0 25 * * *" is not a cron schedule (minute hour day month weekday, e.g. "0 8 * * 1-5"): end of range (25) above maximum (23): 25`},
		{"six fields", func(d *digest.Schedule) { d.Schedule = "0 0 8 * * *" }, "schedule", `expected exactly 5 fields, found 6`},
		{"empty schedule", func(d *digest.Schedule) { d.Schedule = "" }, "schedule", `digests[1].schedule: "" is not a cron schedule`},
		{"unknown time zone", func(d *digest.Schedule) { d.Timezone = "Europe/Pariss" }, "timezone",
			`digests[1].timezone: "Europe/Pariss" is not a time zone (e.g. Europe/Paris)`},
		{"time zone twice", func(d *digest.Schedule) { d.Schedule = "CRON_TZ=UTC 0 8 * * *" }, "schedule", "give it once"},
		{"unknown target", func(d *digest.Schedule) { d.Target = "infra-prod" }, "target",
			`digests[1].target: no target "infra-prod" is configured (targets: infra-prd, infra-stg)`},
		{"no channel", func(d *digest.Schedule) { d.Channel = "" }, "channel", `digests[1].channel: is required`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := good
			tt.bad(&bad)
			_, err := digest.NewScheduler(digest.Options{
				Digests: []digest.Schedule{good, bad}, Targets: []string{"infra-prd", "infra-stg"},
				Source: &fakeSource{}, History: &memHistory{}, Chat: &bottest.Chat{},
			})
			require.Error(t, err)
			var ce *digest.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, 1, ce.Index)
			assert.Equal(t, tt.field, ce.Field)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	t.Run("every problem at once", func(t *testing.T) {
		_, err := digest.NewScheduler(digest.Options{
			Digests: []digest.Schedule{{Schedule: "nope"}, good}, Source: &fakeSource{}, History: &memHistory{}, Chat: &bottest.Chat{},
		})
		require.Error(t, err)
		for _, want := range []string{"digests[0].target: is required", "digests[0].channel: is required", `digests[0].schedule: "nope"`} {
			assert.Contains(t, err.Error(), want)
		}
	})
	t.Run("descriptors and prefixes", func(t *testing.T) {
		for _, spec := range []string{"@daily", "@every 6h", "CRON_TZ=Asia/Tokyo 30 9 * * 1-5"} {
			d := good
			d.Schedule, d.Timezone = spec, ""
			_, err := digest.NewScheduler(digest.Options{Digests: []digest.Schedule{d}, Source: &fakeSource{}, History: &memHistory{}, Chat: &bottest.Chat{}})
			assert.NoError(t, err, spec)
		}
	})
}

func TestDecideDigest(t *testing.T) {
	daily, _, err := digest.ParseSchedule("0 8 * * *", "Europe/Paris")
	require.NoError(t, err)
	weekdays, _, err := digest.ParseSchedule("0 8 * * 1-5", "Europe/Paris")
	require.NoError(t, err)
	tests := []struct {
		name      string
		last, now time.Time
		weekdays  bool
		catchUp   time.Duration
		want      digest.Decision
	}{
		{name: "before the fire time", last: at(9, 8, 0), now: at(10, 7, 59)},
		{name: "already posted", last: at(10, 8, 0), now: at(10, 9, 0)},
		{name: "on time", last: at(9, 8, 0), now: at(10, 8, 0),
			want: digest.Decision{Fire: at(10, 8, 0), Allowed: 24 * time.Hour, Post: true}},
		{name: "missed while down, caught up", last: at(9, 8, 0), now: at(10, 15, 30),
			want: digest.Decision{Fire: at(10, 8, 0), Late: 7*time.Hour + 30*time.Minute, Allowed: 24 * time.Hour, Post: true}},
		{name: "down for days: only the latest, once", last: at(5, 8, 0), now: at(10, 9, 0),
			want: digest.Decision{Fire: at(10, 8, 0), Late: time.Hour, Allowed: 24 * time.Hour, Post: true, Skipped: 4}},
		{name: "later than catch_up", last: at(9, 8, 0), now: at(10, 15, 30), catchUp: 2 * time.Hour,
			want: digest.Decision{Fire: at(10, 8, 0), Late: 7*time.Hour + 30*time.Minute, Allowed: 2 * time.Hour}},
		{name: "friday's period lasts until monday", last: at(6, 8, 0), now: at(9, 20, 0), weekdays: true,
			want: digest.Decision{Fire: at(7, 8, 0), Late: 60 * time.Hour, Allowed: 72 * time.Hour, Post: true}},
		{name: "summer time: 08:00 in Paris is 06:00 UTC", last: at(30, 0, 0), now: time.Date(2025, 3, 30, 6, 0, 0, 0, time.UTC),
			want: digest.Decision{Fire: time.Date(2025, 3, 30, 6, 0, 0, 0, time.UTC), Allowed: 24 * time.Hour, Post: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := daily
			if tt.weekdays {
				s = weekdays
			}
			got := digest.Decide(s, tt.last, tt.now, tt.catchUp)
			assert.True(t, tt.want.Fire.Equal(got.Fire), "fire %s, want %s", got.Fire, tt.want.Fire)
			got.Fire = tt.want.Fire
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFireTimes(t *testing.T) {
	s, _, err := digest.ParseSchedule("0 */6 * * *", "UTC")
	require.NoError(t, err)
	start := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)
	fires, older := digest.FireTimes(s, start, start.Add(24*time.Hour), 10)
	assert.Len(t, fires, 4)
	assert.Zero(t, older)
	assert.Equal(t, start.Add(6*time.Hour), fires[0].UTC(), "after is exclusive")
	assert.Equal(t, start.Add(24*time.Hour), fires[3].UTC(), "now is inclusive")
	fires, older = digest.FireTimes(s, start, start.Add(24*time.Hour), 1)
	assert.Equal(t, []time.Time{start.Add(24 * time.Hour)}, []time.Time{fires[0].UTC()})
	assert.Equal(t, 3, older)
}

func TestScheduler_PostsOnceAtFireTime(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	s := env.start(t, nil)
	ctx := context.Background()
	s.Tick(ctx)
	assert.Empty(t, env.chat.Posts(), "a new schedule owes nothing from before it was first seen")
	assert.Equal(t, digest.Armed, env.hist.only(t).State)

	env.set(at(10, 7, 59))
	s.Tick(ctx)
	assert.Empty(t, env.chat.Posts())

	env.set(at(10, 8, 0))
	s.Tick(ctx)
	s.Tick(ctx)
	env.set(at(10, 8, 1))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 1)
	p := env.chat.Posts()[0]
	assert.Equal(t, "#ci-ops", p.To.Channel)
	assert.Contains(t, p.Msg.Text, "*Health digest* `infra-prd` · Mon 08:00 CET")
	rec := env.hist.only(t)
	assert.Equal(t, digest.Posted, rec.State)
	assert.True(t, rec.Fire.Equal(at(10, 8, 0)))
	assert.Equal(t, p.Ref, rec.Ref)

	env.src.pend = 7
	env.set(at(11, 8, 0))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 2)
	assert.Contains(t, env.chat.Posts()[1].Msg.Text, "7 pending ▲7", "trend against Monday's digest")
	assert.Equal(t, 2, env.src.calls)
}

func TestScheduler_CatchUpAfterRestart(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	ctx := context.Background()
	env.start(t, nil).Tick(ctx) // armed, then the bot stops

	env.set(at(10, 15, 0)) // back 7 h after the 08:00 digest was due
	env.start(t, nil).Tick(ctx)
	require.Len(t, env.chat.Posts(), 1, "the missed digest is posted once on start")
	assert.Contains(t, env.chat.Posts()[0].Msg.Text, "Mon 15:00 CET", "figures are those of now")

	env.set(at(10, 15, 1))
	env.start(t, nil).Tick(ctx) // another restart
	assert.Len(t, env.chat.Posts(), 1, "never twice")

	env.set(at(13, 9, 0)) // down for three days: only the latest (Thursday's) is posted
	s := env.start(t, nil)
	s.Tick(ctx)
	s.Tick(ctx)
	assert.Len(t, env.chat.Posts(), 2)
}

func TestScheduler_CatchUpTooLate(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	env.d.CatchUp = 2 * time.Hour
	ctx := context.Background()
	env.start(t, nil).Tick(ctx)

	env.set(at(10, 10, 30))
	env.start(t, nil).Tick(ctx)
	assert.Empty(t, env.chat.Posts(), "2 h 30 min late with catch_up 2h: skipped")
	rec := env.hist.only(t)
	assert.Equal(t, digest.Skipped, rec.State)
	assert.True(t, rec.Fire.Equal(at(10, 8, 0)))

	env.set(at(11, 8, 0))
	env.start(t, nil).Tick(ctx)
	assert.Len(t, env.chat.Posts(), 1, "the next one is posted as usual")
}

// TestScheduler_NoDoublePostAfterCrash kills the bot between recording the
// intent and recording the outcome: after restart the digest is not posted
// again (at most once).
func TestScheduler_NoDoublePostAfterCrash(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	ctx := context.Background()
	env.start(t, nil).Tick(ctx)

	env.set(at(10, 8, 0))
	env.start(t, panicChat{env.chat}).Tick(ctx) // the panic is recovered per digest
	rec := env.hist.only(t)
	assert.Equal(t, digest.Posting, rec.State, "intent recorded before the post")

	env.set(at(10, 8, 2))
	s := env.start(t, nil)
	s.Tick(ctx)
	s.Tick(ctx)
	assert.Empty(t, env.chat.Posts())
	assert.Equal(t, "interrupted while posting", env.hist.only(t).LastError)

	env.set(at(11, 8, 0))
	s.Tick(ctx)
	assert.Len(t, env.chat.Posts(), 1, "the next fire time is posted normally")
}

// TestScheduler_ChatDownThenBack: a digest chat does not take is queued
// in the outbox and posted once chat is back; a restart in between loses
// nothing and does not post it twice.
func TestScheduler_ChatDownThenBack(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	ctx := context.Background()
	chat, store := &deliverytest.Chat{}, &deliverytest.Store{}
	start := func() (*digest.Scheduler, *delivery.Outbox) {
		ob := delivery.New(delivery.Options{Chat: chat, Store: store, Now: env.clock.Now})
		s, err := digest.NewScheduler(digest.Options{Digests: []digest.Schedule{env.d}, Source: env.src, History: env.hist, Outbox: ob, Now: env.clock.Now})
		require.NoError(t, err)
		return s, ob
	}
	s, ob := start()
	s.Tick(ctx)

	chat.Down()
	env.set(at(10, 8, 0))
	s.Tick(ctx)
	ob.Flush(ctx)
	assert.Empty(t, chat.Posts())
	assert.Equal(t, digest.Posted, env.hist.only(t).State, "handed to the outbox")

	env.set(at(10, 8, 1)) // restart while chat is still down
	s, ob = start()
	s.Tick(ctx)
	ob.Flush(ctx)
	assert.Empty(t, chat.Posts())

	chat.Up()
	env.set(at(10, 8, 2))
	s.Tick(ctx)
	ob.Flush(ctx)
	posts := chat.Posts()
	require.Len(t, posts, 1, "posted once chat is back")
	assert.Contains(t, posts[0].Message.Text, "infra-prd")
	assert.Equal(t, "#ci-ops", posts[0].To.Channel)
	for m := 3; m < 10; m++ {
		env.set(at(10, 8, m))
		s.Tick(ctx)
		ob.Flush(ctx)
	}
	assert.Len(t, chat.Posts(), 1, "not twice")
}

func TestScheduler_HistoryFailureMeansNoPost(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	ctx := context.Background()
	s := env.start(t, nil)
	s.Tick(ctx)
	env.hist.failSave = true
	env.set(at(10, 8, 0))
	s.Tick(ctx)
	assert.Empty(t, env.chat.Posts(), "no post without a recorded intent")
	env.hist.failSave = false
	env.set(at(10, 8, 1))
	s.Tick(ctx)
	assert.Len(t, env.chat.Posts(), 1)
}

func TestScheduler_UnreachableTarget(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	ctx := context.Background()
	s := env.start(t, nil)
	s.Tick(ctx)
	env.set(at(10, 8, 0))
	s.Tick(ctx) // a good digest first

	env.src.err = errors.New("infra-prd: list workers: cannot reach ci.example.com: connection refused")
	env.set(at(11, 8, 0))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 2)
	text := env.chat.Posts()[1].Msg.Text
	assert.Contains(t, text, "— unreachable")
	assert.Contains(t, text, "connection refused")
	assert.Contains(t, text, "Last figures (Mon 08:00 CET)")

	env.src.err, env.src.pend = nil, 3
	env.set(at(12, 8, 0))
	s.Tick(ctx)
	assert.Contains(t, env.chat.Posts()[2].Msg.Text, "Trends vs the digest of Mon 08:00 CET", "compared with the last digest that had figures")
}

func TestScheduler_DigestNow(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	ctx := context.Background()
	s := env.start(t, nil)
	s.Tick(ctx)
	before := env.hist.only(t)

	to := chatmodel.Conversation{Platform: "console", Channel: "#incident", Thread: "t1"}
	require.NoError(t, s.DigestNow(ctx, "", nil, to), "the only target is the default")
	require.Len(t, env.chat.Posts(), 1)
	assert.Equal(t, to, env.chat.Posts()[0].To)
	assert.Equal(t, before, env.hist.only(t), "on-demand digests leave the schedule alone")

	err := s.DigestNow(ctx, "infra-prod", nil, to)
	var ue *chatmodel.UserError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, `Unknown target "infra-prod". Targets: infra-prd`, ue.Msg)

	env.chat.FailPosts = 1
	require.NoError(t, s.DigestNow(ctx, "infra-prd", nil, to), "a digest chat did not take is queued")
	require.Len(t, env.chat.Posts(), 1)
	env.set(at(10, 7, 1))
	s.Tick(ctx)
	assert.Len(t, env.chat.Posts(), 2, "and posted at the next tick")
}

func TestScheduler_Run(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	env.start(t, nil).Tick(context.Background())
	env.set(at(10, 9, 0))
	s := env.start(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	require.Eventually(t, func() bool { return len(env.chat.Posts()) == 1 }, 2*time.Second, 5*time.Millisecond, "catch-up at start")
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

// A reload replaces the schedules: the new one posts at its own time, the
// old one no more; a bad schedule changes nothing.
func TestScheduler_SetDigests(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	s := env.start(t, nil)
	ctx := context.Background()
	s.Tick(ctx)

	bad := digest.Schedule{Target: "infra-prd", Channel: "#ci-ops", Schedule: "every day at noon"}
	err := s.SetDigests([]digest.Schedule{bad})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "digests[0].schedule")

	env.set(at(10, 8, 0))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 1, "the bad reload kept the 08:00 schedule")

	moved := digest.Schedule{Target: "infra-prd", Channel: "#ci-night", Schedule: "0 9 * * *", Timezone: "Europe/Paris"}
	require.NoError(t, s.SetDigests([]digest.Schedule{moved}))
	s.Tick(ctx) // arms the new schedule
	env.set(at(10, 9, 0))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 2)
	assert.Equal(t, "#ci-night", env.chat.Posts()[1].To.Channel)
	env.set(at(11, 8, 30))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 2, "the old schedule is gone")
}

// On-demand digests of a target without a schedule compare with the last
// on-demand one: only the first says "First digest".
func TestScheduler_DigestNowWithoutScheduleHasTrends(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	s, err := digest.NewScheduler(digest.Options{Targets: []string{"infra-prd"}, Source: env.src, History: env.hist, Chat: env.chat, Now: env.clock.Now})
	require.NoError(t, err)
	ctx := context.Background()
	to := chatmodel.Conversation{Platform: "console", Channel: "#ops"}
	for range 3 {
		require.NoError(t, s.DigestNow(ctx, "infra-prd", nil, to))
		env.set(env.clock.Now().Add(time.Minute))
	}
	posts := env.chat.Posts()
	require.Len(t, posts, 3)
	assert.Contains(t, posts[0].Msg.Text, "First digest: no trends yet")
	for _, p := range posts[1:] {
		assert.NotContains(t, p.Msg.Text, "First digest")
		assert.Contains(t, p.Msg.Text, "Trends vs the digest of")
	}
}

// A digest posted to a channel bound to teams (Schedule.Teams) collects
// only theirs, says so, and keeps a history of its own; /runbook digest
// from such a channel compares with the same teams' digest only.
func TestScheduler_ADigestOfSomeTeams(t *testing.T) {
	env := newSchedEnv(at(10, 7, 0))
	env.d.Channel, env.d.Teams = "#payments-ci", []string{"payments"}
	ctx := context.Background()
	s := env.start(t, nil)
	s.Tick(ctx)
	env.set(at(10, 8, 0))
	s.Tick(ctx)
	require.Len(t, env.chat.Posts(), 1)
	assert.Contains(t, env.chat.Posts()[0].Msg.Text, "*Health digest* `infra-prd` · team `payments` ·")
	assert.Equal(t, [][]string{{"payments"}}, env.src.teams)
	_, ok := env.hist.recs[digest.HistoryKey("infra-prd", "#payments-ci", "0 8 * * *", "Europe/Paris", "payments")]
	assert.True(t, ok, "a history of its own")
	assert.NotEqual(t, digest.HistoryKey("infra-prd", "#payments-ci", "0 8 * * *", "Europe/Paris"), digest.HistoryKey("infra-prd", "#payments-ci", "0 8 * * *", "Europe/Paris", "payments"))
	assert.Equal(t, "infra-prd|#ci-ops|0 8 * * *|Europe/Paris", digest.HistoryKey("infra-prd", "#ci-ops", "0 8 * * *", "Europe/Paris"), "an unscoped key is unchanged")

	to := chatmodel.Conversation{Platform: "console", Channel: "#ops"}
	require.NoError(t, s.DigestNow(ctx, "infra-prd", nil, to))
	assert.Contains(t, env.chat.Posts()[1].Msg.Text, "First digest", "every team's is not compared with payments'")
	assert.NotContains(t, env.chat.Posts()[1].Msg.Text, "team `payments`")
	require.NoError(t, s.DigestNow(ctx, "infra-prd", []string{"payments"}, to))
	assert.Contains(t, env.chat.Posts()[2].Msg.Text, "Trends vs the digest of", "compared with payments' scheduled digest")
	assert.Equal(t, []string{"payments"}, env.src.teams[len(env.src.teams)-1])
}
