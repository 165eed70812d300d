package concoursesim

import (
	"fmt"
	"time"
)

// NewWorld returns a world with the users of the recordings: admin/admin
// (admin, owner of main) and alice/alice (no team). Add to it with the
// builder methods, which return the world for chaining:
//
//	w := concoursesim.NewWorld().
//		RunningWorkers("ci-worker", 3).
//		StalledWorker("ci-worker-0").
//		PendingBuilds("main", "app", "deploy", 300).
//		ErroredBuilds("main", "app", "unit", 4, "image fetching failed")
func NewWorld() *World {
	return &World{
		Users: []User{
			{Name: "admin", Password: "admin", Admin: true},
			{Name: "alice", Password: "alice"},
		},
	}
}

// AddUser adds a user with a role on each given team.
func (w *World) AddUser(name, password string, teams map[string]string) *World {
	w.Users = append(w.Users, User{Name: name, Password: password, Teams: teams})
	return w
}

// AddWorkers adds workers as given.
func (w *World) AddWorkers(ws ...Worker) *World {
	w.Workers = append(w.Workers, ws...)
	return w
}

// RunningWorkers adds n running global workers named prefix-0 … prefix-(n-1),
// 38 days old with a couple of hundred containers, like the manual's.
func (w *World) RunningWorkers(prefix string, n int) *World {
	for i := 0; i < n; i++ {
		w.Workers = append(w.Workers, Worker{
			Name: fmt.Sprintf("%s-%d", prefix, i), State: StateRunning,
			Containers: 226 + i, Volumes: 410 + i, Age: Duration(38 * 24 * time.Hour),
		})
	}
	return w
}

// StalledWorker makes the named worker stalled, adding it if needed.
func (w *World) StalledWorker(name string) *World {
	for i := range w.Workers {
		if w.Workers[i].Name == name {
			w.Workers[i].State = StateStalled
			return w
		}
	}
	w.Workers = append(w.Workers, Worker{Name: name, State: StateStalled, Containers: 236, Age: Duration(38 * 24 * time.Hour)})
	return w
}

// AddPipeline adds a pipeline (or replaces one with the same team and name).
func (w *World) AddPipeline(p Pipeline) *World {
	for i := range w.Pipelines {
		if w.Pipelines[i].Name == p.Name && teamOr(w.Pipelines[i].Team) == teamOr(p.Team) {
			w.Pipelines[i] = p
			return w
		}
	}
	w.Pipelines = append(w.Pipelines, p)
	return w
}

// AddBuilds adds builds as given.
func (w *World) AddBuilds(bs ...Build) *World {
	w.Builds = append(w.Builds, bs...)
	return w
}

// pipeline returns the declared pipeline, adding it (with team) if absent.
func (w *World) pipeline(team, name string) *Pipeline {
	for i := range w.Pipelines {
		if w.Pipelines[i].Name == name && teamOr(w.Pipelines[i].Team) == teamOr(team) {
			return &w.Pipelines[i]
		}
	}
	w.Pipelines = append(w.Pipelines, Pipeline{Name: name, Team: team})
	return &w.Pipelines[len(w.Pipelines)-1]
}

// job returns the pipeline's job, adding it if absent.
func (p *Pipeline) job(name string) *Job {
	for i := range p.Jobs {
		if p.Jobs[i].Name == name {
			return &p.Jobs[i]
		}
	}
	p.Jobs = append(p.Jobs, Job{Name: name})
	return &p.Jobs[len(p.Jobs)-1]
}

// PendingBuilds adds n pending builds of team/pipeline/job queued behind
// one long started build of the same serial job: the way a saturated
// Concourse looks (builds wait for the serial job, not for a worker).
func (w *World) PendingBuilds(team, pipeline, job string, n int) *World {
	p := w.pipeline(team, pipeline)
	j := p.job(job)
	j.Serial = true
	w.Builds = append(w.Builds,
		Build{Team: team, Pipeline: pipeline, Job: job, Status: StatusStarted, Age: Duration(3 * time.Hour), CreatedBy: "system"},
		Build{Team: team, Pipeline: pipeline, Job: job, Status: StatusPending, Count: n, Age: Duration(20 * time.Minute)},
	)
	return w
}

