package concoursesim

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// World declares the simulator's initial state. It loads from YAML or JSON
// (LoadWorld) so that scenario files can declare it; times are relative to
// the simulator clock when the server starts ("age: 38d").
type World struct {
	// Version is reported by /api/v1/info and the X-Concourse-Version
	// header. Default "8.2.5".
	Version string `yaml:"version,omitempty" json:"version,omitempty"`
	// WorkerVersion is the worker version expected by the server. Default "3.0".
	WorkerVersion string `yaml:"worker_version,omitempty" json:"worker_version,omitempty"`
	// ClusterName is shown by /api/v1/info. Default "sim".
	ClusterName string `yaml:"cluster_name,omitempty" json:"cluster_name,omitempty"`
	// Users who may log in. An empty list gets admin/admin (admin).
	Users []User `yaml:"users,omitempty" json:"users,omitempty"`
	// Teams lists teams; teams named by users and pipelines exist anyway,
	// and "main" always does.
	Teams []string `yaml:"teams,omitempty" json:"teams,omitempty"`
	// StalledWorkerTimeout is the web node's --stalled-worker-timeout
	// (Concourse 8.3): the worker collector deletes a worker stalled longer
	// than that, at its next pass (every 30 s). 0 (the default) never.
	StalledWorkerTimeout Duration   `yaml:"stalled_worker_timeout,omitempty" json:"stalled_worker_timeout,omitempty"`
	Workers              []Worker   `yaml:"workers,omitempty" json:"workers,omitempty"`
	Pipelines            []Pipeline `yaml:"pipelines,omitempty" json:"pipelines,omitempty"`
	Builds               []Build    `yaml:"builds,omitempty" json:"builds,omitempty"`
}

// Roles, strongest first. A stronger role satisfies a weaker requirement.
const (
	RoleOwner            = "owner"
	RoleMember           = "member"
	RolePipelineOperator = "pipeline-operator"
	RoleViewer           = "viewer"
)

// User is a local user.
type User struct {
	Name     string `yaml:"name" json:"name"`
	Password string `yaml:"password" json:"password"`
	// Admin makes the user owner of the main team, i.e. a Concourse admin.
	Admin bool `yaml:"admin,omitempty" json:"admin,omitempty"`
	// Teams maps team name to role.
	Teams map[string]string `yaml:"teams,omitempty" json:"teams,omitempty"`
}

// IsAdmin reports whether the user is a Concourse admin: flagged so, or
// owner of the main team (the admin team), as in atc/api/accessor.
func (u User) IsAdmin() bool { return u.Admin || u.Teams["main"] == RoleOwner }

// Worker states.
const (
	StateRunning  = "running"
	StateStalled  = "stalled"
	StateLanding  = "landing"
	StateLanded   = "landed"
	StateRetiring = "retiring"
)

// Worker is a registered worker.
type Worker struct {
	Name string `yaml:"name" json:"name"`
	// State defaults to running.
	State string `yaml:"state,omitempty" json:"state,omitempty"`
	// Team is empty for global workers.
	Team       string   `yaml:"team,omitempty" json:"team,omitempty"`
	Containers int      `yaml:"containers,omitempty" json:"containers,omitempty"`
	Volumes    int      `yaml:"volumes,omitempty" json:"volumes,omitempty"`
	Platform   string   `yaml:"platform,omitempty" json:"platform,omitempty"`
	Tags       []string `yaml:"tags,omitempty" json:"tags,omitempty"`
	Version    string   `yaml:"version,omitempty" json:"version,omitempty"`
	// Age is how long ago the worker started. Default 24h.
	Age Duration `yaml:"age,omitempty" json:"age,omitempty"`
	// NoHeartbeat makes a running worker stop heartbeating at start: it
	// becomes stalled once the heartbeat TTL passes.
	NoHeartbeat bool `yaml:"no_heartbeat,omitempty" json:"no_heartbeat,omitempty"`
	// Ephemeral workers (concourse worker --ephemeral) are deleted by the
	// worker collector once their heartbeat expires, never listed stalled.
	Ephemeral bool `yaml:"ephemeral,omitempty" json:"ephemeral,omitempty"`
	// StalledFor is how long a stalled worker has been stalled at start
	// (for StalledWorkerTimeout). Default 0: it stalled just now.
	StalledFor Duration `yaml:"stalled_for,omitempty" json:"stalled_for,omitempty"`
}

