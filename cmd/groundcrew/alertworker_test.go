package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// alertWorkerWorld has two stalled workers numbered 7 under two naming
// schemes: worker-7 (not the target's template) and the template's
// caascad-ci-workers-infra-infra-prd-7.
const alertWorkerWorld = `cluster_name: infra-prd
workers:
  - {name: worker-7, state: stalled, containers: 12, age: 3d}
  - {name: caascad-ci-workers-infra-infra-prd-7, state: stalled, containers: 236, age: 38d}
  - {name: caascad-ci-workers-infra-infra-prd-0, containers: 228, age: 38d}
`

// alertWorkerApp is serve's app (console chat, a simulated Concourse with
// alertWorkerWorld, the Alertmanager receiver and one route to
// prune-stalled with params.worker = worker, no params when "") playing script; "/alert
// <instance>" posts a firing alert for that instance to POST /alertmanager.
func alertWorkerApp(t *testing.T, worker string, script ...string) (string, *app) {
	t.Helper()
	return alertWorkerAppWith(t, "prune-stalled", worker, script...)
}

// alertWorkerAppWith is alertWorkerApp with the route's runbook.
func alertWorkerAppWith(t *testing.T, runbook, worker string, script ...string) (string, *app) {
	t.Helper()
	dir := t.TempDir()
	world := filepath.Join(dir, "world.yaml")
	require.NoError(t, os.WriteFile(world, []byte(alertWorkerWorld), 0o600))
	cfg := &config.Config{
		Store:  filepath.Join(dir, "groundcrew.db"),
		Server: config.Server{Listen: "127.0.0.1:0"},
		Chat: config.Chat{Platform: "console", Console: console.Config{
			Users: []string{"bob", "carol"}, Groups: map[string][]string{"ci-oncall": {"bob", "carol"}}}},
		Targets: map[string]*config.Target{"infra-prd": {
			Simulator: &config.Simulator{World: world}, Team: "main",
			Vars:    map[string]string{"zone": "infra-prd", "target": "infra"},
			Workers: concourse.ManualWorkerNaming(),
		}},
		Approvals: policy.Config{Default: runmodel.Policy{Approvers: []string{"group:ci-oncall"}, Required: 1, Expires: runmodel.Duration(30 * time.Minute)}},
		Log:       config.Log{Level: "warn", Format: "text"},
		Alerts: config.Alerts{
			Alertmanager: config.AlertmanagerConfig{Token: "t0ken"},
			Routes: []alertmanager.RouteConfig{{
				Name: "stalled", Match: map[string]string{"alertname": "WorkerStalled"},
				Target: "infra-prd", Channel: "#ci-ops", Runbook: runbook,
			}},
		},
	}
	if worker != "" {
		cfg.Alerts.Routes[0].Params = map[string]string{"worker": worker}
	}
	out := &syncBuffer{}
	var a *app
	post := func(args []string) string {
		labels := map[string]string{"alertname": "WorkerStalled", "instance": args[0]}
		msg := alertmanager.Message{Version: "4", Status: "firing", Receiver: "groundcrew",
			GroupKey: `{}:{instance="` + args[0] + `"}`, GroupLabels: map[string]string{"instance": args[0]}, CommonLabels: labels,
			Alerts: []alertmanager.Alert{{Status: "firing", Labels: labels, StartsAt: time.Now().Add(-5 * time.Minute), Fingerprint: "f" + args[0],
				Annotations: map[string]string{"summary": "worker stopped heartbeating"}}}}
		body, err := json.Marshal(msg)
		require.NoError(t, err)
		req := httptest.NewRequest(http.MethodPost, alertmanager.Path, strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer t0ken")
		rec := httptest.NewRecorder()
		a.mux.ServeHTTP(rec, req)
		return fmt.Sprintf("POST %s: %d", alertmanager.Path, rec.Code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	copts := console.Options{Echo: true, Extra: map[string]func([]string) string{"/alert": post},
		AfterLine: func() { _ = a.eng.WaitIdle(ctx) }}
	a, err := newApp(cfg, appOptions{In: &scriptReader{lines: script}, Out: out, Console: copts, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(a.close)
	require.NoError(t, a.run(ctx))
	return out.String(), a
}

// TestAlertNeverSendsARunToAnotherMachine (#22.2), end to end through the
// webhook: with worker-7 and …-prd-7 both registered, an alert for
// worker-7:9100 suggests worker=worker-7 (not 7, which the target's
// template maps to …-prd-7), the run from its button resolves worker-7, and
// the gate shows the alert's instance next to the resolved worker. A route
// that renders the bare number anyway is stopped by the find-worker step:
// the run never reaches a gate for the other machine.
func TestAlertNeverSendsARunToAnotherMachine(t *testing.T) {
	const route = "{{ .labels.instance | workerID }}"
	t.Run("worker-7 stays worker-7", func(t *testing.T) {
		out, _ := alertWorkerApp(t, route, "/as bob", "/alert worker-7:9100", "/press 1 incident_run")
		assert.Contains(t, out, "Suggested: `/runbook run prune-stalled target=infra-prd worker=worker-7`", out)
		assert.NotContains(t, out, "worker=7`")
		assert.Contains(t, out, "🔔 Started from an alert on `worker-7:9100` · resolved worker `worker-7`", out)
		assert.Contains(t, out, "Plan: prune 1 worker: worker-7")
	})
	t.Run("worker-7's host is unknown, not made up from its name", func(t *testing.T) {
		// The target's templates name caascad-ci-workers-infra-infra-prd-<id>
		// and their hosts: worker-7 is not one of them, so its disk check
		// says the host is unknown and where to find the machine, instead
		// of ssh "worker-7.infra-prd.caascad.com".
		out, _ := alertWorkerAppWith(t, "worker-disk-full", route, "/as bob", "/alert worker-7:9100", "/press 1 incident_run")
		assert.Contains(t, out, "Suggested: `/runbook run worker-disk-full target=infra-prd worker=worker-7`", out)
		assert.Contains(t, out, "⚠️ The host of `worker-7` is unknown: its name does not follow target infra-prd's worker naming", out)
		assert.Contains(t, out, "• Concourse has its Garden address as `10.0.4.10:7777` (`fly -t 'infra-prd' workers --details` shows it too)")
		assert.Contains(t, out, "• the alert is about `worker-7:9100`: Prometheus reaches the machine at that address;")
		assert.Contains(t, out, "df -h /opt/concourse/worker/{,volumes}", "the step itself is unchanged")
		assert.NotContains(t, out, "worker-7.infra-prd.caascad.com")
	})
	t.Run("the template's own host gives its ID", func(t *testing.T) {
		out, _ := alertWorkerApp(t, route, "/as bob", "/alert caascad-ci-workers-infra-infra-prd-7.infra-prd.caascad.com:9100", "/press 1 incident_run")
		assert.Contains(t, out, "Suggested: `/runbook run prune-stalled target=infra-prd worker=7`", out)
		assert.Contains(t, out, "· resolved worker `caascad-ci-workers-infra-infra-prd-7`", out)
	})
	t.Run("a route without worker never prunes every stalled worker", func(t *testing.T) {
		out, a := alertWorkerApp(t, "", "/as bob", "/alert worker-7:9100", "/press 1 incident_run")
		assert.NotContains(t, out, "Plan: prune", "no gate to prune other machines:\n%s", out)
		runs, err := a.db.ListRuns(context.Background(), runmodel.RunQuery{})
		require.NoError(t, err)
		if assert.Len(t, runs, 1, out) {
			assert.Equal(t, runmodel.RunFailed, runs[0].State, out)
		}
	})
	t.Run("a bare number for another host fails closed", func(t *testing.T) {
		naive := `{{ reReplaceAll ".*-([0-9]+)(:[0-9]+)?$" "$1" .labels.instance }}`
		out, a := alertWorkerApp(t, naive, "/as bob", "/alert worker-7:9100", "/press 1 incident_run")
		assert.Contains(t, out, "worker=7`", "the naive route renders the number")
		assert.Contains(t, out, "the alert is about worker-7:9100, but the worker found (worker=7) is caascad-ci-workers-infra-infra-prd-7, another machine", out)
		assert.NotContains(t, out, "Plan: prune", "no gate to destroy another machine")
		runs, err := a.db.ListRuns(context.Background(), runmodel.RunQuery{})
		require.NoError(t, err)
		require.Len(t, runs, 1)
		assert.Equal(t, runmodel.RunFailed, runs[0].State)
		assert.Equal(t, "worker-7:9100", runs[0].AlertInstance, "the run carries the alert's instance")
	})
}
