package concoursesim

import (
	"encoding/base64"
	"strconv"
	"time"
)

// JSON shapes, as Concourse presents them (atc/api/present).

type apiWorker struct {
	Addr             string   `json:"addr"`
	BaggageclaimURL  string   `json:"baggageclaim_url"`
	ActiveContainers int      `json:"active_containers"`
	ActiveVolumes    int      `json:"active_volumes"`
	ActiveTasks      int      `json:"active_tasks"`
	MaxActiveTasks   int      `json:"max_active_tasks"`
	ResourceTypes    []any    `json:"resource_types"`
	Platform         string   `json:"platform"`
	Tags             []string `json:"tags"`
	Team             string   `json:"team"`
	Name             string   `json:"name"`
	Version          string   `json:"version"`
	StartTime        int64    `json:"start_time"`
	Ephemeral        bool     `json:"ephemeral"`
	State            string   `json:"state"`
}

func presentWorker(w *simWorker) apiWorker {
	return apiWorker{
		Addr: w.addr, BaggageclaimURL: w.baggageclaim, ActiveContainers: w.containers,
		ActiveVolumes: w.volumes, Platform: w.platform, Tags: w.tags, Team: w.team, Name: w.name,
		Version: w.version, StartTime: unix(w.start), State: w.state, Ephemeral: w.ephemeral,
	}
}

type apiBuild struct {
	ID           int     `json:"id"`
	TeamName     string  `json:"team_name"`
	Name         string  `json:"name"`
	Status       string  `json:"status"`
	APIURL       string  `json:"api_url"`
	JobName      string  `json:"job_name,omitempty"`
	ResourceName string  `json:"resource_name,omitempty"`
	PipelineID   int     `json:"pipeline_id,omitempty"`
	PipelineName string  `json:"pipeline_name,omitempty"`
	StartTime    int64   `json:"start_time,omitempty"`
	EndTime      int64   `json:"end_time,omitempty"`
	CreatedBy    *string `json:"created_by,omitempty"`
}

func presentBuild(b *simBuild) apiBuild {
	out := apiBuild{
		ID: b.id, TeamName: b.team, Name: b.name, Status: b.status,
		APIURL: "/api/v1/builds/" + strconv.Itoa(b.id), ResourceName: b.resource,
		StartTime: unix(b.start), EndTime: unix(b.end),
	}
	if b.check {
		out.EndTime = 0 // in-memory check builds show no end time
	}
	if b.p != nil {
		out.PipelineID, out.PipelineName = b.p.id, b.p.name
	}
	if b.j != nil {
		out.JobName = b.j.cfg.Name
	}
	if b.createdBy != "" {
		cb := b.createdBy
		out.CreatedBy = &cb
	}
	return out
}

// apiBuildSummary is atc.BuildSummary (jobs list, resources list).
type apiBuildSummary struct {
	ID           int            `json:"id"`
	Name         string         `json:"name"`
	Status       string         `json:"status"`
	StartTime    int64          `json:"start_time,omitempty"`
	EndTime      int64          `json:"end_time,omitempty"`
	TeamName     string         `json:"team_name"`
	PipelineID   int            `json:"pipeline_id"`
	PipelineName string         `json:"pipeline_name"`
	JobName      string         `json:"job_name,omitempty"`
	Plan         map[string]any `json:"plan,omitempty"`
}

func presentSummary(b *simBuild) *apiBuildSummary {
	if b == nil {
		return nil
	}
	out := &apiBuildSummary{
		ID: b.id, Name: b.name, Status: b.status, StartTime: unix(b.start), EndTime: unix(b.end),
		TeamName: b.team, PipelineID: b.p.id, PipelineName: b.p.name,
	}
	if b.j != nil {
		out.JobName = b.j.cfg.Name
	}
	if b.check {
		out.EndTime = 0
	}
	return out
}

type apiPipeline struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	Paused      bool   `json:"paused"`
	PausedBy    string `json:"paused_by,omitempty"`
	PausedAt    int64  `json:"paused_at,omitempty"`
	Public      bool   `json:"public"`
	Archived    bool   `json:"archived"`
	TeamName    string `json:"team_name"`
	LastUpdated int64  `json:"last_updated"`
}

func presentPipeline(p *simPipeline) apiPipeline {
	return apiPipeline{
		ID: p.id, Name: p.name, Paused: p.paused, PausedBy: p.pausedBy, PausedAt: unix(p.pausedAt),
		Public: p.public, Archived: p.archived, TeamName: p.team, LastUpdated: unix(p.lastUpdated),
	}
}

// apiJobSummary is an entry of the jobs list (atc.JobSummary).
type apiJobSummary struct {
	ID              int              `json:"id"`
	Name            string           `json:"name"`
	TeamName        string           `json:"team_name"`
	PipelineID      int              `json:"pipeline_id"`
	PipelineName    string           `json:"pipeline_name"`
	Paused          bool             `json:"paused,omitempty"`
	PausedBy        string           `json:"paused_by,omitempty"`
	FinishedBuild   *apiBuildSummary `json:"finished_build,omitempty"`
	NextBuild       *apiBuildSummary `json:"next_build,omitempty"`
	TransitionBuild *apiBuildSummary `json:"transition_build,omitempty"`
}