// Pipeline is a pipeline with its jobs and resources.
type Pipeline struct {
	Name string `yaml:"name" json:"name"`
	// Team defaults to main.
	Team     string `yaml:"team,omitempty" json:"team,omitempty"`
	Paused   bool   `yaml:"paused,omitempty" json:"paused,omitempty"`
	Public   bool   `yaml:"public,omitempty" json:"public,omitempty"`
	Archived bool   `yaml:"archived,omitempty" json:"archived,omitempty"`
	// ID forces the pipeline id (default: next).
	ID            int            `yaml:"id,omitempty" json:"id,omitempty"`
	Jobs          []Job          `yaml:"jobs,omitempty" json:"jobs,omitempty"`
	Resources     []Resource     `yaml:"resources,omitempty" json:"resources,omitempty"`
	ResourceTypes []ResourceType `yaml:"resource_types,omitempty" json:"resource_types,omitempty"`
	// Config replaces the generated configuration returned by GET
	// .../config (use it to test nested plans).
	Config map[string]any `yaml:"config,omitempty" json:"config,omitempty"`
}

// Job is a pipeline job. Builds the simulator starts follow its settings.
type Job struct {
	Name string `yaml:"name" json:"name"`
	// Serial allows one started build at a time (max_in_flight: 1).
	Serial      bool `yaml:"serial,omitempty" json:"serial,omitempty"`
	MaxInFlight int  `yaml:"max_in_flight,omitempty" json:"max_in_flight,omitempty"`
	Paused      bool `yaml:"paused,omitempty" json:"paused,omitempty"`
	// Tasks are the task step names of the plan. Default ["run"].
	Tasks []string `yaml:"tasks,omitempty" json:"tasks,omitempty"`
	// Script is the shell script of the tasks (shown in start-task events).
	Script string `yaml:"script,omitempty" json:"script,omitempty"`
	// Duration is how long a started build runs; 0 runs until aborted.
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Result is the final status after Duration: succeeded (default),
	// failed or errored.
	Result string `yaml:"result,omitempty" json:"result,omitempty"`
	// Log lines each build prints; Error is the message of its error event.
	Log   []string `yaml:"log,omitempty" json:"log,omitempty"`
	Error string   `yaml:"error,omitempty" json:"error,omitempty"`
	// TaskCaches is the number of caches each task step holds.
	TaskCaches int `yaml:"task_caches,omitempty" json:"task_caches,omitempty"`
}

// Resource is a pipeline resource.
type Resource struct {
	Name string `yaml:"name" json:"name"`
	Type string `yaml:"type" json:"type"`
	// LastCheck is the status of a check build that already ran
	// (e.g. errored); empty means never checked.
	LastCheck string `yaml:"last_check,omitempty" json:"last_check,omitempty"`
	// CheckError makes checks end errored.
	CheckError bool `yaml:"check_error,omitempty" json:"check_error,omitempty"`
	// Caches is the number of cached versions clear-resource-cache removes.
	Caches int `yaml:"caches,omitempty" json:"caches,omitempty"`
}

// ResourceType is a custom resource type.
type ResourceType struct {
	Name   string         `yaml:"name" json:"name"`
	Type   string         `yaml:"type" json:"type"`
	Source map[string]any `yaml:"source,omitempty" json:"source,omitempty"`
	// CheckError makes its checks end errored with this message, as a real
	// server does when no worker offers the base type: "create resource
	// config: base resource type not found: registry-image".
	CheckError string `yaml:"check_error,omitempty" json:"check_error,omitempty"`
}

// Build statuses.
const (
	StatusPending   = "pending"
	StatusStarted   = "started"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusErrored   = "errored"
	StatusAborted   = "aborted"
)

