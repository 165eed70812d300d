package main

import (
	"context"
	"io"
	"strings"
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
	s := newStandbyInput(pr, &out, func() string { return leader.Load().(string) })
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
