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

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
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

// openEvents opens the event stream of a page's link.
func openEvents(t *testing.T, ctx context.Context, ts *httptest.Server, link string) *sse {
	t.Helper()
	events := strings.Replace(strings.TrimPrefix(link, "https://gc.example.com"), "?", "/events?", 1)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+events, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "no", resp.Header.Get("X-Accel-Buffering"))
	s := &sse{sc: bufio.NewScanner(resp.Body)}
	s.sc.Buffer(make([]byte, 1<<20), 1<<20)
	return s
}

// nextEvent is the next event that is not a heartbeat.
func (s *sse) nextEvent(t *testing.T) event {
	t.Helper()
	ev := s.next(t)
	for ev.name == "comment" {
		ev = s.next(t)
	}
	return ev
}

func TestLive_AnIncidentsPageFollowsTheIncidentAndTheRunsOfItsThread(t *testing.T) {
	e := newEnv(t, func(o *web.Options) { o.Heartbeat = 100 * time.Millisecond })
	in := e.seedIncident(t, "i-3f2a9c", "msg-1")
	ts := httptest.NewServer(e.srv)
	defer ts.Close()
	link := e.links.Incident(in.ID, in.OpenedAt)
	code, _, page := e.get(t, link, outside)
	require.Equal(t, 200, code)
	assert.Contains(t, page, `data-events="/incidents/i-3f2a9c/events?t=`, "an open incident's page is live")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := openEvents(t, ctx, ts, link)

	first := s.nextEvent(t)
	require.Equal(t, "incident", first.name)
	assert.Contains(t, first.data, "not yet")
	assert.Contains(t, first.data, "No run in this incident")
	assert.Equal(t, 1, e.hub.Subscribers())
	assert.Equal(t, "comment", s.next(t).name, "nothing changed: only the heartbeat")

	// bob acknowledges
	_, err := e.db.UpdateIncident(ctx, in.ID, func(x *incident.Incident) error {
		x.State, x.AckedBy, x.AckedAt = incident.StateAcknowledged, &chatmodel.User{ID: "bob", Name: "bob"}, e.now
		x.Timeline = append(x.Timeline, incident.Entry{Time: e.now, Kind: "acknowledged", Actor: "bob", Text: "@bob acknowledged"})
		return nil
	})
	require.NoError(t, err)
	e.hub.Publish("incident", in.ID)
	ev := s.nextEvent(t)
	require.Equal(t, "incident", ev.name)
	assert.Contains(t, ev.data, "bob at 2026-11-29 03:22:00 UTC")
	assert.NotEqual(t, first.id, ev.id)

	// a run is started in the incident's thread (its creation names the
	// thread), then moves: the page lists it and follows it
	r := e.seedRunIn(t, "r-inc0000001", runmodel.RunAwaitingApproval, "msg-1")
	e.hub.Publish("run", r.ID)
	e.hub.Publish("thread", "msg-1")
	ev = s.nextEvent(t)
	require.Equal(t, "incident", ev.name)
	assert.Contains(t, ev.data, "r-inc0000001")
	assert.Contains(t, ev.data, "waiting for approval")
	_, err = e.db.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Gate, r.State = nil, runmodel.RunRunning
		r.Steps[2].Status = runmodel.StepExecuting
		r.UpdatedAt = r.UpdatedAt.Add(time.Second)
		return nil
	})
	require.NoError(t, err)
	e.hub.Publish("run", r.ID)
	ev = s.nextEvent(t)
	require.Equal(t, "incident", ev.name)
	assert.Contains(t, ev.data, "running")
	assert.NotContains(t, ev.data, "waiting for approval")

	// resolved, the run done: the page can still change while the alert
	// may fire again (the incident reopens within incident.ReopenWindow)
	_, err = e.db.UpdateRun(ctx, r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.State, r.FinishedAt = runmodel.RunSucceeded, e.now
		r.Steps[2].Status = runmodel.StepSucceeded
		r.UpdatedAt = r.UpdatedAt.Add(time.Second)
		return nil
	})
	require.NoError(t, err)
	_, err = e.db.UpdateIncident(ctx, in.ID, func(x *incident.Incident) error {
		x.State, x.ResolvedAt = incident.StateResolved, e.now
		x.Timeline = append(x.Timeline, incident.Entry{Time: e.now, Kind: "resolved", Text: "Alertmanager says the alerts are resolved"})
		return nil
	})
	require.NoError(t, err)
	e.hub.Publish("run", r.ID)
	e.hub.Publish("incident", in.ID)
	ev = s.nextEvent(t)
	require.Equal(t, "incident", ev.name)
	assert.Contains(t, ev.data, "resolved")
	assert.Contains(t, ev.data, "succeeded")
	assert.Equal(t, "comment", s.next(t).name, "within the reopen window the stream stays open")

	// past the reopen window, a change (or a reconnect) ends the stream
	e.advance(incident.ReopenWindow)
	e.hub.Publish("incident", in.ID)
	ev = s.nextEvent(t)
	assert.Equal(t, "end", ev.name)
	assert.Equal(t, "the incident is resolved", ev.data)
	assert.Eventually(t, func() bool { return e.hub.Subscribers() == 0 }, 5*time.Second, 10*time.Millisecond)
	_, _, page = e.get(t, link, outside)
	assert.NotContains(t, page, "data-events=", "a page that cannot change is not live")

	// a run's link opens no incident stream
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/incidents/"+in.ID+"/events?t="+strings.Split(e.links.Run(r.ID, r.CreatedAt), "t=")[1], nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 403, resp.StatusCode)
}
