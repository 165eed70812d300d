package main

import (
	"context"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Lines typed while no term leads are answered and dropped; a term gets
// what is typed while it leads, and its input ends with it.
func TestStandbyInput_OnlyTheLeadingTermReads(t *testing.T) {
	pr, pw := io.Pipe()
	var out syncBuffer
	var leader atomic.Value
	leader.Store("vm/4242")
	s := newStandbyInput(pr, &out, func() string { return leader.Load().(string) }, nil)
	go s.pump()

	_, err := io.WriteString(pw, "/runbook approve r-1\n")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		return strings.Contains(out.String(), "⏸ Not run: /runbook approve r-1 — this replica is a standby")
	},
		5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "vm/4242 leads: type it there")
	leader.Store("")
	_, err = io.WriteString(pw, "/runbook status\n")
	require.NoError(t, err)
	assert.Eventually(t, func() bool {
		return strings.Contains(out.String(), "⏸ Not run: /runbook status — this groundcrew does not lead now")
	},
		5*time.Second, 10*time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	in := s.term(ctx)
	go func() { _, _ = io.WriteString(pw, "/runbook list\n") }()
	buf := make([]byte, 64)
	n, err := in.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "/runbook list\n", string(buf[:n]), "only what is typed while it leads")
	cancel()
	_, err = in.Read(buf)
	assert.ErrorIs(t, err, io.EOF, "the term's input ends with the term")
	require.NoError(t, pw.Close())
	<-s.done
}

// fakeClock is a settable clock for the input's times.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestStandbyInput_NeverLateWithinATerm (#35.4): a line typed while this
// replica does not lead, or while its lease may have lapsed (it woke from
// a pause), or that waited more than a minute, is answered and never run —
// not later in the term, not by the next term.
func TestStandbyInput_NeverLateWithinATerm(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var out syncBuffer
	clock := &fakeClock{t: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)}
	var lapsed atomic.Bool
	held := func() time.Time {
		if lapsed.Load() {
			return clock.now().Add(-time.Second)
		}
		return clock.now().Add(time.Hour)
	}
	s := newStandbyInput(pr, &out, func() string { return "" }, held)
	s.now = clock.now
	go s.pump()
	say := func(line string) {
		t.Helper()
		_, err := io.WriteString(pw, line+"\n")
		require.NoError(t, err)
	}
	answered := func(line, why string) {
		t.Helper()
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "⏸ Not run: "+line+" — "+why) },
			5*time.Second, 5*time.Millisecond, "%q answered: %s", line, out.String())
	}
	read := func(r io.Reader) string {
		t.Helper()
		got := make(chan string, 1)
		go func() {
			buf := make([]byte, 256)
			n, _ := r.Read(buf)
			got <- string(buf[:n])
		}()
		select {
		case l := <-got:
			return l
		case <-time.After(5 * time.Second):
			t.Fatal("nothing to read")
			return ""
		}
	}

	// A term that is busy: the line it has not taken when it ends is
	// answered, and the next term does not get it.
	ctx1, end1 := context.WithCancel(context.Background())
	term1 := s.term(ctx1)
	say("/runbook approve r-1")
	require.Eventually(t, func() bool { s.cur.mu.Lock(); defer s.cur.mu.Unlock(); return len(s.cur.q) == 1 }, 5*time.Second, 5*time.Millisecond)
	end1()
	answered("/runbook approve r-1", "this replica stopped leading before running it")
	_, err := term1.Read(make([]byte, 64))
	assert.ErrorIs(t, err, io.EOF)

	// Between the terms: answered at once, never run by the next one.
	say("/runbook approve r-2")
	answered("/runbook approve r-2", "this groundcrew does not lead now")
	ctx2, end2 := context.WithCancel(context.Background())
	defer end2()
	term2 := s.term(ctx2)
	say("/runbook status")
	assert.Equal(t, "/runbook status\n", read(term2), "the next term gets only what is typed while it leads")

	// Read when the lease may have lapsed (woken from a pause): answered.
	lapsed.Store(true)
	say("/runbook approve r-3")
	answered("/runbook approve r-3", "this replica may no longer lead (it was paused or cut off from the store")
	lapsed.Store(false)

	// Read while the lease held, taken after it lapsed (the process was
	// stopped in between): answered, not run.
	say("/runbook approve r-5")
	require.Eventually(t, func() bool { s.cur.mu.Lock(); defer s.cur.mu.Unlock(); return len(s.cur.q) == 1 }, 5*time.Second, 5*time.Millisecond)
	lapsed.Store(true)
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 256)
		n, _ := term2.Read(buf)
		got <- string(buf[:n])
	}()
	answered("/runbook approve r-5", "this replica may no longer lead")
	lapsed.Store(false)
	say("/runbook help")
	select {
	case l := <-got:
		assert.Equal(t, "/runbook help\n", l, "the next line typed while it holds the lease runs")
	case <-time.After(5 * time.Second):
		t.Fatal("nothing read")
	}

	// A line that waited more than a minute for the term to take it is
	// answered when its turn comes; the next, fresh one runs.
	say("/runbook approve r-4")
	require.Eventually(t, func() bool { s.cur.mu.Lock(); defer s.cur.mu.Unlock(); return len(s.cur.q) == 1 }, 5*time.Second, 5*time.Millisecond)
	clock.add(61 * time.Second)
	say("/runbook list")
	assert.Equal(t, "/runbook list\n", read(term2))
	answered("/runbook approve r-4", "it was typed 1 min ago and waited too long (the limit is a minute)")
}
