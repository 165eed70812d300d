package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// limitedSlack is an httptest chat.postMessage/chat.update that answers the
// first n calls with 429 (Retry-After: retryAfter, omitted when empty) or
// with status, and records every call.
type limitedSlack struct {
	mu         sync.Mutex
	failFirst  int
	status     int
	retryAfter string
	seq        int
	calls      []limitedCall
}

type limitedCall struct {
	method, channel, text string
	status                int
	at                    time.Time
}

func (l *limitedSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	l.mu.Lock()
	c := limitedCall{method: r.URL.Path[1:], channel: r.Form.Get("channel"), text: r.Form.Get("text"), status: http.StatusOK, at: time.Now()}
	if l.failFirst > 0 {
		l.failFirst--
		c.status = l.status
		l.calls = append(l.calls, c)
		l.mu.Unlock()
		if l.retryAfter != "" {
			w.Header().Set("Retry-After", l.retryAfter)
		}
		w.WriteHeader(c.status)
		return
	}
	l.seq++
	ts := fmt.Sprintf("1795979000.%06d", l.seq)
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": c.channel, "ts": ts})
}

func (l *limitedSlack) snapshot() []limitedCall {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]limitedCall(nil), l.calls...)
}

func newLimitedAdapter(t *testing.T, l *limitedSlack, interval time.Duration) *Adapter {
	t.Helper()
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	a, err := New(Config{BotToken: testBotToken, AppToken: testAppToken},
		Options{APIURL: srv.URL + "/", PostInterval: interval, Logger: testLogger(t)})
	require.NoError(t, err)
	return a
}

func TestPost_WaitsOutRetryAfterAndDropsNothing(t *testing.T) {
	l := &limitedSlack{failFirst: 1, status: http.StatusTooManyRequests, retryAfter: "1"}
	a := newLimitedAdapter(t, l, time.Millisecond)
	ctx := context.Background()

	var wg sync.WaitGroup
	refs := make([]chatmodel.MessageRef, 3)
	errs := make([]error, 3)
	post := func(i int) {
		defer wg.Done()
		refs[i], errs[i] = a.Post(ctx, chatmodel.Conversation{Channel: "C1"}, chatmodel.Message{Text: fmt.Sprintf("msg %d", i)})
	}
	start := time.Now()
	wg.Add(1)
	go post(0)
	require.Eventually(t, func() bool { return len(l.snapshot()) == 1 }, 2*time.Second, time.Millisecond, "first attempt")
	for i := 1; i < 3; i++ { // queue behind the rate-limited one, in order
		wg.Add(1)
		go post(i)
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()

	for i := range 3 {
		require.NoError(t, errs[i])
		assert.NotEmpty(t, refs[i].ID)
	}
	calls := l.snapshot()
	require.Len(t, calls, 4, "one 429, then every message exactly once")
	assert.Equal(t, http.StatusTooManyRequests, calls[0].status)
	assert.Equal(t, []string{"msg 0", "msg 0", "msg 1", "msg 2"}, []string{calls[0].text, calls[1].text, calls[2].text, calls[3].text}, "FIFO per channel")
	assert.GreaterOrEqual(t, calls[1].at.Sub(calls[0].at), time.Second, "Retry-After: 1 honoured")
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
}

func TestRetry_RecordsWaits(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		call       func(a *Adapter) error
		wantWaits  []time.Duration
		wantErr    bool
		wantCalls  int
	}{
		{
			name: "429 with Retry-After 7", status: http.StatusTooManyRequests, retryAfter: "7",
			call: func(a *Adapter) error {
				_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "C1"}, chatmodel.Message{Text: "x"})
				return err
			},
			wantWaits: []time.Duration{7 * time.Second}, wantCalls: 2,
		},
		{
			name: "429 without Retry-After", status: http.StatusTooManyRequests,
			call: func(a *Adapter) error {
				_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "C1"}, chatmodel.Message{Text: "x"})
				return err
			},
			wantWaits: []time.Duration{defaultRetryAfter}, wantCalls: 2,
		},
		{
			name: "post is not repeated after a 500 (it may have been posted)", status: http.StatusInternalServerError,
			call: func(a *Adapter) error {
				_, err := a.Post(context.Background(), chatmodel.Conversation{Channel: "C1"}, chatmodel.Message{Text: "x"})
				return err
			},
			wantErr: true, wantCalls: 1,
		},
		{
			name: "update is repeated after a 500", status: http.StatusInternalServerError,
			call: func(a *Adapter) error {
				return a.Update(context.Background(), chatmodel.MessageRef{Channel: "C1", ID: "1.1"}, chatmodel.Message{Text: "x"})
			},
			wantWaits: []time.Duration{500 * time.Millisecond}, wantCalls: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &limitedSlack{failFirst: 1, status: tt.status, retryAfter: tt.retryAfter}
			a := newLimitedAdapter(t, l, time.Millisecond)
			var mu sync.Mutex
			var waits []time.Duration
			a.retry.sleep = func(_ context.Context, d time.Duration) error {
				mu.Lock()
				defer mu.Unlock()
				waits = append(waits, d)
				return nil
			}
			err := tt.call(a)
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantWaits, waits)
			assert.Len(t, l.snapshot(), tt.wantCalls)
		})
	}
}

func TestPost_CancelledWhileRateLimitedReturnsError(t *testing.T) {
	l := &limitedSlack{failFirst: 1, status: http.StatusTooManyRequests, retryAfter: "30"}
	a := newLimitedAdapter(t, l, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := a.Post(ctx, chatmodel.Conversation{Channel: "C1"}, chatmodel.Message{Text: "x"})
	require.Error(t, err, "the engine must learn the post did not happen, to keep it in its outbox")
	assert.Len(t, l.snapshot(), 1)
	wait, ok := chatmodel.RetryAfter(err)
	require.True(t, ok, "a 429 is a typed rate-limit error: %v", err)
	assert.Equal(t, 30*time.Second, wait, "with the Retry-After Slack asked for")
}

func TestPost_SpacedPerChannel(t *testing.T) {
	l := &limitedSlack{}
	const interval = 150 * time.Millisecond
	a := newLimitedAdapter(t, l, interval)
	ctx := context.Background()

	var wg sync.WaitGroup
	for i := range 3 {
		for _, ch := range []string{"C1", "C2"} {
			wg.Go(func() {
				_, err := a.Post(ctx, chatmodel.Conversation{Channel: ch}, chatmodel.Message{Text: fmt.Sprintf("%s-%d", ch, i)})
				assert.NoError(t, err)
			})
		}
	}
	wg.Wait()

	byChan := map[string][]time.Time{}
	for _, c := range l.snapshot() {
		byChan[c.channel] = append(byChan[c.channel], c.at)
	}
	require.Len(t, byChan["C1"], 3)
	require.Len(t, byChan["C2"], 3)
	for ch, ts := range byChan {
		for i := 1; i < len(ts); i++ {
			assert.GreaterOrEqual(t, ts[i].Sub(ts[i-1]), interval-5*time.Millisecond, "%s writes spaced", ch)
		}
	}
	// Channels do not wait for each other.
	assert.Less(t, byChan["C2"][0].Sub(byChan["C1"][0]).Abs(), interval)
}

func TestLane_CancelledWaiterLeavesQueue(t *testing.T) {
	ln := &lane{}
	require.NoError(t, ln.acquire(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ln.acquire(ctx) }()
	require.Eventually(t, func() bool { ln.mu.Lock(); defer ln.mu.Unlock(); return len(ln.waiters) == 1 }, time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	ln.release()
	// The lane is free again.
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	require.NoError(t, ln.acquire(ctx2))
}