// ImageFetchLog is what a task prints when its image cannot be pulled
// (from the operations manual).
var ImageFetchLog = []string{
	"fetching docker-registry.example.com/internal/nix@sha256:3f4b9595bb7d4f259de01ff67fe30098e0586b2a1452f58ca6a8ac965f4b91e8",
	"ERRO[0000] download failed: get image: GET https://docker-registry.example.com/v2/internal/nix/manifests/sha256:3f4b9595bb7d4f259de01ff67fe30098e0586b2a1452f58ca6a8ac965f4b91e8: MANIFEST_UNKNOWN: manifest unknown; map[]",
}

// ErroredBuilds adds n errored builds of team/pipeline/job whose events end
// with an error event carrying message (e.g. "image fetching failed"). For
// image fetch errors the pipeline gets a registry-image resource type and
// the builds the registry error lines of the manual.
func (w *World) ErroredBuilds(team, pipeline, job string, n int, message string) *World {
	p := w.pipeline(team, pipeline)
	p.job(job)
	var log []string
	if message == "image fetching failed" {
		log = ImageFetchLog
		found := false
		for _, rt := range p.ResourceTypes {
			found = found || rt.Name == "registry-image"
		}
		if !found {
			p.ResourceTypes = append(p.ResourceTypes, ResourceType{
				Name: "registry-image", Type: "registry-image",
				Source: map[string]any{"repository": "docker-registry.example.com/internal/registry-image-resource"},
			})
		}
	}
	w.Builds = append(w.Builds, Build{
		Team: team, Pipeline: pipeline, Job: job, Status: StatusErrored, Count: n,
		Age: Duration(90 * time.Minute), Duration: Duration(20 * time.Second), Log: log, Error: message,
	})
	return w
}

// DemoWorld is the incident the demo walks through on target infra-prd:
// four workers of which caascad-ci-workers-infra-infra-prd-0 is stalled,
// 300 builds of deploy/caascad-alert-prepare pending behind a serial job,
// and errored builds with "image fetching failed" in two pipelines, next to
// healthy history.
func DemoWorld() *World {
	w := NewWorld().
		AddUser("groundcrew", "groundcrew", map[string]string{"main": RoleOwner, "deploy": RoleMember}).
		RunningWorkers("caascad-ci-workers-infra-infra-prd", 4).
		StalledWorker("caascad-ci-workers-infra-infra-prd-0")
	w.Workers[0].Containers = 236
	w.ClusterName = "infra-prd"
	w.AddPipeline(Pipeline{Name: "caascad-alert-prepare", Team: "deploy",
		Resources: []Resource{{Name: "repo", Type: "git", Caches: 3}, {Name: "alert-image", Type: "registry-image", Caches: 2}},
		Jobs:      []Job{{Name: "prepare", Tasks: []string{"render", "publish"}, TaskCaches: 2}},
	})
	w.AddPipeline(Pipeline{Name: "app", Team: "main",
		Resources: []Resource{{Name: "src", Type: "git", Caches: 4}},
		Jobs: []Job{
			{Name: "unit", Tasks: []string{"test"}, Duration: Duration(2 * time.Minute), Log: []string{"ok  app/... 12.3s"}},
			{Name: "build-image", Tasks: []string{"build"}},
		},
	})
	w.AddPipeline(Pipeline{Name: "docs", Team: "main", Jobs: []Job{{Name: "publish", Tasks: []string{"publish"}}}})
	w.AddBuilds(
		Build{Pipeline: "app", Job: "unit", Status: StatusSucceeded, Count: 40, Age: Duration(5 * time.Hour), Log: []string{"ok  app/... 12.3s"}},
		Build{Pipeline: "docs", Job: "publish", Status: StatusFailed, Count: 2, Age: Duration(2 * time.Hour), Log: []string{"error: broken link in index.md"}},
	)
	w.PendingBuilds("deploy", "caascad-alert-prepare", "prepare", 300)
	w.ErroredBuilds("main", "app", "build-image", 3, "image fetching failed")
	w.ErroredBuilds("main", "docs", "publish", 1, "image fetching failed")
	return w
}
