package concoursesim

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Clock is the simulator's notion of now. Transitions (stalling, abort
// delays, build durations, scheduler ticks) happen when a request observes
// that their time has come, so a ManualClock makes tests deterministic.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

// Now implements Clock.
func (realClock) Now() time.Time { return time.Now() }

// ManualClock is a Clock that moves only when told. Safe for concurrent use.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock stopped at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now implements Clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type simWorker struct {
	name, state, team, platform, version string
	tags                                 []string
	start                                time.Time
	containers, volumes                  int
	addr, baggageclaim                   string
	hbStopped                            time.Time // zero: heartbeating
	stalledSince                         time.Time // when it stalled (stalled_since)
	ephemeral                            bool
}

type simPipeline struct {
	id               int
	name, team       string
	paused           bool
	pausedBy         string
	pausedAt         time.Time
	public, archived bool
	lastUpdated      time.Time
	jobs             []*simJob
	resources        []*simResource
	types            []*simResourceType
	config           map[string]any
}

type simJob struct {
	id       int
	p        *simPipeline
	cfg      Job
	paused   bool
	nextName int
	caches   map[string]int // task step -> caches
}

type simResource struct {
	cfg       Resource
	caches    int
	lastCheck *simBuild
}

type simResourceType struct {
	cfg       ResourceType
	lastCheck *simBuild
}

type simEvent struct {
	typ, version string
	data         map[string]any
}

type simBuild struct {
	id             int
	name, team     string
	p              *simPipeline
	j              *simJob
	resource       string // check builds of a resource
	check          bool
	status         string
	createdBy      string
	worker         string
	created, start time.Time
	end            time.Time
	abortRequested bool
	abortAt        time.Time
	finishAt       time.Time // zero: runs until aborted
	lostContainer  bool      // was started on a worker that stalled
	result         string
	log            []string
	errMsg         string
	events         []simEvent
	planID         string
}

func (b *simBuild) running() bool { return b.status == StatusPending || b.status == StatusStarted }

// state is the world model. Every field is guarded by mu.
type state struct {
	mu            sync.Mutex
	clock         Clock
	version       string
	workerVersion string
	cluster       string
	abortDelay    time.Duration
	abortRate     float64   // aborted pending builds finished per second (0: unlimited)
	abortNext     time.Time // when the scheduler may finish the next one at abortRate
	heartbeatTTL  time.Duration
	// stalledTimeout is --stalled-worker-timeout (0: never); the worker
	// collector passes every gcInterval from gcStart.
	stalledTimeout time.Duration
	gcStart        time.Time
	schedInterval  time.Duration
	checkDuration  time.Duration
	tokenTTL       time.Duration
	// workerCacheLag is how long GET /api/v1/workers still lists a pruned
	// worker (the web node's worker cache, atc/db/worker_cache.go).
	workerCacheLag time.Duration
	// cachedPruned are pruned workers the worker cache still lists, with
	// the time they were pruned.
	cachedPruned map[string]cachedWorker

	users     map[string]User
	teams     map[string]int
	tokens    map[string]token
	workers   map[string]*simWorker
	pipelines []*simPipeline
	builds    []*simBuild // ascending id
	byID      map[int]*simBuild
	active    []*simBuild // pending or started, ascending id

	nextBuildID, nextPipelineID, nextJobID int
	lastSched                              time.Time
}

type cachedWorker struct {
	w  simWorker
	at time.Time
}

type token struct {
	user    string
	expires time.Time
}

func (s *state) team(name string) (int, bool) {
	id, ok := s.teams[name]
	return id, ok
}

func (s *state) addTeam(name string) {
	if _, ok := s.teams[name]; !ok {
		s.teams[name] = len(s.teams) + 1
	}
}

func (s *state) pipeline(team, name string) *simPipeline {
	for _, p := range s.pipelines {
		if p.team == team && p.name == name {
			return p
		}
	}
	return nil
}

func (p *simPipeline) job(name string) *simJob {
	for _, j := range p.jobs {
		if j.cfg.Name == name {
			return j
		}
	}
	return nil
}

