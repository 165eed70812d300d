package concoursesim

import (
	"fmt"
	"sort"
	"time"
)

// WorkerState is a snapshot of a worker for test assertions.
type WorkerState struct {
	Name, State, Team string
	Containers        int
}

// BuildState is a snapshot of a build for test assertions.
type BuildState struct {
	ID                        int
	Team, Pipeline, Job, Name string
	Status, Worker            string
	AbortRequested            bool
	Start, End                time.Time
	Check                     bool
	ResourceName              string
}

// PipelineState is a snapshot of a pipeline for test assertions.
type PipelineState struct {
	ID                       int
	Team, Name               string
	Paused, Public, Archived bool
}

// view runs fn under the state lock after applying due transitions.
func (s *Server) view(fn func(st *state)) {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.advance(s.st.clock.Now())
	fn(s.st)
}

// Now returns the simulator clock's time.
func (s *Server) Now() time.Time { return s.st.clock.Now() }

// Workers returns every worker, sorted by name.
func (s *Server) Workers() []WorkerState {
	var out []WorkerState
	s.view(func(st *state) {
		for _, w := range st.workers {
			out = append(out, WorkerState{Name: w.name, State: w.state, Team: w.team, Containers: w.containers})
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Worker returns one worker; ok is false once it is pruned or retired.
func (s *Server) Worker(name string) (WorkerState, bool) {
	for _, w := range s.Workers() {
		if w.Name == name {
			return w, true
		}
	}
	return WorkerState{}, false
}

func buildState(b *simBuild) BuildState {
	bs := BuildState{
		ID: b.id, Team: b.team, Name: b.name, Status: b.status, Worker: b.worker,
		AbortRequested: b.abortRequested, Start: b.start, End: b.end, Check: b.check, ResourceName: b.resource,
	}
	if b.p != nil {
		bs.Pipeline = b.p.name
	}
	if b.j != nil {
		bs.Job = b.j.cfg.Name
	}
	return bs
}

// Build returns one build.
func (s *Server) Build(id int) (BuildState, bool) {
	var out BuildState
	var ok bool
	s.view(func(st *state) {
		if b := st.byID[id]; b != nil {
			out, ok = buildState(b), true
		}
	})
	return out, ok
}

// Builds returns every build (check builds included), ascending by id.
func (s *Server) Builds() []BuildState {
	var out []BuildState
	s.view(func(st *state) {
		out = make([]BuildState, 0, len(st.builds))
		for _, b := range st.builds {
			out = append(out, buildState(b))
		}
	})
	return out
}

// CountBuilds counts job builds by status, for pipeline ("" = all).
func (s *Server) CountBuilds(pipeline string) map[string]int {
	out := map[string]int{}
	for _, b := range s.Builds() {
		if !b.Check && (pipeline == "" || b.Pipeline == pipeline) {
			out[b.Status]++
		}
	}
	return out
}

// Pipeline returns one pipeline.
func (s *Server) Pipeline(team, name string) (PipelineState, bool) {
	var out PipelineState
	var ok bool
	s.view(func(st *state) {
		if p := st.pipeline(team, name); p != nil {
			out = PipelineState{ID: p.id, Team: p.team, Name: p.name, Paused: p.paused, Public: p.public, Archived: p.archived}
			ok = true
		}
	})
	return out, ok
}

// ResourceCaches returns the number of cached versions of a resource.
func (s *Server) ResourceCaches(team, pipeline, resource string) int {
	n := -1
	s.view(func(st *state) {
		if p := st.pipeline(team, pipeline); p != nil {
			for _, r := range p.resources {
				if r.cfg.Name == resource {
					n = r.caches
				}
			}
		}
	})
	return n
}

// StopHeartbeat makes a worker stop heartbeating now, as if its process
// or VM died: it becomes stalled once the heartbeat TTL passes.
func (s *Server) StopHeartbeat(name string) error {
	var err error
	s.view(func(st *state) {
		w := st.workers[name]
		if w == nil {
			err = fmt.Errorf("simulator: no worker %q", name)
			return
		}
		w.hbStopped = st.clock.Now()
	})
	return err
}

// ResumeHeartbeat makes a worker heartbeat again: a stalled worker comes
// back running (landing, landed and retiring workers keep their state), or
// registers again as running if it was pruned.
func (s *Server) ResumeHeartbeat(name string) {
	s.view(func(st *state) {
		w := st.workers[name]
		if w == nil {
			now := st.clock.Now()
			st.workers[name] = &simWorker{name: name, state: StateRunning, platform: "linux",
				version: st.workerVersion, start: now, addr: "10.0.4.99:7777", baggageclaim: "http://10.0.4.99:7788"}
			return
		}
		w.hbStopped, w.stalledSince = time.Time{}, time.Time{}
		if w.state == StateStalled {
			w.state = StateRunning
		}
	})
}

// AddBuilds adds builds at run time; their pipelines and jobs must exist.
func (s *Server) AddBuilds(bs ...Build) error {
	var err error
	s.view(func(st *state) {
		now := st.clock.Now()
		for _, b := range bs {
			for k := 0; k < max(b.Count, 1); k++ {
				id := 0
				if b.ID != 0 {
					id = b.ID + k
				}
				if id == 0 {
					id = st.nextBuildID
				}
				if e := st.loadBuild(id, b, now); e != nil {
					err = e
					return
				}
			}
		}
	})
	return err
}

// RemoveWorker deletes a worker as Concourse's own worker collector does
// (a stalled worker past --stalled-worker-timeout, an ephemeral worker that
// stopped heartbeating): the row is gone, no API request was made.
func (s *Server) RemoveWorker(name string) error {
	var err error
	s.view(func(st *state) {
		if st.workers[name] == nil {
			err = fmt.Errorf("simulator: no worker %q", name)
			return
		}
		delete(st.workers, name)
	})
	return err
}

// FinishBuilds ends every pending or started build of team/pipeline (job
// "" = every job) with status, as if someone aborted them with fly or they
// ran to the end. It returns how many builds it ended.
func (s *Server) FinishBuilds(team, pipeline, job, status string) (int, error) {
	switch status {
	case StatusSucceeded, StatusFailed, StatusErrored, StatusAborted:
	default:
		return 0, fmt.Errorf("simulator: %q is not a finished build status (succeeded, failed, errored, aborted)", status)
	}
	n := 0
	var err error
	s.view(func(st *state) {
		p := st.pipeline(team, pipeline)
		if p == nil {
			err = fmt.Errorf("simulator: no pipeline %s/%s", team, pipeline)
			return
		}
		for _, b := range st.activeSorted() {
			if b.p == p && (job == "" || (b.j != nil && b.j.cfg.Name == job)) {
				st.finish(b, status, st.clock.Now())
				n++
			}
		}
	})
	return n, err
}

// DestroyPipeline deletes a pipeline with its jobs, resources and builds,
// as fly destroy-pipeline does.
func (s *Server) DestroyPipeline(team, name string) error {
	var err error
	s.view(func(st *state) {
		p := st.pipeline(team, name)
		if p == nil {
			err = fmt.Errorf("simulator: no pipeline %s/%s", team, name)
			return
		}
		for i, x := range st.pipelines {
			if x == p {
				st.pipelines = append(st.pipelines[:i], st.pipelines[i+1:]...)
				break
			}
		}
		kept := st.builds[:0]
		for _, b := range st.builds {
			if b.p == p {
				st.removeActive(b)
				delete(st.byID, b.id)
				continue
			}
			kept = append(kept, b)
		}
		st.builds = kept
	})
	return err
}

// SetRole gives user role on team (fly set-team, as an operator would),
// or takes their role away with role "": the teams' auth config (GET
// /api/v1/teams) and what the user may do change at once.
func (s *Server) SetRole(user, team, role string) error {
	if role != "" && roleRank[role] == 0 {
		return fmt.Errorf("no role %q (owner, member, pipeline-operator, viewer)", role)
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	u, ok := s.st.users[user]
	if !ok {
		return fmt.Errorf("no user %q", user)
	}
	teams := map[string]string{}
	for t, r := range u.Teams {
		teams[t] = r
	}
	if role == "" {
		delete(teams, team)
	} else {
		teams[team] = role
		s.st.addTeam(team)
	}
	u.Teams = teams
	s.st.users[user] = u
	return nil
}
