package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadState is the outcome of the last configuration reload.
type reloadState struct {
	mu   sync.Mutex
	ok   bool
	okAt time.Time
}

// ConfigLoaded records the outcome of loading the configuration: at start
// (ok) and at each reload (SIGHUP, POST /-/reload), as Prometheus and
// Alertmanager do: groundcrew_config_last_reload_successful and
// groundcrew_config_last_reload_success_timestamp_seconds.
func (m *Metrics) ConfigLoaded(ok bool, at time.Time) {
	m.mu.Lock()
	st := m.reload
	if st == nil {
		st = &reloadState{}
		m.reload = st
		okDesc := prometheus.NewDesc(ns+"_config_last_reload_successful",
			"Whether the last configuration reload succeeded (1) or was refused, the running configuration kept (0).", nil, nil)
		atDesc := prometheus.NewDesc(ns+"_config_last_reload_success_timestamp_seconds",
			"When the configuration was last loaded successfully (start or reload), in Unix seconds.", nil, nil)
		m.gauges = append(m.gauges, func(ch chan<- prometheus.Metric) {
			st.mu.Lock()
			ok, okAt := st.ok, st.okAt
			st.mu.Unlock()
			v := 0.0
			if ok {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(okDesc, prometheus.GaugeValue, v)
			ch <- prometheus.MustNewConstMetric(atDesc, prometheus.GaugeValue, float64(okAt.UnixNano())/1e9)
		})
	}
	m.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ok = ok
	if ok {
		st.okAt = at
	}
}
