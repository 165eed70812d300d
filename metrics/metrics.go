// Package metrics exposes groundcrew's Prometheus metrics. It implements
// the small observer interfaces the subsystems declare (runmodel.Observer,
// digest.Observer), wraps operation providers and HTTP transports, and
// reads gauges (outbox, store size, targets) at scrape time.
//
// Every label value is bounded: runbook and operation names come from the
// loaded library and registry, targets from the configuration (any other
// value is reported as "other"), kinds, outcomes and decisions are fixed
// sets. No user input ever becomes a label.
package metrics

import (
	"net/http"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/watch"
)

const ns = "groundcrew"

// Options configure New.
type Options struct {
	// Version is the build version (groundcrew_build_info).
	Version string
	// Targets are the configured target names; other values become "other".
	Targets []string
}

// Metrics holds every groundcrew metric. It is safe for concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	targets []string

	runsStarted  *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	stepDuration *prometheus.HistogramVec
	gatesOpened  prometheus.Counter
	gatesDecided *prometheus.CounterVec
	gateDecision *prometheus.HistogramVec
	opCalls      *prometheus.CounterVec
	opDuration   *prometheus.HistogramVec
	apiRequests  *prometheus.CounterVec
	apiErrors    *prometheus.CounterVec
	apiThrottled *prometheus.CounterVec
	digests      *prometheus.CounterVec
	digestLag    *prometheus.HistogramVec
	watchPolls   *prometheus.CounterVec
	watchLag     *prometheus.HistogramVec
	watchTook    *prometheus.HistogramVec
	targetUp     *prometheus.GaugeVec
	targetLogin  *prometheus.GaugeVec

	hk     housekeepingMetrics // registered by Housekeeper
	alerts alertMetrics        // registered by AlertPath

	mu     sync.Mutex
	gauges []func(ch chan<- prometheus.Metric)
	reload *reloadState // reload.go
}

// New returns the metrics, registered in a registry of their own together
// with the Go runtime and process collectors.
func New(o Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), targets: slices.Clone(o.Targets)}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "build_info",
		Help: "Always 1; the labels give the version and Go version of the binary."}, []string{"version", "goversion"})
	build.WithLabelValues(o.Version, runtime.Version()).Set(1)
	f(build)

	m.runsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_started_total",
		Help: "Runs started, by runbook."}, []string{"runbook"})
	m.runsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_finished_total",
		Help: "Runs finished, by runbook and outcome (succeeded, failed, cancelled)."}, []string{"runbook", "outcome"})
	m.stepDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "step_duration_seconds",
		Help:    "Duration of finished steps, by kind and status (succeeded, failed, skipped).",
		Buckets: []float64{0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600}}, []string{"kind", "status"})
	m.gatesOpened = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "gates_opened_total",
		Help: "Approval gates opened."})
	m.gatesDecided = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "gates_decided_total",
		Help: "Approval gates decided, by decision (approved, rejected, expired, void)."}, []string{"decision"})
	m.gateDecision = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "gate_decision_seconds",
		Help:    "Time from a gate's opening to its decision, by decision.",
		Buckets: []float64{10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600}}, []string{"decision"})
	m.opCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "op_calls_total",
		Help: "Operation calls, by operation, target, phase (do, plan, apply) and outcome (ok, error)."},
		[]string{"operation", "target", "phase", "outcome"})
	m.opDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "op_duration_seconds",
		Help:    "Latency of operation calls, by operation, target and phase.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"operation", "target", "phase"})
	m.apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "api_requests_total",
		Help: "HTTP requests to external APIs, by api (concourse, slack, mattermost) and target."}, []string{"api", "target"})
	m.apiErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "api_errors_total",
		Help: "External API errors, by api (concourse, postgres, slack, mattermost), target and reason (transport, 4xx, 5xx, 429, error)."},
		[]string{"api", "target", "reason"})
	m.apiThrottled = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "api_rate_limited_total",
		Help: "HTTP 429 answers of external APIs, by api and target."}, []string{"api", "target"})
	m.digests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "digests_total",
		Help: "Due digests, by target and outcome (posted; failed, skipped, interrupted = missed)."}, []string{"target", "outcome"})
	m.digestLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "digest_lag_seconds",
		Help:    "How late after its fire time a digest was posted (scheduler lag).",
		Buckets: []float64{1, 5, 15, 30, 60, 300, 900, 3600}}, []string{"target"})
	m.watchPolls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "watch_polls_total",
		Help: "Scheduled polls of watch rules, by target and outcome (ok, error)."}, []string{"target", "outcome"})
	m.watchLag = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "watch_lag_seconds",
		Help:    "How late after its due time a watch poll started (scheduler lag).",
		Buckets: []float64{0.1, 1, 5, 15, 30, 60, 300}}, []string{"target"})
	m.watchTook = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "watch_poll_duration_seconds",
		Help:    "Duration of watch polls (collecting the target's figures).",
		Buckets: []float64{0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120}}, []string{"target"})
	m.targetUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "target_up",
		Help: "1 when the target's API answered the last probe."}, []string{"target"})
	m.targetLogin = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "target_login_ok",
		Help: "1 when the last login to the target succeeded."}, []string{"target"})
	for _, c := range []prometheus.Collector{m.runsStarted, m.runsFinished, m.stepDuration, m.gatesOpened, m.gatesDecided,
		m.gateDecision, m.opCalls, m.opDuration, m.apiRequests, m.apiErrors, m.apiThrottled, m.digests, m.digestLag,
		m.watchPolls, m.watchLag, m.watchTook, m.targetUp, m.targetLogin} {
		f(c)
	}
	for _, d := range []string{"approved", "rejected", "expired", "void"} {
		m.gatesDecided.WithLabelValues(d)
	}
	m.housekeepingMetrics()
	f(scrapeCollector{m})
	return m
}

