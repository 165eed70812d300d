package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestDigestHistory_RoundTrip(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()

	rec, err := db.LastDigest(ctx, "infra-prd|#ci-ops|0 8 * * *|Europe/Paris")
	require.NoError(t, err)
	assert.Nil(t, rec, "no record yet")

	at := time.Date(2025, 3, 10, 7, 0, 0, 0, time.UTC)
	want := digest.Record{
		Fire: at, State: digest.Posted, Posted: at.Add(3 * time.Second),
		Ref: chatmodel.MessageRef{Channel: "#ci-ops", ID: "m1"},
		Data: &digest.Data{Target: "infra-prd", At: at, Window: 24 * time.Hour,
			Workers: digest.WorkerFigures{ByState: map[string]int{"stalled": 1}, Names: []string{"w-0"},
				Stalled: []digest.StalledWorker{{Name: "w-0", Containers: 236, Since: at.Add(-time.Hour)}}},
			Builds: digest.BuildFigures{ByStatus: map[string]int{"pending": 300}, MaxID: 4242},
			DB:     &digest.DBFigures{DatabaseBytes: 12 << 30, Tables: []digest.DBTable{{Table: "pipeline_build_events_3", Bytes: 5 << 30}}},
		},
	}
	require.NoError(t, db.SaveDigest(ctx, "a", want))
	require.NoError(t, db.SaveDigest(ctx, "b", digest.Record{Fire: at, State: digest.Armed}))
	got, err := db.LastDigest(ctx, "a")
	require.NoError(t, err)
	require.NotNil(t, got)
	assert.True(t, want.Fire.Equal(got.Fire))
	assert.Equal(t, want.State, got.State)
	assert.Equal(t, want.Ref, got.Ref)
	assert.Equal(t, want.Data.Workers, got.Data.Workers)
	assert.Equal(t, want.Data.Builds.MaxID, got.Data.Builds.MaxID)
	assert.Equal(t, want.Data.DB, got.Data.DB)

	assert.Error(t, db.SaveDigest(ctx, "", want), "a record needs a key")

	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bDigests).Put([]byte("c"), []byte("{not json")) }))
	_, err = db.LastDigest(ctx, "c")
	assert.ErrorContains(t, err, `decoding digest record "c"`)
}

// fixedSource reports the same healthy target every time.
type fixedSource struct{}

func (fixedSource) Collect(context.Context, string, []string, time.Duration, *digest.Data) (digest.Data, error) {
	return digest.Data{Workers: digest.WorkerFigures{ByState: map[string]int{"running": 1}, Names: []string{"w-0"}}}, nil
}

type crashingChat struct{ chatmodel.Chat }

func (crashingChat) Post(context.Context, chatmodel.Conversation, chatmodel.Message) (chatmodel.MessageRef, error) {
	panic("killed while posting")
}

// TestDigest_NoDoublePostAcrossRestart posts a digest, closes the bbolt
// store and reopens it as a restarted bot would: the digest is not posted
// again, neither after a clean stop nor after a crash while posting.
func TestDigest_NoDoublePostAcrossRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gc.db")
	clock := bottest.NewClock(time.Date(2025, 3, 10, 6, 0, 0, 0, time.UTC)) // 07:00 in Paris
	chat := &bottest.Chat{}
	ctx := context.Background()
	// boot opens the store and runs one evaluation, like a bot start.
	boot := func(c chatmodel.Chat) {
		t.Helper()
		db, err := Open(path, Options{Timeout: 100 * time.Millisecond})
		require.NoError(t, err)
		defer db.Close()
		s, err := digest.NewScheduler(digest.Options{
			Digests: []digest.Schedule{{Target: "infra-prd", Channel: "#ci-ops", Schedule: "0 8 * * *", Timezone: "Europe/Paris"}},
			Source:  fixedSource{}, History: db, Chat: c, Now: clock.Now,
		})
		require.NoError(t, err)
		s.Tick(ctx)
	}
	boot(chat) // armed
	clock.Advance(time.Hour + 30*time.Second)
	boot(chat)
	require.Len(t, chat.Posts(), 1, "08:00 digest")
	clock.Advance(time.Minute)
	boot(chat)
	boot(chat)
	assert.Len(t, chat.Posts(), 1, "not posted again after restarts")

	clock.Advance(24 * time.Hour)
	boot(crashingChat{chat}) // dies between intent and outcome
	boot(chat)
	boot(chat)
	assert.Len(t, chat.Posts(), 1, "a digest interrupted mid-post is never posted twice (at most once)")

	clock.Advance(24 * time.Hour)
	boot(chat)
	assert.Len(t, chat.Posts(), 2, "the following day's digest is posted")
}
