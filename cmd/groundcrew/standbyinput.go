package main

// The console's input with several replicas: only the leader runs what is
// typed. Without this a standby left its terminal unread, so a line typed
// there (an approval at 3 a.m.) got no answer and was run when, and if,
// that replica led — minutes or days later, against a run long decided —
// and a line typed just after a change of leader could be read by the
// previous term's reader and dropped.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// standbyInput reads the process's input once, for all terms: while a term
// leads, its bytes go to that term's console; otherwise each line is
// answered at once and not run.
type standbyInput struct {
	src    *bufio.Reader
	out    io.Writer
	leader func() string // who leads, for the answer

	mu   sync.Mutex
	cur  chan []byte   // the leading term's input, nil while none leads
	done chan struct{} // closed at the end of src
}

func newStandbyInput(in io.Reader, out io.Writer, leader func() string) *standbyInput {
	return &standbyInput{src: bufio.NewReader(in), out: out, leader: leader, done: make(chan struct{})}
}

// term is the input of a term that leads until ctx ends: it gets what is
// typed from now on, and ends (io.EOF) with the term.
func (s *standbyInput) term(ctx context.Context) io.Reader {
	ch := make(chan []byte)
	s.mu.Lock()
	s.cur = ch
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		if s.cur == ch {
			s.cur = nil
		}
		s.mu.Unlock()
	})
	return &termInput{ctx: ctx, ch: ch, done: s.done}
}

func (s *standbyInput) current() chan []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// pump reads the input until its end, in chunks of at most a line.
func (s *standbyInput) pump() {
	defer close(s.done)
	lineStart := true
	for {
		chunk, err := s.src.ReadSlice('\n')
		if len(chunk) > 0 {
			c := append([]byte(nil), chunk...)
			if !s.deliver(c) && lineStart {
				s.refuse(c)
			}
			lineStart = c[len(c)-1] == '\n'
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return
		}
	}
}

// deliver hands c to the leading term; false when none leads (or the term
// ended before it read c).
func (s *standbyInput) deliver(c []byte) bool {
	for {
		ch := s.current()
		if ch == nil {
			return false
		}
		select {
		case ch <- c:
			return true
		case <-time.After(200 * time.Millisecond): // busy, or its term ended: look again
		}
	}
}

func (s *standbyInput) refuse(c []byte) {
	line := strings.TrimSpace(string(c))
	if line == "" {
		return
	}
	if len(line) > 80 {
		line = line[:77] + "…"
	}
	line = strings.ToValidUTF8(line, "?")
	if who := s.leader(); who != "" {
		fmt.Fprintf(s.out, "⏸ Not run: %s — this replica is a standby and runs nothing; %s leads: type it there (or wait until this one leads, then type it again).\n", line, who)
		return
	}
	// One replica cut off from the store is the usual case here.
	fmt.Fprintf(s.out, "⏸ Not run: %s — this groundcrew does not lead now: no replica leads, or the store cannot be read (see the log); type it again once it leads.\n", line)
}

// termInput is one term's view of the input.
type termInput struct {
	ctx     context.Context
	ch      chan []byte
	done    chan struct{}
	pending []byte
}

func (t *termInput) Read(p []byte) (int, error) {
	if len(t.pending) == 0 {
		select {
		case c := <-t.ch:
			t.pending = c
		case <-t.ctx.Done():
			return 0, io.EOF
		case <-t.done:
			return 0, io.EOF
		}
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}