// Registry is the registry the metrics are in.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// target bounds a target label to the configured names.
func (m *Metrics) target(t string) string {
	if t == "" || slices.Contains(m.targets, t) {
		return t
	}
	return "other"
}

var _ runmodel.Observer = (*Metrics)(nil)

// RunCommitted implements runmodel.Observer: it counts what the journal and
// audit entries of one committed run change say.
func (m *Metrics) RunCommitted(r *runmodel.Run, b *runmodel.Batch) {
	for _, e := range b.Journal {
		switch e.Type {
		case runmodel.JRunStarted:
			m.runsStarted.WithLabelValues(r.Runbook).Inc()
		case runmodel.JRunFinished:
			m.runsFinished.WithLabelValues(r.Runbook, string(r.State)).Inc()
		case runmodel.JStepDone, runmodel.JStepFailed, runmodel.JStepSkipped:
			if st := stepOf(r, e.Step); st != nil {
				d := 0.0
				if !st.StartedAt.IsZero() && st.FinishedAt.After(st.StartedAt) {
					d = st.FinishedAt.Sub(st.StartedAt).Seconds()
				}
				m.stepDuration.WithLabelValues(string(st.Kind), stepStatus(e.Type)).Observe(d)
			}
		case runmodel.JGateOpened:
			m.gatesOpened.Inc()
		}
	}
	for _, a := range b.Audit {
		d := gateDecision(a.Action)
		if d == "" {
			continue
		}
		m.gatesDecided.WithLabelValues(d).Inc()
		if g := r.Gate; g != nil && !g.RequestedAt.IsZero() && !a.Time.Before(g.RequestedAt) {
			m.gateDecision.WithLabelValues(d).Observe(a.Time.Sub(g.RequestedAt).Seconds())
		}
	}
}

func stepOf(r *runmodel.Run, id string) *runmodel.StepState {
	for i := range r.Steps {
		if r.Steps[i].ID == id {
			return &r.Steps[i]
		}
	}
	return nil
}

func stepStatus(journalType runmodel.JournalType) string {
	switch journalType {
	case runmodel.JStepFailed:
		return "failed"
	case runmodel.JStepSkipped:
		return "skipped"
	}
	return "succeeded"
}

// gateDecision maps the audit actions that decide a gate to a decision.
func gateDecision(action runmodel.AuditAction) string {
	switch action {
	case runmodel.ActionApprovalGranted, runmodel.ActionBreakGlass:
		return "approved"
	case runmodel.ActionApprovalRejected:
		return "rejected"
	case runmodel.ActionApprovalExpired:
		return "expired"
	case runmodel.ActionApprovalVoidDrift:
		return "void"
	}
	return ""
}

