package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// housekeepingMetrics count the store's housekeeping passes.
type housekeepingMetrics struct {
	once     sync.Once
	passes   *prometheus.CounterVec
	runs     prometheus.Counter
	events   prometheus.Counter
	messages prometheus.Counter
	took     prometheus.Histogram
	writer   prometheus.Histogram
	last     prometheus.Gauge
}

func (m *Metrics) housekeepingMetrics() *housekeepingMetrics {
	h := &m.hk
	h.once.Do(func() {
		h.passes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "store_housekeeping_passes_total",
			Help: "Store housekeeping passes (retention, dedupe TTL), by outcome (ok, error)."}, []string{"outcome"})
		h.runs = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "store_housekeeping_deleted_runs_total",
			Help: "Finished runs deleted by housekeeping (past the retention)."})
		h.events = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "store_housekeeping_forgotten_events_total",
			Help: "Inbound event ids forgotten by housekeeping (past the dedupe TTL)."})
		h.messages = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "store_housekeeping_deleted_message_refs_total",
			Help: "Message references of deleted runs removed by housekeeping."})
		h.took = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "store_housekeeping_duration_seconds",
			Help:    "Wall time of a housekeeping pass.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120}})
		h.writer = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "store_housekeeping_writer_seconds",
			Help:    "Time a housekeeping pass held the store's writer, summed over its batches.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30}})
		h.last = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "store_housekeeping_last_success_timestamp_seconds",
			Help: "When the last housekeeping pass succeeded (Unix time; 0: none yet). Retention is not applied when this stops moving."})
		for _, c := range []prometheus.Collector{h.passes, h.runs, h.events, h.messages, h.took, h.writer, h.last} {
			m.reg.MustRegister(c)
		}
		h.passes.WithLabelValues("ok")
		h.passes.WithLabelValues("error")
	})
	return h
}

// Housekeeper wraps the store's housekeeping: every pass is counted, with
// what it deleted and how long it took. Hand the result to the engine as
// bot.Capabilities.Housekeeper.
func (m *Metrics) Housekeeper(h runmodel.Housekeeper) runmodel.Housekeeper {
	if h == nil {
		return nil
	}
	return housekeeper{m: m.housekeepingMetrics(), h: h}
}

type housekeeper struct {
	m *housekeepingMetrics
	h runmodel.Housekeeper
}

func (k housekeeper) Housekeep(ctx context.Context, now time.Time) (runmodel.HousekeepResult, error) {
	start := time.Now()
	res, err := k.h.Housekeep(ctx, now)
	k.m.took.Observe(time.Since(start).Seconds())
	k.m.writer.Observe(res.WriterTime.Seconds())
	k.m.runs.Add(float64(res.Runs))
	k.m.events.Add(float64(res.Events))
	k.m.messages.Add(float64(res.Messages))
	if err != nil {
		k.m.passes.WithLabelValues("error").Inc()
		return res, err
	}
	k.m.passes.WithLabelValues("ok").Inc()
	k.m.last.Set(float64(time.Now().Unix()))
	return res, nil
}