// Build declares one build (or Count identical builds) of a job.
type Build struct {
	// ID forces the build id (default: next). With Count > 1, the ids
	// follow on.
	ID       int    `yaml:"id,omitempty" json:"id,omitempty"`
	Pipeline string `yaml:"pipeline" json:"pipeline"`
	Job      string `yaml:"job" json:"job"`
	// Team defaults to the pipeline's team (main).
	Team string `yaml:"team,omitempty" json:"team,omitempty"`
	// Status defaults to pending.
	Status string `yaml:"status,omitempty" json:"status,omitempty"`
	// Count repeats the build (default 1).
	Count int `yaml:"count,omitempty" json:"count,omitempty"`
	// Worker runs a started build (default: the first running worker).
	// A started build on a worker that is not running is stuck: its abort
	// never takes effect unless forced.
	Worker string `yaml:"worker,omitempty" json:"worker,omitempty"`
	// Age is how long ago the build was created (and started, unless
	// pending). Default 10m.
	Age Duration `yaml:"age,omitempty" json:"age,omitempty"`
	// Duration is how long a finished build ran (default 1m).
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty"`
	// Log lines and Error message of the build's events. Default: the job's.
	Log       []string `yaml:"log,omitempty" json:"log,omitempty"`
	Error     string   `yaml:"error,omitempty" json:"error,omitempty"`
	CreatedBy string   `yaml:"created_by,omitempty" json:"created_by,omitempty"`
}

// Duration is a time.Duration written as "90s", "40m", "36h" or "38d".
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "" {
		*d = 0
		return nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return fmt.Errorf("duration %q: days must be a whole number", s)
		}
		*d = Duration(time.Duration(days) * 24 * time.Hour)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: use a form such as 90s, 40m, 36h or 38d", s)
	}
	*d = Duration(v)
	return nil
}

// LoadWorld decodes a World from YAML or JSON, rejecting unknown fields.
func LoadWorld(data []byte) (World, error) {
	var w World
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&w); err != nil {
		return World{}, fmt.Errorf("decoding simulator world: %w", err)
	}
	return w, w.Validate()
}

// Validate checks references (builds to pipelines and jobs, states).
func (w World) Validate() error {
	var errs []error
	for i, p := range w.Pipelines {
		if p.Name == "" {
			errs = append(errs, fmt.Errorf("pipelines[%d]: name is empty", i))
		}
	}
	for i, wk := range w.Workers {
		switch wk.State {
		case "", StateRunning, StateStalled, StateLanding, StateLanded, StateRetiring:
		default:
			errs = append(errs, fmt.Errorf("workers[%d] %q: unknown state %q", i, wk.Name, wk.State))
		}
		if wk.Name == "" {
			errs = append(errs, fmt.Errorf("workers[%d]: name is empty", i))
		}
	}
	for i, b := range w.Builds {
		p, ok := w.findPipeline(b.Team, b.Pipeline)
		if !ok {
			errs = append(errs, fmt.Errorf("builds[%d]: pipeline %q (team %q) is not declared", i, b.Pipeline, b.Team))
			continue
		}
		if !hasJob(p, b.Job) {
			errs = append(errs, fmt.Errorf("builds[%d]: pipeline %s has no job %q", i, b.Pipeline, b.Job))
		}
		switch b.Status {
		case "", StatusPending, StatusStarted, StatusSucceeded, StatusFailed, StatusErrored, StatusAborted:
		default:
			errs = append(errs, fmt.Errorf("builds[%d]: unknown status %q", i, b.Status))
		}
	}
	return errors.Join(errs...)
}

// findPipeline finds a declared pipeline; an empty team matches any team.
func (w World) findPipeline(team, name string) (Pipeline, bool) {
	for _, p := range w.Pipelines {
		if p.Name == name && (team == "" || teamOr(p.Team) == team) {
			return p, true
		}
	}
	return Pipeline{}, false
}

func hasJob(p Pipeline, name string) bool {
	for _, j := range p.Jobs {
		if j.Name == name {
			return true
		}
	}
	return false
}

func teamOr(t string) string {
	if t == "" {
		return "main"
	}
	return t
}
