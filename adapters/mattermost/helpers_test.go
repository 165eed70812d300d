package mattermost

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// recorder is a bot.Handler that records events.
type recorder struct {
	mu     sync.Mutex
	events chan chatmodel.Event
	reply  func(ctx context.Context, e chatmodel.Event) error
}

func newRecorder() *recorder { return &recorder{events: make(chan chatmodel.Event, 100)} }

func (r *recorder) Handle(ctx context.Context, e chatmodel.Event) error {
	r.mu.Lock()
	reply := r.reply
	r.mu.Unlock()
	var err error
	if reply != nil {
		err = reply(ctx, e)
	}
	r.events <- e
	return err
}

func (r *recorder) setReply(f func(ctx context.Context, e chatmodel.Event) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reply = f
}

func (r *recorder) next(t *testing.T) chatmodel.Event {
	t.Helper()
	select {
	case e := <-r.events:
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5s")
		return chatmodel.Event{}
	}
}

func (r *recorder) none(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case e := <-r.events:
		t.Fatalf("unexpected event %+v", e)
	case <-time.After(within):
	}
}

// testConfig is a valid config pointing at f.
func testConfig(f *fakeMM) Config {
	return Config{
		URL:           f.srv.URL,
		BotToken:      "bot-token",
		CommandToken:  cmdToken,
		ActionHMACKey: testKey,
		Team:          "ops",
		CallbackURL:   "http://groundcrew.test:8080",
	}
}

// newTestAdapter returns an adapter on f with fast retries and backoff.
func newTestAdapter(t *testing.T, f *fakeMM, mod func(*Config)) *Adapter {
	t.Helper()
	cfg := testConfig(f)
	if mod != nil {
		mod(&cfg)
	}
	a, err := New(cfg, Options{})
	require.NoError(t, err)
	a.retry = retryPolicy{attempts: 4, minWait: 5 * time.Millisecond, maxWait: 3 * time.Second}
	a.backoff = backoffPolicy{min: 10 * time.Millisecond, max: 50 * time.Millisecond, stable: time.Hour}
	a.ackWait = 2 * time.Second
	a.ackGrace = 10 * time.Millisecond
	return a
}

// runAdapter runs a until the test ends and waits for its WebSocket.
func runAdapter(t *testing.T, a *Adapter, h chatmodel.Handler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	waitConnected(t, a)
}

func waitConnected(t *testing.T, a *Adapter) {
	t.Helper()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.connected
	}, 5*time.Second, 5*time.Millisecond, "adapter never connected")
}

func hasPrefix(s, p string) bool { return strings.HasPrefix(s, p) }
