package concourse

import (
	"encoding/json"
	"time"
)

// Info is GET /api/v1/info.
type Info struct {
	Version       string          `json:"version"`
	WorkerVersion string          `json:"worker_version"`
	ExternalURL   string          `json:"external_url,omitempty"`
	ClusterName   string          `json:"cluster_name,omitempty"`
	FeatureFlags  map[string]bool `json:"feature_flags,omitempty"`
}

// UserInfo is GET /api/v1/user: who the bot is logged in as.
type UserInfo struct {
	Sub           string              `json:"sub"`
	Name          string              `json:"name"`
	UserID        string              `json:"user_id"`
	UserName      string              `json:"user_name"`
	Email         string              `json:"email"`
	IsAdmin       bool                `json:"is_admin"`
	IsSystem      bool                `json:"is_system"`
	Teams         map[string][]string `json:"teams"`
	Connector     string              `json:"connector"`
	DisplayUserID string              `json:"display_user_id"`
}

// Worker states.
const (
	WorkerRunning  = "running"
	WorkerStalled  = "stalled"
	WorkerLanding  = "landing"
	WorkerLanded   = "landed"
	WorkerRetiring = "retiring"
)

// WorkerStates lists the states in the order results show them.
var WorkerStates = []string{WorkerRunning, WorkerStalled, WorkerLanding, WorkerLanded, WorkerRetiring}

// Worker is one entry of GET /api/v1/workers.
type Worker struct {
	Name             string   `json:"name"`
	State            string   `json:"state"`
	Team             string   `json:"team"`
	Platform         string   `json:"platform"`
	Tags             []string `json:"tags"`
	Version          string   `json:"version"`
	StartTime        int64    `json:"start_time"`
	Ephemeral        bool     `json:"ephemeral"`
	Addr             string   `json:"addr"`
	BaggageclaimURL  string   `json:"baggageclaim_url"`
	ActiveContainers int      `json:"active_containers"`
	ActiveVolumes    int      `json:"active_volumes"`
	ActiveTasks      int      `json:"active_tasks"`
}

// Started returns the worker's start time (zero when unknown).
func (w Worker) Started() time.Time { return unixTime(w.StartTime) }

// Build statuses.
const (
	StatusPending   = "pending"
	StatusStarted   = "started"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusErrored   = "errored"
	StatusAborted   = "aborted"
)

// BuildStatuses lists every build status.
var BuildStatuses = []string{StatusPending, StatusStarted, StatusSucceeded, StatusFailed, StatusErrored, StatusAborted}

// Build is atc.Build.
type Build struct {
	ID           int    `json:"id"`
	TeamName     string `json:"team_name"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	APIURL       string `json:"api_url,omitempty"`
	JobName      string `json:"job_name,omitempty"`
	ResourceName string `json:"resource_name,omitempty"`
	PipelineID   int    `json:"pipeline_id,omitempty"`
	PipelineName string `json:"pipeline_name,omitempty"`
	StartTime    int64  `json:"start_time,omitempty"`
	EndTime      int64  `json:"end_time,omitempty"`
	ReapTime     int64  `json:"reap_time,omitempty"`
	CreatedBy    string `json:"created_by,omitempty"`
	Comment      string `json:"comment,omitempty"`
}

// Running reports whether the build is pending or started.
func (b Build) Running() bool { return b.Status == StatusPending || b.Status == StatusStarted }

// Finished reports whether the build reached a final status.
func (b Build) Finished() bool { return !b.Running() }

// Started returns the start time (zero for builds that never started).
func (b Build) Started() time.Time { return unixTime(b.StartTime) }

// Ended returns the end time (zero while running).
func (b Build) Ended() time.Time { return unixTime(b.EndTime) }

// Ref returns "team/pipeline/job #name", or "team one-off #name".
func (b Build) Ref() string {
	switch {
	case b.PipelineName != "" && b.JobName != "":
		return b.TeamName + "/" + b.PipelineName + "/" + b.JobName + " #" + b.Name
	case b.PipelineName != "" && b.ResourceName != "":
		return b.TeamName + "/" + b.PipelineName + "/" + b.ResourceName + " check"
	}
	return b.TeamName + " one-off #" + b.Name
}

// Pipeline is atc.Pipeline.
type Pipeline struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	TeamName    string `json:"team_name"`
	Paused      bool   `json:"paused"`
	PausedBy    string `json:"paused_by,omitempty"`
	PausedAt    int64  `json:"paused_at,omitempty"`
	Public      bool   `json:"public"`
	Archived    bool   `json:"archived"`
	LastUpdated int64  `json:"last_updated"`
}

// Ref returns "team/pipeline".
func (p Pipeline) Ref() string { return p.TeamName + "/" + p.Name }

// Job is an entry of the jobs list (atc.JobSummary) or GET of one job.
type Job struct {
	ID            int    `json:"id"`
	Name          string `json:"name"`
	TeamName      string `json:"team_name"`
	PipelineID    int    `json:"pipeline_id"`
	PipelineName  string `json:"pipeline_name"`
	Paused        bool   `json:"paused,omitempty"`
	PausedBy      string `json:"paused_by,omitempty"`
	PausedAt      int64  `json:"paused_at,omitempty"`
	HasNewInputs  bool   `json:"has_new_inputs,omitempty"`
	FinishedBuild *Build `json:"finished_build"`
	NextBuild     *Build `json:"next_build"`
}

// Resource is an entry of GET .../resources.
type Resource struct {
	Name         string `json:"name"`
	Type         string `json:"type"`
	TeamName     string `json:"team_name"`
	PipelineID   int    `json:"pipeline_id"`
	PipelineName string `json:"pipeline_name"`
	// Build is the last check build, when there was one.
	Build *Build `json:"build,omitempty"`
}

// ResourceType is an entry of GET .../resource-types.
type ResourceType struct {
	Name   string         `json:"name"`
	Type   string         `json:"type"`
	Source map[string]any `json:"source,omitempty"`
}

// PipelineConfig is the pipeline's configuration (GET .../config).
type PipelineConfig struct {
	// Raw is the whole "config" object as JSON.
	Raw json.RawMessage
	// Version is the X-Concourse-Config-Version header.
	Version string
	Jobs    []JobConfig
}

// JobConfig is the part of a job's configuration groundcrew reads.
type JobConfig struct {
	Name   string           `json:"name"`
	Serial bool             `json:"serial,omitempty"`
	Plan   []map[string]any `json:"plan"`
}

func unixTime(s int64) time.Time {
	if s <= 0 {
		return time.Time{}
	}
	return time.Unix(s, 0)
}
