package opmodel

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testLease is a lease held until a moment the test sets.
type testLease struct {
	mu      sync.Mutex
	until   time.Time
	timeout time.Duration
}

func (l *testLease) HeldUntil() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

func (l *testLease) CallTimeout() time.Duration { return l.timeout }

func (l *testLease) set(until time.Time) {
	l.mu.Lock()
	l.until = until
	l.mu.Unlock()
}

func TestHold_RefusesUnlessTheLeaseOutlastsACall(t *testing.T) {
	l := &testLease{timeout: time.Second}
	ctx := WithLease(context.Background(), l)
	cases := []struct {
		name  string
		until time.Time
		want  string
	}{
		{"not leading", time.Time{}, "does not lead any more"},
		{"lapsed (paused past the lease)", time.Now().Add(-5 * time.Second), "the leader lease lapsed 5"},
		{"held for less than a call", time.Now().Add(500 * time.Millisecond), "less than the call may take (1s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l.set(c.until)
			_, _, err := Hold(ctx)
			require.ErrorIs(t, err, ErrLeaseLapsed)
			assert.Contains(t, err.Error(), c.want)
			_, _, err = Guard(ctx, 10*time.Second)
			require.ErrorIs(t, err, ErrLeaseLapsed, "each request is refused the same way")
		})
	}

	// Held long enough: the call goes, and without a lease nothing is fenced.
	l.set(time.Now().Add(3 * time.Second))
	cctx, release, err := Hold(ctx)
	require.NoError(t, err)
	release()
	assert.Error(t, cctx.Err())
	plain, release, err := Hold(context.Background())
	require.NoError(t, err)
	release()
	assert.NoError(t, plain.Err(), "no lease, no fence")
}

// TestHold_CallEndsWhenTheLeaseWouldLapse: the call's context lives on
// while the lease is renewed and ends, with why, when it is not.
func TestHold_CallEndsWhenTheLeaseWouldLapse(t *testing.T) {
	l := &testLease{timeout: 50 * time.Millisecond}
	l.set(time.Now().Add(150 * time.Millisecond))
	cctx, release, err := Hold(WithLease(context.Background(), l))
	require.NoError(t, err)
	defer release()
	for range 3 { // renewed three times: the call goes on
		time.Sleep(100 * time.Millisecond)
		require.NoError(t, cctx.Err())
		l.set(time.Now().Add(150 * time.Millisecond))
	}
	select {
	case <-cctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the call's context outlived the lease")
	}
	var lapsed *LapsedError
	require.True(t, errors.As(context.Cause(cctx), &lapsed), "cause: %v", context.Cause(cctx))
	assert.ErrorIs(t, context.Cause(cctx), ErrLeaseLapsed)

	// A request's context ends at the lease's end as it is when it is sent.
	l.set(time.Now().Add(time.Second))
	rctx, cancel, err := Guard(WithLease(context.Background(), l), 30*time.Second)
	require.NoError(t, err, "a request that may take 30 s needs only the lease's call timeout")
	defer cancel()
	d, ok := rctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, l.HeldUntil(), d, time.Millisecond)
}