var _ digest.Observer = (*Metrics)(nil)

// DigestSettled implements digest.Observer.
func (m *Metrics) DigestSettled(target string, state digest.State, lag time.Duration) {
	t := m.target(target)
	outcome := map[digest.State]string{digest.Posted: "posted", digest.Failed: "failed",
		digest.Skipped: "skipped", digest.Posting: "interrupted"}[state]
	if outcome == "" {
		return
	}
	m.digests.WithLabelValues(t, outcome).Inc()
	if state == digest.Posted {
		m.digestLag.WithLabelValues(t).Observe(max(lag, 0).Seconds())
	}
}

var _ watch.Observer = (*Metrics)(nil)

// WatchPolled implements watch.Observer.
func (m *Metrics) WatchPolled(target string, lag, took time.Duration, err error) {
	t, outcome := m.target(target), "ok"
	if err != nil {
		outcome = "error"
	}
	m.watchPolls.WithLabelValues(t, outcome).Inc()
	m.watchLag.WithLabelValues(t).Observe(lag.Seconds())
	m.watchTook.WithLabelValues(t).Observe(took.Seconds())
}

// ExpectDigests makes the digest counters of target exist at 0, so that
// alerts on their increase work from the first miss.
func (m *Metrics) ExpectDigests(target string) {
	for _, o := range []string{"posted", "failed", "skipped", "interrupted"} {
		m.digests.WithLabelValues(m.target(target), o)
	}
}

// SetTarget records the result of a target probe.
func (m *Metrics) SetTarget(target string, up, loginOK bool) {
	t := m.target(target)
	m.targetUp.WithLabelValues(t).Set(b2f(up))
	m.targetLogin.WithLabelValues(t).Set(b2f(loginOK))
}

// ChatConnected reports up() at every scrape as groundcrew_chat_connected.
func (m *Metrics) ChatConnected(up func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "chat_connected",
		Help: "1 while the chat connection is up."}, func() float64 { return b2f(up()) }))
}

// Ready reports ready() at every scrape as groundcrew_ready (what /readyz says).
func (m *Metrics) Ready(ready func() bool) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "ready",
		Help: "1 when /readyz answers 200: store open, chat connected, configuration loaded."}, func() float64 { return b2f(ready()) }))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Outbox reports the outbox at every scrape: list returns its items.
func (m *Metrics) Outbox(list func() ([]runmodel.OutboxItem, error), now func() time.Time) {
	depth := prometheus.NewDesc(ns+"_outbox_items", "Chat posts waiting in the outbox for a retry.", nil, nil)
	age := prometheus.NewDesc(ns+"_outbox_oldest_age_seconds", "Age of the oldest chat post in the outbox (0 when empty).", nil, nil)
	m.addGauge(func(ch chan<- prometheus.Metric) {
		items, err := list()
		if err != nil {
			return
		}
		oldest := 0.0
		for _, it := range items {
			if !it.Queued.IsZero() {
				oldest = max(oldest, now().Sub(it.Queued).Seconds())
			}
		}
		ch <- prometheus.MustNewConstMetric(depth, prometheus.GaugeValue, float64(len(items)))
		ch <- prometheus.MustNewConstMetric(age, prometheus.GaugeValue, oldest)
	})
}

// StoreSize reports the store file's size at every scrape.
func (m *Metrics) StoreSize(size func() (int64, error)) {
	d := prometheus.NewDesc(ns+"_store_size_bytes", "Size of the bbolt store file.", nil, nil)
	m.addGauge(func(ch chan<- prometheus.Metric) {
		if n, err := size(); err == nil {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n))
		}
	})
}

func (m *Metrics) addGauge(f func(ch chan<- prometheus.Metric)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gauges = append(m.gauges, f)
}

// scrapeCollector runs the gauges read at scrape time. It is unchecked
// (no Describe output): its metrics are added after registration.
type scrapeCollector struct{ m *Metrics }

func (scrapeCollector) Describe(chan<- *prometheus.Desc) {}

func (c scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	gs := slices.Clone(c.m.gauges)
	c.m.mu.Unlock()
	for _, g := range gs {
		g(ch)
	}
}
