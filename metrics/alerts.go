package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// alertMetrics count the alert path: webhook notifications, unrouted
// alerts, incidents opened, and incidents by state (read at scrape time).
type alertMetrics struct {
	once          sync.Once
	notifications *prometheus.CounterVec
	unrouted      prometheus.Counter
	opened        *prometheus.CounterVec
}

// Notification outcomes and incident sources: the fixed label values.
var (
	notificationOutcomes = []string{"ok", "unauthorized", "malformed", "too_large", "store_error"}
	incidentSources      = []string{"alert", "watch"}
)

func (m *Metrics) alertMetrics() *alertMetrics {
	a := &m.alerts
	a.once.Do(func() {
		a.notifications = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "alertmanager_notifications_total",
			Help: "Alertmanager webhook requests, by outcome (ok, unauthorized, malformed, too_large, store_error)."}, []string{"outcome"})
		a.unrouted = prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "alerts_unrouted_total",
			Help: "Alerts (in notifications) that matched no route in alerts.routes."})
		a.opened = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "incidents_opened_total",
			Help: "Incidents opened, by source (alert, watch)."}, []string{"source"})
		for _, c := range []prometheus.Collector{a.notifications, a.unrouted, a.opened} {
			m.reg.MustRegister(c)
		}
		for _, o := range notificationOutcomes {
			a.notifications.WithLabelValues(o)
		}
		for _, s := range incidentSources {
			a.opened.WithLabelValues(s)
		}
	})
	return a
}

// AlertPath registers the alert-path series, so that they are exported
// (at 0) before the first notification. The Metrics is then the
// Alertmanager receiver's and the incident manager's observer.
func (m *Metrics) AlertPath() *Metrics {
	m.alertMetrics()
	return m
}

// AlertmanagerNotification implements the Alertmanager receiver's Observer.
func (m *Metrics) AlertmanagerNotification(outcome string) {
	if !slices.Contains(notificationOutcomes, outcome) {
		outcome = "malformed"
	}
	m.alertMetrics().notifications.WithLabelValues(outcome).Inc()
}

// AlertsUnrouted implements the Alertmanager receiver's Observer.
func (m *Metrics) AlertsUnrouted(n int) {
	if n > 0 {
		m.alertMetrics().unrouted.Add(float64(n))
	}
}

// IncidentOpened implements incident.Observer.
func (m *Metrics) IncidentOpened(source string) {
	if !slices.Contains(incidentSources, source) {
		source = "other"
	}
	m.alertMetrics().opened.WithLabelValues(source).Inc()
}

// Incidents reports the unresolved incidents by state at every scrape:
// count returns how many there are in each state.
func (m *Metrics) Incidents(count func() (map[string]int, error)) {
	m.alertMetrics()
	d := prometheus.NewDesc(ns+"_incidents", "Unresolved incidents, by state (open, acknowledged, silenced).", []string{"state"}, nil)
	m.addGauge(func(ch chan<- prometheus.Metric) {
		n, err := count()
		if err != nil {
			return
		}
		for _, s := range []string{"open", "acknowledged", "silenced"} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n[s]), s)
		}
	})
}