// abortTime is when an abort requested at now reaches the ATC's
// scheduler (a pending build) or build tracker (a started one): after the
// abort delay. A pending build then still waits its turn: see startPending.
func (s *state) abortTime(now time.Time) time.Time { return now.Add(s.abortDelay) }

// stuck reports whether a started build is on a worker that cannot make
// progress (stalled, landed or gone). Landing and retiring workers still
// run their builds.
func (s *state) stuck(b *simBuild) bool {
	if b.status != StatusStarted || b.worker == "" {
		return false
	}
	w, ok := s.workers[b.worker]
	return !ok || (w.state != StateRunning && w.state != StateLanding && w.state != StateRetiring)
}

// advance applies every transition due at now.
func (s *state) advance(now time.Time) {
	for name, w := range s.workers {
		if w.state == StateRunning && !w.hbStopped.IsZero() && now.After(w.hbStopped.Add(s.heartbeatTTL)) {
			expired := w.hbStopped.Add(s.heartbeatTTL)
			if w.ephemeral {
				// the collector deletes an ephemeral worker whose heartbeat
				// expired at its next pass; it is never listed stalled
				if !now.Before(s.gcAfter(expired)) {
					delete(s.workers, name)
				}
				continue
			}
			w.state, w.stalledSince = StateStalled, expired
		}
		if w.state == StateStalled && (w.ephemeral || s.stalledTimeout > 0) {
			due := w.stalledSince
			if !w.ephemeral {
				due = due.Add(s.stalledTimeout)
			}
			if !now.Before(s.gcAfter(due)) {
				delete(s.workers, name) // DeleteStalledWorkers (--stalled-worker-timeout)
			}
		}
	}
	for _, b := range s.activeSorted() {
		if b.status != StatusStarted {
			continue // pending builds are the build starter's, below
		}
		if s.stuck(b) {
			if w, ok := s.workers[b.worker]; !ok || w.state == StateStalled {
				// its containers died with the worker (SIGKILL): a real
				// server shows it started until the worker returns, then
				// errors it with "unknown handle"
				b.lostContainer = true
			}
			continue
		}
		if b.lostContainer {
			b.errMsg = "unknown handle"
			s.finish(b, StatusErrored, now)
			continue
		}
		if b.abortRequested && !now.Before(b.abortAt) {
			s.finish(b, StatusAborted, now)
			continue
		}
		if !b.finishAt.IsZero() && !now.Before(b.finishAt) {
			s.finish(b, b.result, now)
		}
	}
	busy := s.busyWorkers()
	for name, w := range s.workers {
		switch {
		case w.state == StateLanding && busy[name] == 0:
			w.state, w.addr, w.baggageclaim = StateLanded, "", ""
		case w.state == StateRetiring && busy[name] == 0:
			delete(s.workers, name)
		}
	}
	due := now.Sub(s.lastSched) >= s.schedInterval
	if due {
		s.lastSched = now
	}
	s.startPending(now, due)
}

// gcInterval is the worker collector's pass interval (--gc-interval).
const gcInterval = 30 * time.Second

// gcAfter is the first pass of the worker collector at or after t.
func (s *state) gcAfter(t time.Time) time.Time {
	if !t.After(s.gcStart) {
		return s.gcStart
	}
	n := (t.Sub(s.gcStart) + gcInterval - 1) / gcInterval
	return s.gcStart.Add(n * gcInterval)
}

// activeSorted returns the running builds by ascending id. The slice is
// a copy: transitions remove builds while callers iterate.
func (s *state) activeSorted() []*simBuild {
	return append([]*simBuild(nil), s.active...)
}

// addActive inserts b into the id-sorted active list.
func (s *state) addActive(b *simBuild) {
	i := sort.Search(len(s.active), func(i int) bool { return s.active[i].id >= b.id })
	if i < len(s.active) && s.active[i] == b {
		return
	}
	s.active = append(s.active, nil)
	copy(s.active[i+1:], s.active[i:])
	s.active[i] = b
}

