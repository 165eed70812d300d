package concoursesim_test

import (
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
)

// The worlds below rebuild, moment by moment, the scenario the fixtures
// were recorded in (testdata/concourse, README of shared/concourse).

// t0 is close to the recordings' timestamps.
var t0 = time.Unix(1795979100, 0)

func demoPipeline() concoursesim.Pipeline {
	return concoursesim.Pipeline{
		ID: 1, Name: "demo", Team: "main",
		Jobs: []concoursesim.Job{
			{Name: "slow", Tasks: []string{"sleep"}, Script: "echo hello from houdini; sleep 20; echo done",
				Log: []string{"hello from houdini", "done"}, Duration: concoursesim.Duration(20 * time.Second)},
			{Name: "fail-image", Tasks: []string{"oops"}, Script: "echo 'image fetching failed' >&2; exit 1", Result: "failed"},
		},
	}
}

func alertPipeline() concoursesim.Pipeline {
	return concoursesim.Pipeline{
		ID: 2, Name: "caascad-alert-prepare", Team: "main",
		Resources: []concoursesim.Resource{
			{Name: "my-image", Type: "registry-image", LastCheck: "errored"},
			{Name: "repo", Type: "git", LastCheck: "errored"},
		},
		ResourceTypes: []concoursesim.ResourceType{{
			Name: "registry-image", Type: "registry-image",
			Source: map[string]any{"repository": "example.invalid/internal/registry-image-resource"},
		}},
	}
}

func baseWorld() *concoursesim.World {
	w := concoursesim.NewWorld()
	w.Version = "0.0.0-dev"
	w.ClusterName = "local"
	return w
}

// firstBuilds: builds 1 (slow, succeeded) and 2 (fail-image, failed).
func firstBuilds() []concoursesim.Build {
	return []concoursesim.Build{
		{ID: 1, Pipeline: "demo", Job: "slow", Status: "succeeded", CreatedBy: "admin", Worker: "worker-0",
			Age: concoursesim.Duration(66 * time.Second), Duration: concoursesim.Duration(20 * time.Second)},
		{ID: 2, Pipeline: "demo", Job: "fail-image", Status: "failed", CreatedBy: "admin", Worker: "worker-0",
			Age: concoursesim.Duration(66 * time.Second), Duration: concoursesim.Duration(time.Second)},
	}
}

// worldRan: one running worker, the first two builds finished.
func worldRan() *concoursesim.World {
	w := baseWorld().AddPipeline(demoPipeline())
	w.Workers = []concoursesim.Worker{{Name: "worker-0", Containers: 2, Volumes: 4, Age: concoursesim.Duration(104 * time.Second)}}
	return w.AddBuilds(firstBuilds()...)
}

// worldIncident: worker-0 landed, worker-1 stalled, builds 3–8 pending,
// and the caascad-alert-prepare pipeline with its errored checks.
func worldIncident() *concoursesim.World {
	w := baseWorld().AddPipeline(demoPipeline()).AddPipeline(alertPipeline())
	w.Workers = []concoursesim.Worker{
		{Name: "worker-0", State: "landed", Containers: 2, Volumes: 4},
		{Name: "worker-1", State: "stalled"},
	}
	w.AddBuilds(firstBuilds()...)
	w.AddBuilds(
		concoursesim.Build{ID: 3, Pipeline: "demo", Job: "slow", Count: 5, CreatedBy: "admin"},
		concoursesim.Build{ID: 8, Pipeline: "demo", Job: "fail-image", CreatedBy: "admin"},
	)
	return w
}

// worldLanding: worker-0 landing while a build still runs on it.
func worldLanding() *concoursesim.World {
	w := baseWorld().AddPipeline(demoPipeline())
	w.Workers = []concoursesim.Worker{
		{Name: "worker-0", State: "landing", Containers: 2, Volumes: 4},
		{Name: "worker-1"},
	}
	w.AddBuilds(firstBuilds()...)
	return w.AddBuilds(concoursesim.Build{ID: 3, Pipeline: "demo", Job: "slow", Status: "started", Worker: "worker-0",
		CreatedBy: "admin", Age: concoursesim.Duration(5 * time.Second)})
}

// worldStuck: builds 4–8 started on the stalled worker-1, 3 aborted.
func worldStuck() *concoursesim.World {
	w := baseWorld().AddPipeline(demoPipeline())
	w.Workers = []concoursesim.Worker{
		{Name: "worker-0", State: "landed", Containers: 2, Volumes: 4},
		{Name: "worker-1", State: "stalled"},
	}
	w.AddBuilds(firstBuilds()...)
	return w.AddBuilds(
		concoursesim.Build{ID: 3, Pipeline: "demo", Job: "slow", Status: "aborted", CreatedBy: "admin"},
		concoursesim.Build{ID: 4, Pipeline: "demo", Job: "slow", Status: "started", Count: 4, Worker: "worker-1", CreatedBy: "admin"},
		concoursesim.Build{ID: 8, Pipeline: "demo", Job: "fail-image", Status: "started", Worker: "worker-1", CreatedBy: "admin"},
	)
}

// worldQueue: the later scenario, a serial job `deploy` with a long
// started build and builds queued behind it. withLast adds build 1271.
func worldQueue(withLast bool) *concoursesim.World {
	w := baseWorld().AddPipeline(demoPipeline())
	w.AddPipeline(concoursesim.Pipeline{ID: 3, Name: "queue", Team: "main",
		Jobs: []concoursesim.Job{{Name: "deploy", Serial: true, Tasks: []string{"deploy"}}}})
	w.Workers = []concoursesim.Worker{
		{Name: "worker-2", Containers: 1, Volumes: 2},
		{Name: "worker-0", State: "landed", Containers: 2, Volumes: 4},
	}
	w.AddBuilds(
		concoursesim.Build{ID: 851, Pipeline: "queue", Job: "deploy", Status: "started", Worker: "worker-2", CreatedBy: "admin"},
		concoursesim.Build{ID: 852, Pipeline: "queue", Job: "deploy", Status: "aborted", Count: 400, CreatedBy: "admin"},
		concoursesim.Build{ID: 1264, Pipeline: "queue", Job: "deploy", Count: 5, CreatedBy: "admin"},
		concoursesim.Build{ID: 1269, Pipeline: "demo", Job: "slow", Count: 2, Status: "succeeded", CreatedBy: "admin"},
	)
	if withLast {
		w.AddBuilds(concoursesim.Build{ID: 1271, Pipeline: "queue", Job: "deploy", CreatedBy: "admin"})
	}
	return w
}

// worldNoWorkers: build 846 waits while no worker is running; the next
// scheduler tick starts it and it errors.
func worldNoWorkers() *concoursesim.World {
	w := baseWorld()
	w.AddPipeline(concoursesim.Pipeline{ID: 3, Name: "queue", Team: "main",
		Jobs: []concoursesim.Job{{Name: "deploy", Tasks: []string{"deploy"}}}})
	w.Workers = []concoursesim.Worker{{Name: "worker-0", State: "landed"}}
	return w.AddBuilds(concoursesim.Build{ID: 846, Pipeline: "queue", Job: "deploy", CreatedBy: "admin"})
}
