package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/web"
)

// sse reads server-sent events from a stream.
type sse struct {
	sc *bufio.Scanner
}

type event struct{ name, id, data string }

func (s *sse) next(t *testing.T) event {
	t.Helper()
	var ev event
	var data []string
	for s.sc.Scan() {
		l := s.sc.Text()
		switch {
		case l == "":
			if ev.name != "" || len(data) > 0 {
				ev.data = strings.Join(data, "\n")
				return ev
			}
		case strings.HasPrefix(l, ":"):
			ev.name = "comment"
			data = append(data, l)
		case strings.HasPrefix(l, "event: "):
			ev.name = l[len("event: "):]
		case strings.HasPrefix(l, "id: "):
			ev.id = l[len("id: "):]
		case strings.HasPrefix(l, "data: "):
			data = append(data, l[len("data: "):])
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return ev
}

func TestLive_AnActiveRunsPageFollowsItsCommitsUntilItEnds(t *testing.T) {
	e := newEnv(t, func(o *web.Options) { o.Heartbeat = 100 * time.Millisecond })
	r := e.seedRun(t, "r-open000001", runmodel.RunAwaitingApproval)
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	link := e.links.Run(r.ID, r.CreatedAt)
	events := strings.Replace(strings.TrimPrefix(link, "https://gc.example.com"), "?", "/events?", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+events, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	assert.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("Content-Type"))
	s := &sse{sc: bufio.NewScanner(resp.Body)}
	s.sc.Buffer(make([]byte, 1<<20), 1<<20)

	first := s.next(t)
	require.Equal(t, "run", first.name)
	assert.Contains(t, first.data, "waiting for approval")
	assert.Equal(t, 1, e.hub.Subscribers())

	// nothing changes: the stream only says it is alive
	assert.Equal(t, "comment", s.next(t).name)

	// a commit (the approval, then the prune executing with progress) is
	// sent once it is committed and published
	_, err = e.db.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Gate = nil
		r.State = runmodel.RunRunning
		r.Steps[2].Status, r.Steps[2].Progress = runmodel.StepExecuting, "aborting 1,200 / 5,000 · 310/s"
		r.UpdatedAt = r.UpdatedAt.Add(time.Second)
		return nil
	})
	require.NoError(t, err)
	e.hub.Publish("run", r.ID)
	ev := s.next(t)
	for ev.name == "comment" {
		ev = s.next(t)
	}
	require.Equal(t, "run", ev.name)
	assert.Contains(t, ev.data, "aborting 1,200 / 5,000 · 310/s")
	assert.NotEqual(t, first.id, ev.id)

	_, err = e.db.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.State = runmodel.RunSucceeded
		r.Steps[2].Status, r.Steps[2].Progress, r.Steps[2].Summary = runmodel.StepSucceeded, "", "aborted 5,000 builds"
		r.UpdatedAt = r.UpdatedAt.Add(time.Second)
		r.FinishedAt = r.UpdatedAt
		return nil
	})
	require.NoError(t, err)
	e.hub.Publish("run", r.ID)
	ev = s.next(t)
	for ev.name == "comment" {
		ev = s.next(t)
	}
	require.Equal(t, "run", ev.name)
	assert.Contains(t, ev.data, "aborted 5,000 builds")
	assert.NotContains(t, ev.data, "aborting 1,200")
	assert.Equal(t, "end", s.next(t).name)
	assert.Eventually(t, func() bool { return e.hub.Subscribers() == 0 }, 5*time.Second, 10*time.Millisecond)
}

func TestLive_ManyViewersShareOneReadPerChange(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-open000001", runmodel.RunAwaitingApproval)
	var reads int
	var mu sync.Mutex
	counting := &countingRuns{Runs: e.db, n: &reads, mu: &mu}
	srv, err := web.New(web.Options{Runs: counting, Journals: e.db, Links: e.links, Changes: e.hub, Now: e.clock})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	link := e.links.Run(r.ID, r.CreatedAt)
	events := strings.Replace(strings.TrimPrefix(link, "https://gc.example.com"), "?", "/events?", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const viewers = 20
	var streams []*sse
	for range viewers {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+events, nil)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		s := &sse{sc: bufio.NewScanner(resp.Body)}
		s.sc.Buffer(make([]byte, 1<<20), 1<<20)
		require.Equal(t, "run", s.next(t).name)
		streams = append(streams, s)
	}
	mu.Lock()
	reads = 0
	mu.Unlock()
	_, err = e.db.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Steps[2].Note = "changed"
		r.UpdatedAt = r.UpdatedAt.Add(time.Second)
		return nil
	})
	require.NoError(t, err)
	e.hub.Publish("run", r.ID)
	for _, s := range streams {
		ev := s.next(t)
		require.Equal(t, "run", ev.name)
		assert.Contains(t, ev.data, "note: changed")
	}
	mu.Lock()
	defer mu.Unlock()
	assert.LessOrEqual(t, reads, 2, "%d viewers, one change: the run is read once (twice if a read raced the change)", viewers)
}

type countingRuns struct {
	web.Runs
	n  *int
	mu *sync.Mutex
}

func (c *countingRuns) GetRun(ctx context.Context, id string) (*runmodel.Run, error) {
	c.mu.Lock()
	*c.n++
	c.mu.Unlock()
	return c.Runs.GetRun(ctx, id)
}

func TestHub_CoalescesABurstIntoOneWakeUp(t *testing.T) {
	h := web.NewHub()
	ch, stop := h.Subscribe("run", "r-1")
	for range 100 {
		h.Publish("run", "R-1")
	}
	h.Publish("run", "r-2")
	<-ch
	select {
	case <-ch:
		t.Fatal("a burst is one wake-up")
	default:
	}
	stop()
	assert.Equal(t, 0, h.Subscribers())
}
