package main

// The console's input with several replicas: only the leader runs what is
// typed, and only what was typed while it led, not long ago. Without this
// a standby left its terminal unread, so a line typed there (an approval
// at 3 a.m.) got no answer and was run when, and if, that replica led —
// minutes or days later, against a run long decided —, a line typed just
// after a change of leader could be read by the previous term's reader
// and dropped, and a line waiting for a busy term was handed to the next
// term, with the lines typed meanwhile, while this replica did not lead.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
)

// staleLine is how long a line typed on a leader may wait to be run; an
// older one is answered and dropped.
const staleLine = time.Minute

// mayNotLead answers a line read, or taken to be run, when this replica's
// lease may have lapsed.
const mayNotLead = "this replica may no longer lead (it was paused or cut off from the store, and its leader lease may have lapsed); type it again where the leader runs"

// maxQueuedLines bounds the lines waiting for a busy term; more are
// answered and dropped.
const maxQueuedLines = 1000

// standbyInput reads the process's input at once, always, for all terms:
// a line read while a term leads (and surely holds the lease) is queued
// for that term only; otherwise it is answered at once and never run. A
// term ends with its queue: what it did not take is answered, not handed
// to the next term.
type standbyInput struct {
	src    *bufio.Reader
	out    io.Writer
	leader func() string    // who leads, for the answer
	held   func() time.Time // until when this process surely holds the lease (zero: it does not lead)
	now    func() time.Time

	mu   sync.Mutex
	cur  *termQueue    // the leading term's queue, nil while none leads
	done chan struct{} // closed at the end of src
}

// chunk is a piece of input of at most one line, with when it was read.
type chunk struct {
	b     []byte
	read  time.Time
	first bool // the start of its line
}

// termQueue is what one term has not read yet.
type termQueue struct {
	mu     sync.Mutex
	q      []chunk
	wake   chan struct{}
	closed bool
}

func newStandbyInput(in io.Reader, out io.Writer, leader func() string, held func() time.Time) *standbyInput {
	return &standbyInput{src: bufio.NewReader(in), out: out, leader: leader, held: held, now: time.Now, done: make(chan struct{})}
}

// term is the input of a term that leads until ctx ends: it gets what is
// typed from now on while it leads, and ends (io.EOF) with the term; what
// it has not read by then is answered, never run.
func (s *standbyInput) term(ctx context.Context) io.Reader {
	q := &termQueue{wake: make(chan struct{}, 1)}
	s.mu.Lock()
	s.cur = q
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		if s.cur == q {
			s.cur = nil
		}
		s.mu.Unlock()
		q.mu.Lock()
		q.closed = true
		left := q.q
		q.q = nil
		q.mu.Unlock()
		for _, c := range left {
			if c.first {
				s.refuse(c.b, "this replica stopped leading before running it; type it again where the leader runs")
			}
		}
		select {
		case q.wake <- struct{}{}:
		default:
		}
	})
	return &termInput{s: s, ctx: ctx, q: q}
}

// pump reads the input until its end, in chunks of at most a line, and
// decides each line's fate the moment it is read.
func (s *standbyInput) pump() {
	defer close(s.done)
	lineStart := true
	var to *termQueue // where the rest of the current line goes (nil: dropped)
	for {
		b, err := s.src.ReadSlice('\n')
		if len(b) > 0 {
			c := chunk{b: append([]byte(nil), b...), read: s.now(), first: lineStart}
			if lineStart {
				to = s.admit(c)
			} else if to != nil && !to.push(c) {
				to = nil
			}
			lineStart = c.b[len(c.b)-1] == '\n'
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}

// admit queues the first chunk of a line for the leading term, or answers
// it: nil when it is dropped.
func (s *standbyInput) admit(c chunk) *termQueue {
	s.mu.Lock()
	q := s.cur
	s.mu.Unlock()
	switch {
	case q == nil:
		s.refuseStandby(c.b)
		return nil
	case !s.holds(c.read):
		s.refuse(c.b, mayNotLead)
		return nil
	case !q.push(c):
		s.refuse(c.b, fmt.Sprintf("%d lines already wait to be run; type it again in a moment", maxQueuedLines))
		return nil
	}
	return q
}

// holds reports whether this process surely holds the lease at t.
func (s *standbyInput) holds(t time.Time) bool {
	if s.held == nil {
		return true
	}
	until := s.held()
	return !until.IsZero() && t.Before(until)
}

// push queues c; false when the term ended or too many lines wait.
func (q *termQueue) push(c chunk) bool {
	q.mu.Lock()
	if q.closed || (c.first && len(q.q) >= maxQueuedLines) {
		q.mu.Unlock()
		return false
	}
	q.q = append(q.q, c)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// pop takes the next chunk, if any.
func (q *termQueue) pop() (chunk, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.q) == 0 {
		return chunk{}, false
	}
	c := q.q[0]
	q.q[0] = chunk{}
	q.q = q.q[1:]
	return c, true
}

func (s *standbyInput) refuseStandby(b []byte) {
	if who := s.leader(); who != "" {
		s.refuse(b, "this replica is a standby and runs nothing; "+who+" leads: type it there (or wait until this one leads, then type it again)")
		return
	}
	// One replica cut off from the store is the usual case here.
	s.refuse(b, "this groundcrew does not lead now: no replica leads, or the store cannot be read (see the log); type it again once it leads")
}

func (s *standbyInput) refuse(b []byte, why string) {
	line := strings.TrimSpace(string(b))
	if line == "" {
		return
	}
	if len(line) > 80 {
		line = line[:77] + "…"
	}
	line = strings.ToValidUTF8(line, "?")
	fmt.Fprintf(s.out, "⏸ Not run: %s — %s.\n", line, why)
}

// termInput is one term's view of the input.
type termInput struct {
	s       *standbyInput
	ctx     context.Context
	q       *termQueue
	pending []byte
	drop    bool // the rest of a line that was refused
}

// Read hands the term its lines as the console asks for them, one at a
// time; a line read more than staleLine ago is answered instead, never
// run this late.
func (t *termInput) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		c, ok := t.q.pop()
		if !ok {
			select {
			case <-t.q.wake:
				continue
			case <-t.ctx.Done():
				return 0, io.EOF
			case <-t.s.done:
				if c, ok = t.q.pop(); !ok {
					return 0, io.EOF
				}
			}
		}
		if t.ctx.Err() != nil {
			return 0, io.EOF
		}
		if c.first {
			now := t.s.now()
			t.drop = true
			switch age := now.Sub(c.read); {
			case !t.s.holds(now):
				// Read before a pause, taken after it: the lease may
				// have lapsed meanwhile, and another replica may lead.
				t.s.refuse(c.b, mayNotLead)
			case age > staleLine:
				t.s.refuse(c.b, "it was typed "+human.Duration(age.Round(time.Second))+" ago and waited too long (the limit is a minute); type it again if it still applies")
			default:
				t.drop = false
			}
		}
		if !t.drop {
			t.pending = c.b
		}
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}
