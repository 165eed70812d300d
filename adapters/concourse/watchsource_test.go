package concourse

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// A watch poll after the first reads only what changed: the builds newer
// than the last poll and the pending ones it knows, not the window's
// history (issue 26 §5).
func TestWatchSource_CollectsIncrementally(t *testing.T) {
	w := concoursesim.NewWorld().RunningWorkers("w", 2)
	w.AddPipeline(concoursesim.Pipeline{Name: "app", Jobs: []concoursesim.Job{{Name: "unit"}}})
	w.AddPipeline(concoursesim.Pipeline{Name: "queue", Jobs: []concoursesim.Job{{Name: "deploy", Serial: true}}})
	w.AddBuilds(concoursesim.Build{Pipeline: "app", Job: "unit", Status: "succeeded", Count: 3000, Age: concoursesim.Duration(2 * time.Hour)},
		concoursesim.Build{Pipeline: "queue", Job: "deploy", Status: "pending", Count: 40})
	env := newDigestEnv(t, w, concoursesim.WithAbortDelay(0), concoursesim.WithSchedulerInterval(time.Hour))
	src := NewWatchSource(env.source(t, DigestOptions{PageSize: 500}))
	ctx := context.Background()

	d, err := src.Collect(ctx, "infra-prd", nil, 24*time.Hour, nil)
	require.NoError(t, err)
	assert.Equal(t, 40, d.Builds.Count("pending"))
	require.NotEmpty(t, d.Builds.PendingByPipeline)
	assert.Equal(t, "queue", d.Builds.PendingByPipeline[0].Pipeline)
	assert.GreaterOrEqual(t, env.srv.CountCalls("GET", "/api/v1/builds"), 6, "the first poll reads the window")

	// Between polls: 5 new pending builds, 10 of the known ones aborted.
	require.NoError(t, env.srv.AddBuilds(concoursesim.Build{Pipeline: "queue", Job: "deploy", Status: "pending", Count: 5}))
	var known []int
	for _, b := range env.srv.Builds() {
		if b.Status == "pending" && len(known) < 10 {
			known = append(known, b.ID)
		}
	}
	for _, id := range known {
		require.NoError(t, env.c.AbortBuild(ctx, id, false))
	}
	env.clock.Advance(time.Second)
	env.srv.ResetCalls()
	d, err = src.Collect(ctx, "infra-prd", nil, 24*time.Hour, nil)
	require.NoError(t, err)
	assert.Equal(t, 35, d.Builds.Count("pending"))
	assert.Equal(t, 1, env.srv.CountCalls("GET", "/api/v1/builds"), "one page of new builds")
	assert.Equal(t, 1, env.srv.CountCalls("GET", "/api/v1/teams/main/pipelines/queue/builds"), "one page for the known pending builds")
	assert.Zero(t, env.srv.CountCalls("GET", "/api/v1/builds/*"))
	assert.Equal(t, 3, len(env.srv.Calls()), "workers, new builds, pending builds")
	assert.False(t, d.Builds.PendingSince.IsZero())
	assert.False(t, d.Builds.PendingSince.After(digestStart), "the oldest was queued before the first poll")
}
