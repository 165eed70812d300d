package concoursesim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

var timeZero time.Time

func jsonEncode(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// handleEvents streams a build's events as Concourse does: `event: event`
// frames with the envelope, `event: end` once the build is complete, then
// the connection stays open until the client leaves (or the server
// closes). The stream of a running build follows new events.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	s.st.mu.Lock()
	now := s.st.clock.Now()
	s.st.advance(now)
	c := &reqCtx{w: w, r: r, st: s.st, a: s.st.access(r, now), now: now}
	b, ok := c.buildFromPath()
	if ok && !c.a.authorized(b.team, RoleViewer) && (b.p == nil || !b.p.public) {
		denied(w, c.a)
		ok = false
	}
	s.st.mu.Unlock()
	if !ok {
		return
	}
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		if _, err := strconv.Atoi(last); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
	h.Set("X-Accel-Buffering", "no")
	h.Set("X-ATC-Stream-Version", "2.0")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	next := 0
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, _ := strconv.Atoi(last)
		next = n + 1
	}
	for {
		s.st.mu.Lock()
		s.st.advance(s.st.clock.Now())
		evs := append([]simEvent(nil), b.events[min(next, len(b.events)):]...)
		complete := !b.running()
		s.st.mu.Unlock()
		for _, ev := range evs {
			if err := writeEvent(w, next, ev); err != nil {
				return
			}
			next++
		}
		if complete {
			_, _ = fmt.Fprintf(w, "id: %d\nevent: end\ndata\n\n", next)
			if flusher != nil {
				flusher.Flush()
			}
			break
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	select { // like the ATC, keep the stream open until the client leaves
	case <-r.Context().Done():
	case <-s.done:
	}
}

func writeEvent(w io.Writer, id int, ev simEvent) error {
	env, err := json.Marshal(struct {
		Data    map[string]any `json:"data"`
		Event   string         `json:"event"`
		Version string         `json:"version"`
		EventID string         `json:"event_id"`
	}{ev.data, ev.typ, ev.version, strconv.Itoa(id)})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\nevent: event\ndata: %s\n\n", id, env)
	return err
}
