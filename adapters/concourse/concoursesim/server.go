package concoursesim

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a running simulator. Its methods are safe for concurrent use.
type Server struct {
	st   *state
	ts   *httptest.Server
	mux  *http.ServeMux
	done chan struct{}
	tsa  net.Listener

	mu      sync.Mutex // guards calls, faults, latency
	calls   []Call
	faults  []*Fault
	latency time.Duration
	closed  sync.Once

	capacity int           // WithSaturation: requests served at full speed
	service  time.Duration // WithSaturation: time of one request
	inflight atomic.Int64
	overload atomic.Int64 // 503s answered by the saturation model
}

// Call is one request the simulator received.
type Call struct {
	Method string
	// Path includes the query ("/api/v1/builds?limit=3").
	Path   string
	Body   string // first KiB of the request body
	Status int
	User   string // "" for anonymous or refused tokens
}

// Fault makes matching requests fail before they reach the model.
type Fault struct {
	// Method and Path select requests; empty matches any. Path matches
	// the URL path exactly, or as a prefix when it ends with "*".
	Method string
	Path   string
	// Status and Body are the answer (Body defaults to the status text).
	Status int
	Body   string
	// Times is how many requests fail (default 1).
	Times int
	// Delay holds the request before answering (e.g. to trip timeouts).
	Delay time.Duration
}

type config struct {
	clock         Clock
	abortDelay    time.Duration
	abortRate     float64
	heartbeatTTL  time.Duration
	schedInterval time.Duration
	checkDuration time.Duration
	tokenTTL      time.Duration
	latency       time.Duration
	tsa           bool
	cacheLag      time.Duration
	capacity      int
	service       time.Duration
}

// Option configures a Server.
type Option func(*config)

// WithClock sets the clock (default: real time).
func WithClock(c Clock) Option { return func(o *config) { o.clock = c } }

// WithAbortDelay sets how long after PUT …/abort the abort reaches the
// scheduler (a pending build) or the build (a started one) (default 500ms;
// the real server takes "a moment").
func WithAbortDelay(d time.Duration) Option { return func(o *config) { o.abortDelay = d } }

// WithAbortRate makes the scheduler finish aborted pending builds at most n
// per second, one after the other, as a real Concourse 8.2.5 web node does
// (about 60/s). 0 (the default) finishes them as soon as their turn comes.
// Either way a pending build's turn comes in id order: the ATC finishes the
// aborted pending builds of a job oldest first and stops at the first
// pending build that is not aborted and cannot start (a busy serial job),
// as measured on Concourse's newest source.
func WithAbortRate(n float64) Option { return func(o *config) { o.abortRate = n } }

// WithHeartbeatTTL sets how long after its last heartbeat a running worker
// stalls (default 60s, Concourse's TTL).
func WithHeartbeatTTL(d time.Duration) Option { return func(o *config) { o.heartbeatTTL = d } }

// WithSchedulerInterval sets how often pending builds are considered for
// starting (default 10s; 0 schedules on every request).
func WithSchedulerInterval(d time.Duration) Option { return func(o *config) { o.schedInterval = d } }

// WithCheckDuration sets how long resource checks run (default 2s).
func WithCheckDuration(d time.Duration) Option { return func(o *config) { o.checkDuration = d } }

// WithTokenTTL sets the lifetime of issued tokens (default 24h).
func WithTokenTTL(d time.Duration) Option { return func(o *config) { o.tokenTTL = d } }

// WithLatency delays every request by d (see SetLatency).
func WithLatency(d time.Duration) Option { return func(o *config) { o.latency = d } }

// WithWorkerCacheLag makes GET /api/v1/workers keep listing a pruned
// worker, as it was, for d after the prune answered 200. A real web node
// serves the list from a cache refreshed by database notifications
// (atc/db/worker_cache.go): on Concourse 8.2.5 a pruned worker was still
// listed right after the prune in 2 of 4 tries, and gone about a second
// later. Default 0 (the list is right at once); PUTs on the pruned worker
// answer 404 either way, as they read the database.
func WithWorkerCacheLag(d time.Duration) Option { return func(o *config) { o.cacheLag = d } }

// WithSaturation makes the web node saturate: it serves capacity API
// requests at once, each taking service; with n > capacity in flight every
// request takes service × n / capacity (the node shares itself, so
// throughput stays capacity/service while latency grows with the queue),
// and beyond SaturationQueue × capacity in flight it answers 503, as the
// load balancer in front of a drowning web node does. A model, not a
// measurement: a real web node's limit is its database pool and CPU.
// Event streams are not counted. Overloads returns the 503s answered.
func WithSaturation(capacity int, service time.Duration) Option {
	return func(o *config) { o.capacity, o.service = capacity, service }
}

// SaturationQueue is how many times its capacity a saturated web node
// (WithSaturation) holds in flight before it answers 503.
const SaturationQueue = 4

// WithTSA also opens a TCP listener standing in for the TSA (port 2222 of
// a real web node); TSAAddr returns its address.
func WithTSA() Option { return func(o *config) { o.tsa = true } }

// New starts a simulator with the world on a loopback httptest server.
// Close it when done.
func New(w World, opts ...Option) (*Server, error) {
	s, err := NewUnstarted(w, opts...)
	if err != nil {
		return nil, err
	}
	s.ts = httptest.NewServer(s)
	return s, nil
}

