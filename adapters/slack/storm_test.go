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

// stormSlack answers a burst of 429s (Retry-After: 1) and then every
// eleventh call, and records what it accepted.
type stormSlack struct {
	mu       sync.Mutex
	n        int
	limited  int
	accepted map[string][]string // channel/thread → texts in arrival order
}

func (s *stormSlack) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	s.mu.Lock()
	s.n++
	if s.n <= 4 || s.n%11 == 0 {
		s.limited++
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	key := r.Form.Get("channel") + "/" + r.Form.Get("thread_ts")
	s.accepted[key] = append(s.accepted[key], r.Form.Get("text"))
	ts := fmt.Sprintf("1795979000.%06d", s.n)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.Form.Get("channel"), "ts": ts})
}

// A 429 storm from the chat API: every message is delivered, in order
// within its thread, none twice.
func TestPost_429StormDeliversEverythingInOrderOnce(t *testing.T) {
	s := &stormSlack{accepted: map[string][]string{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	a, err := New(Config{BotToken: testBotToken, AppToken: testAppToken},
		Options{APIURL: srv.URL + "/", PostInterval: time.Millisecond, Logger: testLogger(t)})
	require.NoError(t, err)

	threads := []chatmodel.Conversation{
		{Channel: "C1", Thread: "1795979000.000001"}, {Channel: "C1", Thread: "1795979000.000002"},
		{Channel: "C2", Thread: "1795979000.000003"}, {Channel: "C2", Thread: "1795979000.000004"},
	}
	const perThread = 8
	var wg sync.WaitGroup
	errs := make(chan error, len(threads)*perThread)
	for ti, to := range threads {
		wg.Go(func() { // one run: its messages one after the other, as the engine posts them
			for i := range perThread {
				_, err := a.Post(context.Background(), to, chatmodel.Message{Text: fmt.Sprintf("t%d m%d", ti, i)})
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.GreaterOrEqual(t, s.limited, 4)
	for ti, to := range threads {
		var want []string
		for i := range perThread {
			want = append(want, fmt.Sprintf("t%d m%d", ti, i))
		}
		assert.Equal(t, want, s.accepted[to.Channel+"/"+to.Thread], "thread %d: all delivered, in order, once", ti)
	}
	t.Logf("429 storm: %d calls answered 429, %d messages delivered in order, none twice", s.limited, len(threads)*perThread)
}
