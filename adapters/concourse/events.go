package concourse

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Event types the client gives meaning to; others are kept with their raw
// data.
const (
	EventStatus         = "status"
	EventLog            = "log"
	EventError          = "error"
	EventInitializeTask = "initialize-task"
	EventStartTask      = "start-task"
	EventFinishTask     = "finish-task"
	EventSelectedWorker = "selected-worker"
)

// Origin says which step of the plan an event came from.
type Origin struct {
	ID     string `json:"id,omitempty"`
	Source string `json:"source,omitempty"` // stdout or stderr for logs
}

// Event is one build event (the `data` envelope of an SSE `event` frame).
type Event struct {
	// Seq is the SSE id: the position in the stream.
	Seq     int
	Type    string // "log", "error", "status", …
	Version string
	Time    int64
	Origin  Origin
	// Status is set for status events.
	Status string
	// Payload is the text of log events.
	Payload string
	// Message is the text of error events.
	Message string
	// ExitStatus is set for finish-* events.
	ExitStatus *int
	// SelectedWorker is set for selected-worker events.
	SelectedWorker string
	// Data is the raw payload.
	Data json.RawMessage
}

type envelope struct {
	Data    json.RawMessage `json:"data"`
	Event   string          `json:"event"`
	Version string          `json:"version"`
}

type eventData struct {
	Time           int64  `json:"time"`
	Origin         Origin `json:"origin"`
	Status         string `json:"status"`
	Payload        string `json:"payload"`
	Message        string `json:"message"`
	ExitStatus     *int   `json:"exit_status"`
	SelectedWorker string `json:"selected_worker"`
}

// EventStream reads a build's event stream. Close it when done.
type EventStream struct {
	body   io.ReadCloser
	cancel context.CancelFunc
	r      *bufio.Reader
	done   bool
}

// BuildEvents opens GET /api/v1/builds/:id/events. Read with Next until
// io.EOF (the server's `end` event); the stream of a running build waits
// for new events.
func (c *Client) BuildEvents(ctx context.Context, id int) (*EventStream, error) {
	resp, cancel, err := c.send(ctx, request{
		method: http.MethodGet, path: "/api/v1/builds/" + strconv.Itoa(id) + "/events",
		action: fmt.Sprintf("read events of build %d", id), stream: true,
	})
	if err != nil {
		return nil, err
	}
	return &EventStream{body: resp.Body, cancel: cancel, r: bufio.NewReaderSize(resp.Body, 64<<10)}, nil
}

// Close releases the connection.
func (s *EventStream) Close() error {
	err := s.body.Close()
	s.cancel()
	return err
}

// Next returns the next event, or io.EOF after the `end` event.
func (s *EventStream) Next() (Event, error) {
	for !s.done {
		name, id, data, err := s.frame()
		if err != nil {
			return Event{}, err
		}
		switch name {
		case "end":
			s.done = true
		case "event":
			ev, err := parseEvent(id, data)
			if err != nil {
				return Event{}, err
			}
			return ev, nil
		case "":
			// comment or empty frame
		default:
			return Event{}, fmt.Errorf("unknown event name %q in build event stream", name)
		}
	}
	return Event{}, io.EOF
}

// frame reads one SSE frame (up to a blank line or the end of the body).
func (s *EventStream) frame() (name, id string, data []byte, err error) {
	var lines int
	for {
		line, rerr := s.r.ReadString('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return "", "", nil, fmt.Errorf("reading build events: %w", rerr)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if lines > 0 || rerr != nil {
				if rerr != nil && lines == 0 {
					return "", "", nil, io.ErrUnexpectedEOF
				}
				return name, id, data, nil
			}
			continue
		}
		lines++
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "id":
			id = value
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
		if rerr != nil { // body ended without a blank line
			return name, id, data, nil
		}
	}
}