// NewUnstarted builds the simulator without listening; serve it with
// Handler (or the Server itself, an http.Handler) on a listener of your
// own. URL is then empty.
func NewUnstarted(w World, opts ...Option) (*Server, error) {
	cfg := config{
		clock: realClock{}, abortDelay: 500 * time.Millisecond, heartbeatTTL: 60 * time.Second,
		schedInterval: 10 * time.Second, checkDuration: 2 * time.Second, tokenTTL: 24 * time.Hour,
	}
	for _, o := range opts {
		o(&cfg)
	}
	st := &state{
		clock: cfg.clock, abortDelay: cfg.abortDelay, abortRate: cfg.abortRate, heartbeatTTL: cfg.heartbeatTTL,
		schedInterval: cfg.schedInterval, checkDuration: cfg.checkDuration, tokenTTL: cfg.tokenTTL,
		workerCacheLag: cfg.cacheLag, cachedPruned: map[string]cachedWorker{},
	}
	if err := st.load(w, cfg.clock.Now()); err != nil {
		return nil, fmt.Errorf("loading simulator world: %w", err)
	}
	s := &Server{st: st, done: make(chan struct{}), latency: cfg.latency, capacity: cfg.capacity, service: cfg.service}
	s.routes()
	if cfg.tsa {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("opening the simulated TSA listener: %w", err)
		}
		s.tsa = l
		go s.serveTSA()
	}
	return s, nil
}

// URL is the base URL of the started server ("http://127.0.0.1:PORT").
func (s *Server) URL() string {
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// Client returns an HTTP client for the started server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// TSAAddr is the address of the simulated TSA listener (WithTSA), or "".
func (s *Server) TSAAddr() string {
	if s.tsa == nil {
		return ""
	}
	return s.tsa.Addr().String()
}

// Handler returns the simulator's HTTP handler.
func (s *Server) Handler() http.Handler { return s }

// Close stops the server, ending open event streams.
func (s *Server) Close() {
	s.closed.Do(func() {
		close(s.done)
		if s.tsa != nil {
			_ = s.tsa.Close()
		}
		if s.ts != nil {
			s.ts.Close()
		}
	})
}

func (s *Server) serveTSA() {
	for {
		c, err := s.tsa.Accept()
		if err != nil {
			return
		}
		_ = c.Close() // the dial is all tsa_connectivity checks
	}
}

// ServeHTTP implements http.Handler: latency, faults, the version header
// and the call log, then the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		c := Call{Method: r.Method, Path: r.URL.RequestURI(), Status: rec.status, User: s.userOf(r)}
		c.Body = string(body[:min(len(body), 1024)])
		s.mu.Lock()
		s.calls = append(s.calls, c)
		s.mu.Unlock()
	}()
	s.mu.Lock()
	latency := s.latency
	f := s.takeFault(r)
	s.mu.Unlock()
	if latency > 0 && !s.wait(r, latency) {
		return
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		rec.Header().Set("X-Concourse-Version", s.st.versionLocked())
		if s.capacity > 0 && !strings.HasSuffix(r.URL.Path, "/events") {
			n := s.inflight.Add(1)
			defer s.inflight.Add(-1)
			if n > int64(SaturationQueue*s.capacity) {
				s.overload.Add(1)
				if s.wait(r, s.service) {
					text(rec, http.StatusServiceUnavailable, "upstream overloaded")
				}
				return
			}
			d := s.service
			if n > int64(s.capacity) {
				d = time.Duration(int64(d) * n / int64(s.capacity))
			}
			if !s.wait(r, d) {
				return
			}
		}
	}
	if f != nil {
		if f.Delay > 0 && !s.wait(r, f.Delay) {
			return
		}
		text(rec, f.Status, or(f.Body, http.StatusText(f.Status)))
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// wait sleeps d unless the request or the server ends first.
func (s *Server) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

func (st *state) versionLocked() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.version
}

func (s *Server) takeFault(r *http.Request) *Fault {
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if p, ok := strings.CutSuffix(f.Path, "*"); ok {
			if !strings.HasPrefix(r.URL.Path, p) {
				continue
			}
		} else if f.Path != "" && f.Path != r.URL.Path {
			continue
		}
		f.Times--
		if f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		cp := *f
		return &cp
	}
	return nil
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the status for the call log.
func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// Flush passes flushes through for event streams.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// SetLatency delays every later request by d (network latency).
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

// InjectFault makes the next f.Times requests matching f fail with f.Status.
func (s *Server) InjectFault(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// Calls returns the requests received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CountCalls counts requests with the method ("" = any) whose path
// (without query) equals path, or starts with it when path ends with "*".
func (s *Server) CountCalls(method, path string) int {
	return s.CountCallsBy("", method, path)
}

// CountCallsBy is CountCalls of the requests user made ("" = anyone).
func (s *Server) CountCallsBy(user, method, path string) int {
	n := 0
	for _, c := range s.Calls() {
		if user != "" && c.User != user {
			continue
		}
		p, _, _ := strings.Cut(c.Path, "?")
		if method != "" && c.Method != method {
			continue
		}
		if prefix, ok := strings.CutSuffix(path, "*"); ok {
			if strings.HasPrefix(p, prefix) {
				n++
			}
		} else if p == path {
			n++
		}
	}
	return n
}

// Overloads counts the 503s the saturation model answered (WithSaturation).
func (s *Server) Overloads() int { return int(s.overload.Load()) }

// ResetCalls clears the call log.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}
