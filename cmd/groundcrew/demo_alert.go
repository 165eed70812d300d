package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/config"
)

// demoAlertToken is the demo receiver's Bearer token.
const demoAlertToken = "demo"

// demoAlertScript is the `demo --alert` script: an alert opens an incident
// and the runbook starts from its button. Message #1 is the incident.
var demoAlertScript = []string{
	"# For 3 minutes Prometheus has seen worker 0's /opt/concourse/worker filling up; Alertmanager notifies groundcrew (POST /alertmanager).", // storyLines adds the time
	"/alert firing",
	"# groundcrew opens one incident thread: the evidence, the suggested runbook as a button and as the exact command. Nothing starts by itself.",
	"# bob is on call: he reacts 👀 to acknowledge.",
	"/as bob",
	"/react 1 👀",
	"# Alertmanager repeats the notification (repeat_interval): the same incident is updated, never a second thread.",
	"/alert firing",
	"/runbook incidents",
	"# bob presses [▶ Run worker-disk-full]: the run starts in the incident thread as if he had typed the command; its gates apply as always.",
	"/press 1 incident_run",
	"# He checks the file systems with the commands shown, and reports.",
	"/react manual ✅",
	"# Destroying the worker's containers needs an approval from someone else: carol approves.",
	"/as carol",
	"/react gate ✅",
	"/as bob",
	"/react manual ✅",
	"# The disk is freed; Prometheus stops alerting and Alertmanager sends the resolved notification: the incident resolves, with its duration.",
	"/clock +12m",
	"/alert resolved",
	"/runbook incidents",
	"# In the incident thread, `/runbook summary` gives the whole incident in one timeline: alert, acknowledgement, run, votes.",
	"/thread 1",
	"/runbook summary",
}

// demoAlertConfig adds the receiver and a route to the demo config.
func demoAlertConfig(cfg *config.Config) {
	// the disk-full story is not about stalled workers removed by Concourse
	cfg.Targets["infra-prd"].StalledWorkerTimeout = 0
	cfg.Alerts = config.Alerts{
		Alertmanager: config.AlertmanagerConfig{Token: demoAlertToken},
		Routes: []alertmanager.RouteConfig{{
			Name:    "disk-full",
			Match:   map[string]string{"alertname": "FileSystemSpace(FillingUp|AlmostOutOfSpace)", "mountpoint": "/opt/concourse/worker.*"},
			Target:  "infra-prd",
			Channel: "#ci-ops",
			Runbook: "worker-disk-full",
			Params:  map[string]string{"worker": "{{ .labels.instance | workerID }}"},
		}},
	}
}

// demoAlert sends an Alertmanager notification through the real handler of
// POST /alertmanager (token check, decoding, routing) and says what it answered.
func demoAlert(a *app, now time.Time, args []string) string {
	if len(args) != 1 || (args[0] != "firing" && args[0] != "resolved") {
		return "usage: /alert firing|resolved   (sends Alertmanager's notification to POST /alertmanager)"
	}
	status := args[0]
	if !a.cfg.Alerts.Enabled() {
		return "alerts are not configured (start the demo with --alert)"
	}
	starts := now.Add(-3 * time.Minute).UTC()
	ends := time.Time{}
	if status == "resolved" {
		ends = now.UTC()
	}
	labels := map[string]string{"alertname": "FileSystemSpaceFillingUp", "instance": "caascad-ci-workers-infra-infra-prd-0:9100",
		"mountpoint": "/opt/concourse/worker", "severity": "warning"}
	msg := alertmanager.Message{Version: "4", Status: status, Receiver: "groundcrew",
		GroupKey:     `{}:{alertname="FileSystemSpaceFillingUp"}`,
		GroupLabels:  map[string]string{"alertname": "FileSystemSpaceFillingUp"},
		CommonLabels: labels, ExternalURL: "http://alertmanager:9093",
		Alerts: []alertmanager.Alert{{Status: status, Labels: labels, StartsAt: starts, EndsAt: ends, Fingerprint: "3d5e1f2a9b8c7d6e",
			Annotations: map[string]string{"summary": "Filesystem /opt/concourse/worker has 6% space left"}}}}
	body, err := json.Marshal(msg)
	if err != nil {
		return err.Error()
	}
	req := httptest.NewRequest(http.MethodPost, alertmanager.Path, strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+demoAlertToken)
	rec := httptest.NewRecorder()
	a.mux.ServeHTTP(rec, req)
	return fmt.Sprintf("Alertmanager → POST %s (%s, 1 alert): %d %s", alertmanager.Path, status, rec.Code, strings.TrimSpace(rec.Body.String()))
}