// removeActive drops b from the active list.
func (s *state) removeActive(b *simBuild) {
	i := sort.Search(len(s.active), func(i int) bool { return s.active[i].id >= b.id })
	if i < len(s.active) && s.active[i] == b {
		s.active = append(s.active[:i], s.active[i+1:]...)
	}
}

// busyWorkers counts started builds per worker.
func (s *state) busyWorkers() map[string]int {
	busy := map[string]int{}
	for _, b := range s.active {
		if b.status == StatusStarted && b.worker != "" {
			busy[b.worker]++
		}
	}
	return busy
}

// startPending is the ATC's build starter (atc/scheduler/buildstarter.go):
// for each job it walks the pending builds oldest first, finishes those
// whose abort was requested, starts those that can start (on a scheduler
// pass: due), and stops at the first one that is not aborted and cannot
// start — a busy serial job, max_in_flight, a paused job or pipeline —
// so an aborted build newer than that one stays pending (flag set) until
// it moves. Aborted builds are finished at abortRate at most, one after
// the other (the scheduler's own pace: about 60/s on Concourse 8.2.5).
func (s *state) startPending(now time.Time, due bool) {
	inFlight := map[*simJob]int{}
	for _, b := range s.active {
		if b.status == StatusStarted && b.j != nil {
			inFlight[b.j]++
		}
	}
	busy := s.busyWorkers()
	stopped := map[*simJob]bool{}
	cleared := map[*simJob]time.Time{} // when the walk of the job reached this far
	for _, b := range s.activeSorted() {
		if b.status != StatusPending || b.j == nil || stopped[b.j] {
			continue
		}
		if b.abortRequested {
			if now.Before(b.abortAt) {
				stopped[b.j] = true // the abort has not reached the scheduler yet
				continue
			}
			at := laterOf(b.abortAt, cleared[b.j])
			if s.abortRate > 0 {
				at = laterOf(at, s.abortNext)
			}
			if at.After(now) {
				stopped[b.j] = true // the scheduler gets to it later
				continue
			}
			s.finish(b, StatusAborted, at)
			if s.abortRate > 0 {
				s.abortNext = at.Add(time.Duration(float64(time.Second) / s.abortRate))
			}
			cleared[b.j] = at
			continue
		}
		limit := b.j.cfg.MaxInFlight
		if b.j.cfg.Serial {
			limit = 1
		}
		if !due || b.p.paused || b.j.paused || (limit > 0 && inFlight[b.j] >= limit) {
			stopped[b.j] = true
			continue
		}
		cleared[b.j] = now
		w := s.pickWorker(b.team, busy)
		if w == "" {
			s.errorNoWorkers(b, now)
			continue
		}
		busy[w]++
		inFlight[b.j]++
		s.startBuild(b, w, now)
		if d := b.j.cfg.Duration.D(); d > 0 || b.errMsg != "" {
			b.finishAt = now.Add(d)
		}
	}
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (s *state) pickWorker(team string, busy map[string]int) string {
	best := ""
	for name, w := range s.workers {
		if w.state != StateRunning || (w.team != "" && w.team != team) {
			continue
		}
		if best == "" || busy[name] < busy[best] || (busy[name] == busy[best] && name < best) {
			best = name
		}
	}
	return best
}

func (s *state) errorNoWorkers(b *simBuild, now time.Time) {
	b.start = now
	s.emit(b, "status", "1.0", map[string]any{"status": StatusStarted, "time": now.Unix()})
	s.emit(b, "initialize-task", "4.0", map[string]any{"time": now.Unix(), "origin": origin(b.planID, ""), "config": emptyTaskConfig()})
	b.errMsg = fmt.Sprintf("no workers satisfying: platform 'linux', version: '%s'", s.workerVersion)
	s.emit(b, "error", "4.1", map[string]any{"message": b.errMsg, "origin": origin(b.planID, ""), "time": now.Unix()})
	b.status, b.end = StatusErrored, now
	s.emit(b, "status", "1.0", map[string]any{"status": StatusErrored, "time": now.Unix()})
	s.removeActive(b)
}

// startBuild moves a build to started on worker w and emits its opening
// events and log.
func (s *state) startBuild(b *simBuild, w string, now time.Time) {
	b.status, b.worker, b.start = StatusStarted, w, now
	t := now.Unix()
	s.emit(b, "status", "1.0", map[string]any{"status": StatusStarted, "time": t})
	s.emit(b, "initialize-task", "4.0", map[string]any{"time": t, "origin": origin(b.planID, ""), "config": emptyTaskConfig()})
	if w != "" {
		s.emit(b, "selected-worker", "1.0", map[string]any{"time": t, "origin": origin(b.planID, ""), "selected_worker": w})
	}
	if b.errMsg != "" { // the task fails before it runs (image fetch)
		for _, l := range b.log {
			s.emit(b, "log", "5.1", map[string]any{"time": t, "origin": origin(b.planID, "stderr"), "payload": l + "\r\n"})
		}
		return
	}
	s.emit(b, "start-task", "5.0", map[string]any{"time": t, "origin": origin(b.planID, ""), "config": taskConfig(b)})
	for _, l := range b.log {
		s.emit(b, "log", "5.1", map[string]any{"time": t, "origin": origin(b.planID, "stdout"), "payload": l + "\r\n"})
	}
}

// finish ends a build with status and emits its closing events.
func (s *state) finish(b *simBuild, status string, now time.Time) {
	t := now.Unix()
	wasStarted := b.status == StatusStarted
	if status == "" {
		status = StatusSucceeded
	}
	switch {
	case status == StatusErrored && wasStarted:
		msg := b.errMsg
		if msg == "" {
			msg = "task errored"
		}
		s.emit(b, "error", "4.1", map[string]any{"message": msg, "origin": origin(b.planID, ""), "time": t})
	case (status == StatusSucceeded || status == StatusFailed) && wasStarted:
		exit := 0
		if status == StatusFailed {
			exit = 1
		}
		s.emit(b, "finish-task", "4.0", map[string]any{"time": t, "exit_status": exit, "origin": origin(b.planID, "")})
	}
	b.status, b.end = status, now
	s.emit(b, "status", "1.0", map[string]any{"status": status, "time": t})
	s.removeActive(b)
}

func (s *state) emit(b *simBuild, typ, version string, data map[string]any) {
	b.events = append(b.events, simEvent{typ: typ, version: version, data: data})
}

func origin(id, source string) map[string]any {
	o := map[string]any{"id": id}
	if source != "" {
		o["source"] = source
	}
	return o
}

func emptyTaskConfig() map[string]any {
	return map[string]any{"platform": "", "image": "", "run": map[string]any{"path": "", "args": nil, "dir": ""}, "inputs": nil}
}

func taskConfig(b *simBuild) map[string]any {
	script := "true"
	if b.j != nil && b.j.cfg.Script != "" {
		script = b.j.cfg.Script
	}
	return map[string]any{"platform": "linux", "image": "", "run": map[string]any{"path": "sh", "args": []any{"-c", script}, "dir": ""}, "inputs": nil}
}

// planID derives a stable 8-hex plan id, like the ids Concourse shows.
func planID(parts ...string) string {
	h := fnv.New32a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%08x", h.Sum32())
}

// newBuild registers a build with the next id.
func (s *state) newBuild(b *simBuild) *simBuild {
	if b.id == 0 {
		b.id = s.nextBuildID
	}
	if b.id >= s.nextBuildID {
		s.nextBuildID = b.id + 1
	}
	if b.j != nil && b.name == "" {
		b.j.nextName++
		b.name = strconv.Itoa(b.j.nextName)
	}
	if b.planID == "" {
		task := "check"
		if b.j != nil && len(b.j.cfg.Tasks) > 0 {
			task = b.j.cfg.Tasks[0]
		}
		b.planID = planID(strconv.Itoa(b.id), task)
	}
	s.byID[b.id] = b
	// keep builds sorted by id; new builds almost always go last
	i := sort.Search(len(s.builds), func(i int) bool { return s.builds[i].id >= b.id })
	s.builds = append(s.builds, nil)
	copy(s.builds[i+1:], s.builds[i:])
	s.builds[i] = b
	if b.running() {
		s.addActive(b)
	}
	return b
}
