package concoursesim

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"
)

// load builds the model from the world at now.
func (s *state) load(w World, now time.Time) error {
	if err := w.Validate(); err != nil {
		return err
	}
	s.version = or(w.Version, "8.2.5")
	s.workerVersion = or(w.WorkerVersion, "3.0")
	s.cluster = or(w.ClusterName, "sim")
	s.users, s.teams, s.tokens = map[string]User{}, map[string]int{}, map[string]token{}
	s.workers, s.byID, s.active = map[string]*simWorker{}, map[int]*simBuild{}, nil
	s.nextBuildID, s.nextPipelineID, s.nextJobID = 1, 1, 1
	s.lastSched = now
	s.gcStart = now
	s.stalledTimeout = w.StalledWorkerTimeout.D()
	s.addTeam("main")
	users := w.Users
	if len(users) == 0 {
		users = []User{{Name: "admin", Password: "admin", Admin: true}}
	}
	for _, u := range users {
		s.users[u.Name] = u
		for t := range u.Teams {
			s.addTeam(t)
		}
	}
	for _, t := range w.Teams {
		s.addTeam(t)
	}
	for i, wk := range w.Workers {
		age := wk.Age.D()
		if age == 0 {
			age = 24 * time.Hour
		}
		sw := &simWorker{
			name: wk.Name, state: or(wk.State, StateRunning), team: wk.Team,
			platform: or(wk.Platform, "linux"), version: or(wk.Version, s.workerVersion), tags: wk.Tags,
			start: now.Add(-age), containers: wk.Containers, volumes: wk.Volumes,
			addr:         net.JoinHostPort("10.0.4."+strconv.Itoa(10+i), "7777"),
			baggageclaim: "http://" + net.JoinHostPort("10.0.4."+strconv.Itoa(10+i), "7788"),
		}
		if sw.state == StateLanded {
			sw.addr, sw.baggageclaim = "", ""
		}
		if wk.NoHeartbeat {
			sw.hbStopped = now
		}
		sw.ephemeral = wk.Ephemeral
		if sw.state == StateStalled {
			sw.stalledSince = now.Add(-wk.StalledFor.D())
		}
		if wk.Team != "" {
			s.addTeam(wk.Team)
		}
		s.workers[wk.Name] = sw
	}
	for _, p := range w.Pipelines {
		s.addPipeline(p, now)
	}
	return s.loadBuilds(w, now)
}

func (s *state) addPipeline(p Pipeline, now time.Time) *simPipeline {
	team := teamOr(p.Team)
	s.addTeam(team)
	sp := &simPipeline{
		id: p.ID, name: p.Name, team: team, paused: p.Paused, public: p.Public, archived: p.Archived,
		lastUpdated: now.Add(-time.Hour), config: p.Config,
	}
	if sp.id == 0 {
		sp.id = s.nextPipelineID
	}
	if sp.id >= s.nextPipelineID {
		s.nextPipelineID = sp.id + 1
	}
	if p.Paused {
		sp.pausedBy, sp.pausedAt = "admin", now.Add(-time.Hour)
	}
	for _, j := range p.Jobs {
		if len(j.Tasks) == 0 {
			j.Tasks = []string{"run"}
		}
		sj := &simJob{id: s.nextJobID, p: sp, cfg: j, paused: j.Paused, caches: map[string]int{}}
		s.nextJobID++
		for _, t := range j.Tasks {
			sj.caches[t] = j.TaskCaches
		}
		sp.jobs = append(sp.jobs, sj)
	}
	for _, r := range p.Resources {
		sp.resources = append(sp.resources, &simResource{cfg: r, caches: r.Caches})
	}
	for _, rt := range p.ResourceTypes {
		sp.types = append(sp.types, &simResourceType{cfg: rt})
	}
	s.pipelines = append(s.pipelines, sp)
	return sp
}

type plannedBuild struct {
	id int
	b  Build
}

