package bot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type countingGroups struct {
	calls   int
	members []string
	err     error
}

func (g *countingGroups) GroupMembers(context.Context, string) ([]string, error) {
	g.calls++
	if g.err != nil {
		return nil, g.err
	}
	return g.members, nil
}

// TestDirectory_GroupCache: the engine's directory is the one group cache:
// members are asked once per TTL, and a stale list (up to a day) answers
// when the platform cannot be reached.
func TestDirectory_GroupCache(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	g := &countingGroups{members: []string{"UBOB", "UCAROL"}}
	d := directory{groups: g, ttl: 10 * time.Minute, now: func() time.Time { return now }, ids: map[string]idEntry{}, members: map[string]groupEntry{}}
	ctx := context.Background()
	for _, u := range []string{"UBOB", "UCAROL", "UDAVE"} {
		in, err := d.Member(ctx, "ci-oncall", u)
		require.NoError(t, err)
		assert.Equal(t, u != "UDAVE", in, u)
	}
	assert.Equal(t, 1, g.calls, "members cached")

	g.members = []string{"UBOB", "UCAROL", "UDAVE"}
	now = now.Add(9 * time.Minute)
	in, _ := d.Member(ctx, "ci-oncall", "UDAVE")
	assert.False(t, in, "still cached")
	now = now.Add(2 * time.Minute)
	in, _ = d.Member(ctx, "ci-oncall", "UDAVE")
	assert.True(t, in, "looked up again after the TTL")
	assert.Equal(t, 2, g.calls)

	g.err = errors.New("slack is down")
	now = now.Add(11 * time.Minute)
	in, err := d.Member(ctx, "ci-oncall", "UDAVE")
	require.NoError(t, err, "stale list served when the platform fails")
	assert.True(t, in)
	now = now.Add(25 * time.Hour)
	_, err = d.Member(ctx, "ci-oncall", "UDAVE")
	assert.Error(t, err, "not older than a day")
}