// apiJob is GET of one job (atc.Job): next and finished builds are always
// present, possibly null.
type apiJob struct {
	ID            int       `json:"id"`
	Name          string    `json:"name"`
	TeamName      string    `json:"team_name"`
	PipelineID    int       `json:"pipeline_id"`
	PipelineName  string    `json:"pipeline_name"`
	Paused        bool      `json:"paused,omitempty"`
	FinishedBuild *apiBuild `json:"finished_build"`
	NextBuild     *apiBuild `json:"next_build"`
}

// jobBuilds returns the job's latest finished build, its oldest running
// build and the build where the current status streak began.
func (s *state) jobBuilds(j *simJob) (finished, next, transition *simBuild) {
	streak := true
	for i := len(s.builds) - 1; i >= 0; i-- {
		b := s.builds[i]
		switch {
		case b.j != j:
		case b.running():
			next = b
		case finished == nil:
			finished, transition = b, b
		case streak && b.status == finished.status:
			transition = b
		default:
			streak = false
		}
	}
	return finished, next, transition
}

func (s *state) presentJobSummary(j *simJob) apiJobSummary {
	finished, next, transition := s.jobBuilds(j)
	out := apiJobSummary{
		ID: j.id, Name: j.cfg.Name, TeamName: j.p.team, PipelineID: j.p.id, PipelineName: j.p.name,
		Paused: j.paused, FinishedBuild: presentSummary(finished), NextBuild: presentSummary(next),
		TransitionBuild: presentSummary(transition),
	}
	if j.paused {
		out.PausedBy = "admin"
	}
	return out
}

func (s *state) presentJob(j *simJob) apiJob {
	finished, next, _ := s.jobBuilds(j)
	out := apiJob{ID: j.id, Name: j.cfg.Name, TeamName: j.p.team, PipelineID: j.p.id, PipelineName: j.p.name, Paused: j.paused}
	if finished != nil {
		b := presentBuild(finished)
		out.FinishedBuild = &b
	}
	if next != nil {
		b := presentBuild(next)
		out.NextBuild = &b
	}
	return out
}

type apiResource struct {
	Name         string           `json:"name"`
	PipelineID   int              `json:"pipeline_id"`
	PipelineName string           `json:"pipeline_name"`
	TeamName     string           `json:"team_name"`
	Type         string           `json:"type"`
	Build        *apiBuildSummary `json:"build,omitempty"`
}

func presentResource(p *simPipeline, r *simResource) apiResource {
	out := apiResource{Name: r.cfg.Name, PipelineID: p.id, PipelineName: p.name, TeamName: p.team, Type: r.cfg.Type}
	if r.lastCheck != nil {
		out.Build = presentSummary(r.lastCheck)
		out.Build.Plan = map[string]any{"id": r.lastCheck.planID, "check": map[string]any{"name": r.cfg.Name, "type": r.cfg.Type}}
	}
	return out
}

type apiResourceType struct {
	Name   string         `json:"name"`
	Type   string         `json:"type"`
	Source map[string]any `json:"source,omitempty"`
}

// pipelineConfig returns the declared config, or one generated from jobs.
func pipelineConfig(p *simPipeline) map[string]any {
	if p.config != nil {
		return p.config
	}
	jobs := make([]any, 0, len(p.jobs))
	for _, j := range p.jobs {
		plan := make([]any, 0, len(j.cfg.Tasks))
		for _, t := range j.cfg.Tasks {
			script := j.cfg.Script
			if script == "" {
				script = "true"
			}
			plan = append(plan, map[string]any{
				"task":   t,
				"config": map[string]any{"platform": "linux", "run": map[string]any{"path": "sh", "args": []any{"-c", script}}},
			})
		}
		job := map[string]any{"name": j.cfg.Name, "plan": plan}
		if j.cfg.Serial {
			job["serial"] = true
		}
		if j.cfg.MaxInFlight > 0 {
			job["max_in_flight"] = j.cfg.MaxInFlight
		}
		jobs = append(jobs, job)
	}
	cfg := map[string]any{"jobs": jobs}
	if len(p.resources) > 0 {
		rs := make([]any, 0, len(p.resources))
		for _, r := range p.resources {
			rs = append(rs, map[string]any{"name": r.cfg.Name, "type": r.cfg.Type, "source": map[string]any{}})
		}
		cfg["resources"] = rs
	}
	if len(p.types) > 0 {
		ts := make([]any, 0, len(p.types))
		for _, t := range p.types {
			ts = append(ts, map[string]any{"name": t.cfg.Name, "type": t.cfg.Type, "source": t.cfg.Source})
		}
		cfg["resource_types"] = ts
	}
	return cfg
}

type apiUser struct {
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

func presentUser(u User) apiUser {
	teams := map[string][]string{}
	for t, r := range u.Teams {
		teams[t] = []string{r}
	}
	if u.Admin {
		teams["main"] = []string{RoleOwner}
	}
	// dex's sub is the protobuf of (user id, connector id)
	raw := append([]byte{0x0a, byte(len(u.Name))}, u.Name...)
	raw = append(raw, 0x12, 5)
	raw = append(raw, "local"...)
	return apiUser{
		Sub: base64.RawURLEncoding.EncodeToString(raw), Name: u.Name, UserID: u.Name, Email: u.Name,
		IsAdmin: u.IsAdmin(), Teams: teams, Connector: "local", DisplayUserID: u.Name,
	}
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}
