package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/store"
)

// BenchmarkAlertStorm: 1,000 alerts in 100 groups arrive as 1,000
// webhook notifications (each carries its group's alerts so far, as
// Alertmanager does), 8 at a time, through the real receiver, incident
// manager and bbolt store. It checks 100 incidents, none duplicated, and
// reports the webhook latency percentiles.
func BenchmarkAlertStorm(b *testing.B) {
	const groups, perGroup, inFlight = 100, 10, 8
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		db, err := store.Open(filepath.Join(b.TempDir(), "gc.db"), store.Options{})
		require.NoError(b, err)
		chat := &bottest.Chat{}
		m, err := incident.New(incident.Options{Store: db, Chat: chat, Platform: "slack"})
		require.NoError(b, err)
		route, errs := alertmanager.CompileRoute(0, alertmanager.RouteConfig{Match: map[string]string{"alertname": "Storm.*"},
			Target: "infra-prd", Channel: "#ci-ops", Runbook: "worker-disk-full", Params: map[string]string{"worker": "{{ .labels.instance | shortHost }}"}})
		require.Empty(b, errs)
		rc, err := alertmanager.NewReceiver(alertmanager.Options{Token: "t", Routes: []*alertmanager.Route{route}, Targets: []string{"infra-prd"}, Sink: m})
		require.NoError(b, err)
		srv := httptest.NewServer(rc)
		bodies := make(chan []byte, groups*perGroup)
		for n := range groups * perGroup {
			g, k := n%groups, n/groups
			msg := alertmanager.Message{Version: "4", Status: "firing", Receiver: "groundcrew",
				GroupKey:    fmt.Sprintf(`{}:{alertname="Storm%d"}`, g),
				GroupLabels: map[string]string{"alertname": fmt.Sprintf("Storm%d", g)}}
			for j := 0; j <= k; j++ {
				msg.Alerts = append(msg.Alerts, alertmanager.Alert{Status: "firing", Fingerprint: fmt.Sprintf("%d-%d", g, j),
					Labels:      map[string]string{"alertname": fmt.Sprintf("Storm%d", g), "instance": fmt.Sprintf("caascad-ci-workers-infra-infra-prd-%d:9100", j)},
					Annotations: map[string]string{"summary": "disk filling up"}, StartsAt: time.Now()})
			}
			body, _ := json.Marshal(msg)
			bodies <- body
		}
		close(bodies)
		var mu sync.Mutex
		var wg sync.WaitGroup
		b.StartTimer()
		for range inFlight {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for body := range bodies {
					req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(body))
					req.Header.Set("Authorization", "Bearer t")
					t0 := time.Now()
					resp, err := http.DefaultClient.Do(req)
					d := time.Since(t0)
					if err != nil || resp.StatusCode != http.StatusOK {
						b.Errorf("webhook: %v %v", err, resp)
						return
					}
					resp.Body.Close()
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		b.StopTimer()
		srv.Close()
		all, err := db.ListIncidents(context.Background(), incident.Query{})
		require.NoError(b, err)
		require.Len(b, all, groups, "one incident per group")
		roots := 0
		for _, p := range chat.Posts() {
			if p.To.Thread == "" {
				roots++
			}
		}
		require.Equal(b, groups, roots, "one thread per group")
		for _, in := range all {
			require.Equal(b, perGroup, in.Notifications)
			require.Len(b, in.Evidence, perGroup)
		}
		require.NoError(b, db.Close())
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, "max-ms")
}
