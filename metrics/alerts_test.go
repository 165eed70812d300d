package metrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/groundcrew/groundcrew/metrics"
)

// TestAlertPathSeries: /metrics had no incident or webhook series after
// 233 incidents, 3 wrong-token refusals and ~10 malformed bodies.
func TestAlertPathSeries(t *testing.T) {
	m := metrics.New(metrics.Options{})
	m.AlertPath().Incidents(func() (map[string]int, error) { return map[string]int{"open": 3, "acknowledged": 1}, nil })
	out := scrape(t, m)
	assert.Contains(t, out, `groundcrew_alertmanager_notifications_total{outcome="unauthorized"} 0`, "exported before the first request")
	assert.Contains(t, out, `groundcrew_incidents_opened_total{source="alert"} 0`)
	for range 3 {
		m.AlertmanagerNotification("unauthorized")
	}
	m.AlertmanagerNotification("too_large")
	m.AlertmanagerNotification("ok")
	m.AlertmanagerNotification("an unknown outcome")
	m.AlertsUnrouted(2)
	m.IncidentOpened("alert")
	m.IncidentOpened("watch")
	m.IncidentOpened("someone's label")
	out = scrape(t, m)
	for _, want := range []string{
		`groundcrew_alertmanager_notifications_total{outcome="unauthorized"} 3`,
		`groundcrew_alertmanager_notifications_total{outcome="too_large"} 1`,
		`groundcrew_alertmanager_notifications_total{outcome="ok"} 1`,
		`groundcrew_alertmanager_notifications_total{outcome="malformed"} 1`,
		`groundcrew_alerts_unrouted_total 2`,
		`groundcrew_incidents_opened_total{source="alert"} 1`,
		`groundcrew_incidents_opened_total{source="watch"} 1`,
		`groundcrew_incidents_opened_total{source="other"} 1`,
		`groundcrew_incidents{state="open"} 3`,
		`groundcrew_incidents{state="acknowledged"} 1`,
		`groundcrew_incidents{state="silenced"} 0`,
	} {
		assert.Contains(t, out, want)
	}
}
