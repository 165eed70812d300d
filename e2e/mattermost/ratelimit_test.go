package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/mattermost"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// countingProxy is an HTTP reverse proxy in front of the Mattermost server
// that counts the 429 answers and keeps the headers of the first one.
type countingProxy struct {
	URL       string
	throttled atomic.Int64
	requests  atomic.Int64

	mu    sync.Mutex
	first http.Header // headers of the first 429
}

func newCountingProxy(t *testing.T, upstream string) *countingProxy {
	t.Helper()
	u, err := url.Parse(upstream)
	require.NoError(t, err)
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		p.requests.Add(1)
		if r.StatusCode == http.StatusTooManyRequests {
			if p.throttled.Add(1) == 1 {
				p.mu.Lock()
				p.first = r.Header.Clone()
				p.mu.Unlock()
			}
		}
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// TestRateLimitStorm turns on Mattermost's own rate limiter (per user, 5
// requests/s after a burst of 30) and has the adapter post 96 messages into
// six threads of three channels at once, each thread written in order as
// the engine's outbox does. Every message must arrive, in order within its
// thread, none twice, and the server must really have answered 429.
//
// Mattermost reads RateLimitSettings when its HTTP server starts (a config
// change needs a restart), so this test runs its own server with the limiter
// on from the start; no other test is slowed by it.
func TestRateLimitStorm(t *testing.T) {
	const (
		perSec   = 10
		burst    = 30
		channels = 4
		threads  = 2  // per channel
		replies  = 15 // per thread, after its root
	)
	srv := startServer(t,
		"MM_RATELIMITSETTINGS_ENABLE=true",
		"MM_RATELIMITSETTINGS_PERSEC="+strconv.Itoa(perSec),
		"MM_RATELIMITSETTINGS_MAXBURST="+strconv.Itoa(burst),
		// Per token, so the bootstrap's users and the bot each have their
		// own budget; requests without a token share the address's.
		"MM_RATELIMITSETTINGS_VARYBYUSER=true",
		"MM_RATELIMITSETTINGS_VARYBYREMOTEADDR=true",
	)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg, _, err := w.Admin.GetConfig(ctx)
	require.NoError(t, err)
	require.True(t, *cfg.RateLimitSettings.Enable, "the server's rate limiter is on")

	chans := []*model.Channel{w.Channel}
	for i := 1; i < channels; i++ {
		c, _, err := w.Admin.CreateChannel(ctx, &model.Channel{TeamId: w.Team.Id, Name: fmt.Sprintf("storm-%d", i), DisplayName: fmt.Sprintf("Storm %d", i), Type: model.ChannelTypeOpen})
		require.NoError(t, err)
		_, _, err = w.Admin.AddChannelMember(ctx, c.Id, w.BotUser.Id)
		require.NoError(t, err)
		chans = append(chans, c)
	}

	proxy := newCountingProxy(t, srv.URL)
	a, err := mattermost.New(mattermost.Config{
		URL:          proxy.URL,
		BotToken:     secretOf(w.BotToken),
		CommandToken: secretOf("storm-test-has-no-command"),
		Team:         "ops",
	}, mattermost.Options{Logger: testLogger(t)})
	require.NoError(t, err)
	runAdapter(ctx, t, a, newRecorder())
	eventually(t, 30*time.Second, "the adapter connected", a.Connected)

	// Each thread is written by one goroutine, one message after the other
	// (as the engine's outbox does for a run); all threads at once. An
	// ErrRateLimited (the adapter gave up after its tries) is retried, as the
	// outbox does: a 429 means the server did nothing.
	type thread struct {
		channel string
		root    string
		want    []string
	}
	var (
		all    []*thread
		gaveUp atomic.Int64
		wg     sync.WaitGroup
		start  = make(chan struct{})
		errs   = make(chan error, channels*threads)
	)
	post := func(to chatmodel.Conversation, text string) (chatmodel.MessageRef, error) {
		for {
			ref, err := a.Post(ctx, to, chatmodel.Message{Text: text})
			if errors.Is(err, mattermost.ErrRateLimited) && ctx.Err() == nil {
				gaveUp.Add(1)
				continue
			}
			return ref, err
		}
	}
	for ci, c := range chans {
		for ti := range threads {
			th := &thread{channel: c.Id}
			name := fmt.Sprintf("c%d-t%d", ci, ti)
			th.want = append(th.want, "storm "+name+" root")
			for n := 1; n <= replies; n++ {
				th.want = append(th.want, fmt.Sprintf("storm %s #%02d", name, n))
			}
			all = append(all, th)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				root, err := post(chatmodel.Conversation{Channel: th.channel}, th.want[0])
				if err != nil {
					errs <- fmt.Errorf("%s: %w", th.want[0], err)
					return
				}
				th.root = root.ID
				for _, text := range th.want[1:] {
					if _, err := post(chatmodel.Conversation{Channel: th.channel, Thread: root.ID}, text); err != nil {
						errs <- fmt.Errorf("%s: %w", text, err)
						return
					}
				}
			}()
		}
	}
	before := proxy.throttled.Load()
	began := time.Now()
	close(start)
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	messages := channels * threads * (1 + replies)
	throttled := proxy.throttled.Load() - before
	proxy.mu.Lock()
	first := proxy.first
	proxy.mu.Unlock()
	t.Logf("rate-limit storm: %d messages in %d threads of %d channels in %s; %d answers 429 out of %d requests (first: Retry-After %q, X-RateLimit-Limit %q, -Remaining %q, -Reset %q); the adapter gave up %d times (retried as the outbox does)",
		messages, len(all), channels, took.Round(100*time.Millisecond), throttled, proxy.requests.Load(),
		first.Get("Retry-After"), first.Get("X-RateLimit-Limit"), first.Get("X-RateLimit-Remaining"), first.Get("X-RateLimit-Reset"), gaveUp.Load())
	require.Positive(t, throttled, "the server never answered 429: the storm did not storm")
	ra, err := strconv.Atoi(first.Get("Retry-After"))
	require.NoError(t, err, "Mattermost's 429 carries Retry-After in seconds (what the adapter honours)")
	assert.GreaterOrEqual(t, ra, 1)

	// Every message once, in order within its thread; no stray root.
	for _, th := range all {
		posts, err := threadPosts(ctx, w.Admin.Client4, th.root)
		require.NoError(t, err)
		var got []string
		for _, p := range posts {
			got = append(got, p.Message)
		}
		assert.Equal(t, th.want, got, "thread %s", th.want[0])
	}
	for _, c := range chans {
		list, _, err := w.Admin.GetPostsForChannel(ctx, c.Id, 0, 200, "", false, false)
		require.NoError(t, err)
		n := 0
		for _, p := range list.Posts {
			if p.UserId == w.BotUser.Id && strings.HasPrefix(p.Message, "storm ") {
				n++
			}
		}
		assert.Equal(t, threads*(1+replies), n, "bot posts in channel %s (a duplicate root would show here)", c.Name)
	}
}