// loadBuilds creates the declared builds in id order, so that build names
// follow ids within each job.
func (s *state) loadBuilds(w World, now time.Time) error {
	var planned []plannedBuild
	used := map[int]bool{}
	next := 1
	for _, b := range w.Builds {
		for k := 0; k < max(b.Count, 1); k++ {
			if b.ID != 0 {
				used[b.ID+k] = true
			}
		}
	}
	for _, b := range w.Builds {
		for k := 0; k < max(b.Count, 1); k++ {
			id := 0
			if b.ID != 0 {
				id = b.ID + k
			} else {
				for used[next] {
					next++
				}
				id = next
				used[id] = true
			}
			planned = append(planned, plannedBuild{id: id, b: b})
		}
	}
	sort.SliceStable(planned, func(i, j int) bool { return planned[i].id < planned[j].id })
	for _, pb := range planned {
		if err := s.loadBuild(pb.id, pb.b, now); err != nil {
			return err
		}
	}
	// resources that were checked before the simulation started
	for _, p := range s.pipelines {
		for _, r := range p.resources {
			if r.cfg.LastCheck != "" {
				r.lastCheck = s.newCheckBuild(p, r.cfg.Name, true, now.Add(-5*time.Minute))
				r.lastCheck.status = r.cfg.LastCheck
				s.removeActive(r.lastCheck)
			}
		}
	}
	return nil
}

func (s *state) loadBuild(id int, b Build, now time.Time) error {
	var p *simPipeline
	for _, sp := range s.pipelines {
		if sp.name == b.Pipeline && (b.Team == "" || sp.team == b.Team) {
			p = sp
			break
		}
	}
	if p == nil {
		return fmt.Errorf("build %d: pipeline %q not found", id, b.Pipeline)
	}
	j := p.job(b.Job)
	age := b.Age.D()
	if age == 0 {
		age = 10 * time.Minute
	}
	dur := b.Duration.D()
	if dur == 0 {
		dur = time.Minute
	}
	log, errMsg := b.Log, b.Error
	if log == nil {
		log = j.cfg.Log
	}
	if errMsg == "" && b.Status == StatusErrored {
		errMsg = j.cfg.Error
	}
	sb := s.newBuild(&simBuild{
		id: id, team: p.team, p: p, j: j, status: StatusPending, createdBy: b.CreatedBy,
		created: now.Add(-age), log: log, errMsg: errMsg, result: jobResult(j.cfg),
	})
	created := sb.created
	switch status := or(b.Status, StatusPending); status {
	case StatusPending:
	case StatusAborted:
		if b.Worker != "" {
			s.startBuild(sb, b.Worker, created)
		}
		s.finish(sb, StatusAborted, minTime(created.Add(dur), now))
	default:
		s.startBuild(sb, s.defaultWorker(b.Worker), created)
		if status == StatusStarted {
			if d := j.cfg.Duration.D(); d > 0 {
				sb.finishAt = created.Add(d)
			}
			return nil
		}
		s.finish(sb, status, minTime(created.Add(dur), now))
	}
	return nil
}

func jobResult(j Job) string {
	switch {
	case j.Result != "":
		return j.Result
	case j.Error != "":
		return StatusErrored
	}
	return StatusSucceeded
}

// defaultWorker returns name, or the first running worker, or the first.
func (s *state) defaultWorker(name string) string {
	if name != "" {
		return name
	}
	names := make([]string, 0, len(s.workers))
	for n := range s.workers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if s.workers[n].state == StateRunning {
			return n
		}
	}
	if len(names) > 0 {
		return names[0]
	}
	return ""
}

// newCheckBuild creates a started check build of a resource or resource type.
func (s *state) newCheckBuild(p *simPipeline, name string, isResource bool, now time.Time) *simBuild {
	b := &simBuild{team: p.team, p: p, check: true, name: "check", status: StatusStarted, created: now, start: now}
	if isResource {
		b.resource = name
	}
	b = s.newBuild(b)
	b.planID = planID(strconv.Itoa(b.id), "check", name)
	b.finishAt = now.Add(s.checkDuration)
	s.emit(b, "status", "1.0", map[string]any{"status": StatusStarted, "time": now.Unix()})
	s.emit(b, "initialize-check", "1.0", map[string]any{"time": now.Unix(), "origin": origin(b.planID, ""), "name": name})
	b.result = StatusSucceeded
	return b
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
