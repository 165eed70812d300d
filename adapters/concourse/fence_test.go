package concourse

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// lapsedLease is a leader lease that lapsed 5 s ago.
type lapsedLease struct{}

func (lapsedLease) HeldUntil() time.Time       { return time.Now().Add(-5 * time.Second) }
func (lapsedLease) CallTimeout() time.Duration { return 4 * time.Second }

// TestClient_FencedChangesAreNotSent (#35.3): under a lease that lapsed
// (a leader paused past it), a request that changes Concourse is not sent
// at all, and says why; reading still works.
func TestClient_FencedChangesAreNotSent(t *testing.T) {
	env := newSimEnv(t, concoursesim.NewWorld().RunningWorkers("w", 1).StalledWorker("w-0"), nil)
	ctx := opmodel.WithLease(context.Background(), lapsedLease{})
	_, err := env.c.Workers(ctx)
	require.NoError(t, err, "a read is not fenced")
	before := len(env.srv.Calls())
	err = env.c.PruneWorker(ctx, "w-0")
	require.ErrorIs(t, err, opmodel.ErrLeaseLapsed)
	assert.Contains(t, err.Error(), "not sent: the leader lease lapsed 5")
	for _, c := range env.srv.Calls()[before:] {
		assert.False(t, c.Method == "PUT" && strings.HasSuffix(c.Path, "/prune"), "no prune request reached Concourse: %+v", c)
	}
	_, ok := env.srv.Worker("w-0")
	assert.True(t, ok)
}
