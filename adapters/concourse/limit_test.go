package concourse

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// fill takes every slot the limiter allows, as a bulk call does.
func fill(t *testing.T, l *limiter) {
	t.Helper()
	for l.inflight < l.allowed() {
		require.NoError(t, l.acquire(context.Background()))
	}
}

func TestLimiter_GrowsWhileAnswersStayFast(t *testing.T) {
	l := newAdaptiveLimiter(32)
	assert.Equal(t, 8, l.allowed(), "starts at 8")
	for range 2000 {
		fill(t, l)
		l.observe(time.Now(), 20*time.Millisecond, false)
		l.release()
	}
	assert.Equal(t, 32, l.allowed(), "up to the cap, never beyond")

	idle := newAdaptiveLimiter(32)
	for range 2000 {
		require.NoError(t, idle.acquire(context.Background()))
		idle.observe(time.Now(), 20*time.Millisecond, false)
		idle.release()
	}
	assert.Equal(t, 8, idle.allowed(), "a limit that is not used does not grow")
}

func TestLimiter_BacksOffOncePerRoundTrip(t *testing.T) {
	l := newAdaptiveLimiter(64)
	l.limit = 40
	sent := time.Now()
	l.observe(sent, 20*time.Millisecond, false)
	l.observe(sent, 100*time.Millisecond, false) // latency rose: queueing
	assert.Equal(t, 36, l.allowed(), "a tenth down")
	l.observe(sent, 100*time.Millisecond, false)
	assert.Equal(t, 36, l.allowed(), "requests sent before the decrease do not count again")
	l.observe(time.Now(), 20*time.Millisecond, true) // a 5xx
	assert.Equal(t, 18, l.allowed(), "an error halves it")
	assert.Equal(t, 20*time.Millisecond, l.floor, "errors and slow answers do not move the floor")
	for range 20 {
		l.observe(time.Now(), time.Second, true)
	}
	assert.Equal(t, 1, l.allowed(), "never below one")
	assert.Equal(t, 1, newAdaptiveLimiter(1).allowed(), "a cap below 8 is where it starts")

	f := newFixedLimiter(8)
	f.observe(time.Now(), time.Second, true)
	assert.Equal(t, 8, f.allowed(), "WithConcurrency does not adapt")
}

// The client feeds every answer to the limit: 503s from a struggling web
// node shrink it.
func TestClient_LimitBacksOffOn5xx(t *testing.T) {
	env := newSimEnv(t, stuckWorld(), nil)
	assert.Equal(t, LimitStats{Limit: 8, Max: DefaultMaxInFlight, Peak: 8, Adaptive: true}, env.c.LimitStats())
	env.srv.InjectFault(concoursesim.Fault{Method: "PUT", Path: "/api/v1/builds/*", Status: 503, Times: 100})
	var ids []int
	for _, b := range env.srv.Builds() {
		ids = append(ids, b.ID)
	}
	env.c.AbortBuilds(context.Background(), ids, AbortOptions{})
	st := env.c.LimitStats()
	assert.Less(t, st.Limit, 8)
	assert.Positive(t, st.Decreases)
}

func TestTargetConfig_MaxInFlight(t *testing.T) {
	c, err := New(TargetConfig{Name: "x", URL: "https://ci", MaxInFlight: 64})
	require.NoError(t, err)
	assert.Equal(t, 64, c.LimitStats().Max)
	c, err = New(TargetConfig{Name: "x", URL: "https://ci"})
	require.NoError(t, err)
	assert.Equal(t, DefaultMaxInFlight, c.LimitStats().Max)
	_, err = New(TargetConfig{Name: "x", URL: "https://ci", MaxInFlight: 1000})
	assert.ErrorContains(t, err, `target "x": max_in_flight 1000 is out of range: use 1 to 256`)
}