func parseEvent(id string, data []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return Event{}, fmt.Errorf("parsing build event %s: %w", id, err)
	}
	var d eventData
	if len(env.Data) > 0 {
		if err := json.Unmarshal(env.Data, &d); err != nil {
			return Event{}, fmt.Errorf("parsing %s event %s: %w", env.Event, id, err)
		}
	}
	seq, _ := strconv.Atoi(id)
	return Event{
		Seq: seq, Type: env.Event, Version: env.Version, Time: d.Time, Origin: d.Origin,
		Status: d.Status, Payload: d.Payload, Message: d.Message, ExitStatus: d.ExitStatus,
		SelectedWorker: d.SelectedWorker, Data: env.Data,
	}, nil
}

// AllBuildEvents reads a finished build's whole stream.
func (c *Client) AllBuildEvents(ctx context.Context, id int) ([]Event, error) {
	s, err := c.BuildEvents(ctx, id)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var out []Event
	for {
		ev, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("%s: read events of build %d: %w", c.cfg.Name, id, err)
		}
		out = append(out, ev)
	}
}

// OutputLine is one line of a build's output as `fly watch` shows it.
type OutputLine struct {
	Text      string
	EventType string // log, error, selected-worker, status
	Origin    Origin
}

// EventMatch is a line of build output that matched a pattern, with its
// surroundings (like grep -B n -A n on `fly watch`).
type EventMatch struct {
	BuildID int
	// Line is the matching line; LineNo its 0-based index in the output.
	Line   OutputLine
	LineNo int
	Before []string
	After  []string
}

// renderLines turns events into output lines, splitting log payloads.
func renderLines(evs []Event) []OutputLine {
	var out []OutputLine
	partial := map[Origin]string{} // log text not yet ended by a newline
	var origins []Origin           // in order of first output, for a stable flush
	for _, ev := range evs {
		switch ev.Type {
		case EventLog:
			text := partial[ev.Origin] + strings.ReplaceAll(ev.Payload, "\r\n", "\n")
			parts := strings.Split(text, "\n")
			for _, p := range parts[:len(parts)-1] {
				out = append(out, OutputLine{Text: strings.TrimRight(p, "\r"), EventType: EventLog, Origin: ev.Origin})
			}
			if _, seen := partial[ev.Origin]; !seen {
				origins = append(origins, ev.Origin)
			}
			partial[ev.Origin] = parts[len(parts)-1]
		case EventError:
			out = append(out, OutputLine{Text: ev.Message, EventType: EventError, Origin: ev.Origin})
		case EventSelectedWorker:
			out = append(out, OutputLine{Text: "selected worker: " + ev.SelectedWorker, EventType: ev.Type, Origin: ev.Origin})
		case EventStatus:
			if ev.Status != StatusStarted {
				out = append(out, OutputLine{Text: ev.Status, EventType: ev.Type})
			}
		}
	}
	for _, o := range origins {
		if rest := partial[o]; rest != "" {
			out = append(out, OutputLine{Text: rest, EventType: EventLog, Origin: o})
		}
	}
	return out
}

// ScanBuildEvents reads a build's events and returns the log and error
// lines matching pattern, each with up to contextLines lines of output
// before and after it. Status and worker lines appear in the context but
// never match.
func (c *Client) ScanBuildEvents(ctx context.Context, id int, pattern *regexp.Regexp, contextLines int) ([]EventMatch, error) {
	evs, err := c.AllBuildEvents(ctx, id)
	if err != nil {
		return nil, err
	}
	return ScanEvents(id, evs, pattern, contextLines), nil
}

// ScanEvents is ScanBuildEvents on events already read.
func ScanEvents(buildID int, evs []Event, pattern *regexp.Regexp, contextLines int) []EventMatch {
	lines := renderLines(evs)
	var out []EventMatch
	for i, l := range lines {
		if (l.EventType != EventLog && l.EventType != EventError) || !pattern.MatchString(l.Text) {
			continue
		}
		m := EventMatch{BuildID: buildID, Line: l, LineNo: i}
		for j := max(0, i-contextLines); j < i; j++ {
			m.Before = append(m.Before, lines[j].Text)
		}
		for j := i + 1; j < len(lines) && j <= i+contextLines; j++ {
			m.After = append(m.After, lines[j].Text)
		}
		out = append(out, m)
	}
	return out
}
