package alertmanager_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

type sink struct {
	mu      sync.Mutex
	signals []incident.Signal
	err     error
}

func (s *sink) Unanswered(context.Context, string, string) error { return nil }

func (s *sink) Signal(_ context.Context, sig incident.Signal) (*incident.Incident, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	s.signals = append(s.signals, sig)
	return &incident.Incident{}, nil
}

type audit struct{ entries []runmodel.AuditEntry }

func (a *audit) AppendAudit(_ context.Context, e runmodel.AuditEntry) error {
	a.entries = append(a.entries, e)
	return nil
}

func diskRoute(t *testing.T) *alertmanager.Route {
	t.Helper()
	r, errs := alertmanager.CompileRoute(0, alertmanager.RouteConfig{
		Match:   map[string]string{"alertname": "FileSystemSpace(FillingUp|AlmostOutOfSpace)", "mountpoint": "/opt/concourse/worker.*"},
		Target:  "infra-prd",
		Channel: "#ci-ops",
		Runbook: "worker-disk-full",
		Params:  map[string]string{"worker": "{{ .labels.instance | shortHost }}", "id": "{{ .labels.instance | workerID }}"},
	})
	require.Empty(t, errs)
	return r
}

type env struct {
	srv   *httptest.Server
	sink  *sink
	audit *audit
	logs  *bytes.Buffer
	obs   *observer
	seen  *dedupe
}

// observer counts what the receiver reports (the metrics' side).
type observer struct {
	mu       sync.Mutex
	outcomes map[string]int
	unrouted int
}

func (o *observer) AlertmanagerNotification(outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes[outcome]++
}

func (o *observer) AlertsUnrouted(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.unrouted += n
}

// dedupe is a durable event-id record (the store's, which outlives a restart).
type dedupe struct {
	mu  sync.Mutex
	ids map[string]bool
}

func (d *dedupe) SeenEvent(_ context.Context, id string, _ time.Time) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := d.ids[id]
	d.ids[id] = true
	return seen, nil
}

func newEnv(t *testing.T, routes ...*alertmanager.Route) *env {
	t.Helper()
	return newEnvWith(t, &dedupe{ids: map[string]bool{}}, routes...)
}

func newEnvWith(t *testing.T, seen *dedupe, routes ...*alertmanager.Route) *env {
	t.Helper()
	e := &env{sink: &sink{}, audit: &audit{}, logs: &bytes.Buffer{}, obs: &observer{outcomes: map[string]int{}}, seen: seen}
	rc, err := alertmanager.NewReceiver(alertmanager.Options{Token: "s3cret", Routes: routes, Targets: []string{"infra-prd"},
		Sink: e.sink, Audit: e.audit, Dedupe: seen, Observer: e.obs, MaxBody: 64 << 10, Logger: slog.New(slog.NewTextHandler(e.logs, nil)),
		WorkerNames: manualNames})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(alertmanager.Path, rc)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) post(t *testing.T, token string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+alertmanager.Path, bytes.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func fixture(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/firing.json")
	require.NoError(t, err)
	return b
}

func TestFiringGroupBecomesOneSignal(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	code, _ := e.post(t, "s3cret", fixture(t))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sink.signals, 1)
	s := e.sink.signals[0]
	assert.True(t, s.Firing)
	assert.Equal(t, `alertmanager:groundcrew:{}:{alertname="FileSystemSpaceFillingUp"}:routes[0]`, s.Key)
	assert.Equal(t, "FileSystemSpaceFillingUp", s.Title)
	assert.Equal(t, "infra-prd", s.Target)
	assert.Equal(t, "#ci-ops", s.Channel)
	assert.Equal(t, "worker-disk-full", s.Runbook)
	assert.Equal(t, map[string]string{"worker": "caascad-ci-workers-infra-infra-prd-0", "id": "0"}, s.Params)
	assert.Equal(t, []string{
		"`instance=caascad-ci-workers-infra-infra-prd-0:9100` — Filesystem has 8% space left",
		"`instance=caascad-ci-workers-infra-infra-prd-1:9100` — Filesystem has 11% space left",
	}, s.Evidence)
	assert.Equal(t, time.Date(2026, 3, 1, 3, 58, 0, 0, time.UTC), s.Since)
	assert.Equal(t, map[string]string{"alertname": "FileSystemSpaceFillingUp"}, s.Silence)
}

func TestResolvedGroup(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	body := strings.ReplaceAll(string(fixture(t)), `"firing"`, `"resolved"`)
	code, _ := e.post(t, "s3cret", []byte(body))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sink.signals, 1)
	assert.False(t, e.sink.signals[0].Firing)
}

func TestTokenRequired(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	for _, tok := range []string{"", "wrong", "s3cret2"} {
		code, body := e.post(t, tok, fixture(t))
		assert.Equal(t, http.StatusUnauthorized, code, tok)
		assert.NotContains(t, body, "s3cret")
	}
	assert.Empty(t, e.sink.signals, "nothing stored")
	assert.Equal(t, map[string]int{"unauthorized": 3}, e.obs.outcomes)
	assert.Contains(t, e.logs.String(), "missing or wrong Bearer token")
	assert.NotContains(t, e.logs.String(), "s3cret")
	_, err := alertmanager.NewReceiver(alertmanager.Options{Sink: e.sink})
	assert.Error(t, err, "no token, no receiver")
}

func TestBadBodies(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	big := strings.Replace(string(fixture(t)), `"Filesystem has 8% space left"`, `"`+strings.Repeat("x", 70<<10)+`"`, 1)
	for name, body := range map[string]string{
		"not json":     "hello",
		"version 3":    strings.Replace(string(fixture(t)), `"version": "4"`, `"version": "3"`, 1),
		"no alerts":    `{"version":"4","status":"firing","groupKey":"g","alerts":[]}`,
		"bad status":   strings.Replace(string(fixture(t)), `"status": "firing",`, `"status": "burning",`, 1),
		"no group key": strings.Replace(string(fixture(t)), `"groupKey"`, `"x"`, 1),
		"trailing":     string(fixture(t)) + "{}",
		"over limit":   big,
	} {
		code, resp := e.post(t, "s3cret", []byte(body))
		if name == "over limit" {
			assert.Equal(t, http.StatusRequestEntityTooLarge, code, name)
			assert.Contains(t, resp, "the body is over 64 KiB, the limit for a notification")
			continue
		}
		assert.Equal(t, http.StatusBadRequest, code, name)
	}
	assert.Empty(t, e.sink.signals, "nothing stored")
	assert.Equal(t, map[string]int{"malformed": 6, "too_large": 1}, e.obs.outcomes)
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+alertmanager.Path, nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestSinkErrorIs500SoAlertmanagerRetries(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	e.sink.err = errors.New("disk full")
	code, _ := e.post(t, "s3cret", fixture(t))
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, map[string]int{"store_error": 1}, e.obs.outcomes)
}

func TestUnroutedAlertIsLoggedAndAuditedOnce(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	body := strings.ReplaceAll(string(fixture(t)), "/opt/concourse/worker", "/var/log")
	for range 3 {
		code, _ := e.post(t, "s3cret", []byte(body))
		require.Equal(t, http.StatusOK, code)
	}
	assert.Empty(t, e.sink.signals)
	assert.Contains(t, e.logs.String(), "alert matches no route")
	assert.Len(t, e.audit.entries, 2, "each unrouted alert is recorded once while it fires")
	assert.Equal(t, runmodel.AuditAction("alert_unrouted"), e.audit.entries[0].Action)
	assert.Contains(t, e.audit.entries[0].Detail, `mountpoint="/var/log"`)
	assert.Equal(t, 6, e.obs.unrouted, "every unrouted alert is counted")
	assert.Equal(t, map[string]int{"ok": 3}, e.obs.outcomes)

	// A restart forgets the in-memory record; the same firing is still
	// audited once. A new firing (another startsAt) is audited again.
	again := newEnvWith(t, e.seen, diskRoute(t))
	code, _ := again.post(t, "s3cret", []byte(body))
	require.Equal(t, http.StatusOK, code)
	assert.Empty(t, again.audit.entries, "the same firing is not audited again after a restart")
	code, _ = again.post(t, "s3cret", []byte(strings.Replace(body, "2026-03-01T03:58:00Z", "2026-03-01T05:58:00Z", 1)))
	require.Equal(t, http.StatusOK, code)
	assert.Len(t, again.audit.entries, 1, "a new firing of the alert is audited")
}

func TestRoutesSplitAGroupAndUnknownTargetOffersNoRunbook(t *testing.T) {
	other, errs := alertmanager.CompileRoute(1, alertmanager.RouteConfig{Name: "by-zone", Match: map[string]string{"alertname": ".*"},
		Target: "{{ .labels.zone }}", Channel: "#ci-{{ .labels.zone }}", Runbook: "worker-stalled"})
	require.Empty(t, errs)
	e := newEnv(t, diskRoute(t), other)
	body := strings.Replace(string(fixture(t)), `"mountpoint": "/opt/concourse/worker", "severity"`, `"mountpoint": "/", "zone": "ocb", "severity"`, 1)
	code, _ := e.post(t, "s3cret", []byte(body))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sink.signals, 2)
	s := e.sink.signals[0]
	if !strings.HasSuffix(s.Key, ":by-zone") {
		s = e.sink.signals[1]
	}
	assert.Equal(t, "ocb", s.Target)
	assert.Equal(t, "#ci-ocb", s.Channel)
	assert.Empty(t, s.Runbook, "target ocb is not configured")
	assert.Contains(t, strings.Join(s.Evidence, "\n"), "target `ocb` (from route by-zone) is not configured")
	assert.NotEqual(t, e.sink.signals[0].Key, e.sink.signals[1].Key)
}

func TestCompileRouteErrors(t *testing.T) {
	_, errs := alertmanager.CompileRoute(0, alertmanager.RouteConfig{Match: map[string]string{"alertname": "("},
		Params: map[string]string{"worker": "{{ .labels.x", "target": "x"}, Autostart: "all"})
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	assert.ElementsMatch(t, []string{"match.alertname", "channel", "params.target", "params.worker", "params", "autostart"}, fields)
}

func TestSilencer(t *testing.T) {
	var got map[string]any
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/v2/silences", r.URL.Path)
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
		_, _ = io.WriteString(w, `{"silenceID":"7b3c"}`)
	}))
	defer am.Close()
	now := time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)
	s := &alertmanager.Silencer{URL: am.URL, Now: func() time.Time { return now }}
	id, err := s.Silence(context.Background(), map[string]string{"alertname": "X"}, time.Hour, "@bob", "incident i-1")
	require.NoError(t, err)
	assert.Equal(t, "7b3c", id)
	assert.Equal(t, "2026-03-01T05:00:00Z", got["endsAt"])
	assert.Equal(t, "@bob", got["createdBy"])
	assert.Equal(t, []any{map[string]any{"name": "alertname", "value": "X", "isRegex": false, "isEqual": true}}, got["matchers"])
}

// TestParamThatRendersEmptyIsKeptAndExplained: an instance without a
// worker number gives workerID ""; the parameter is kept (empty, so the
// incident shows a placeholder) and the evidence says why, instead of the
// parameter silently disappearing from the suggested run. shortHost keeps
// an IP address whole (it used to cut it to "10").
func TestParamThatRendersEmptyIsKeptAndExplained(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	body := strings.ReplaceAll(string(fixture(t)), "caascad-ci-workers-infra-infra-prd-0:9100", "10.0.4.17:9100")
	body = strings.ReplaceAll(body, "caascad-ci-workers-infra-infra-prd-1:9100", "10.0.4.18:9100")
	code, _ := e.post(t, "s3cret", []byte(body))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sink.signals, 1)
	s := e.sink.signals[0]
	assert.Equal(t, map[string]string{"worker": "10.0.4.17", "id": ""}, s.Params)
	assert.Contains(t, strings.Join(s.Evidence, "\n"), "⚠️ parameter `id` could not be filled from this alert (route routes[0], params.id gave nothing)")
}

// groupOf builds a notification of n alerts of one instance.
func groupOf(t *testing.T, status string, n, truncated int, instance string) []byte {
	t.Helper()
	var mounts []string
	for i := range n {
		mounts = append(mounts, fmt.Sprintf("/opt/concourse/worker/vol%04d", i))
	}
	return groupOfMounts(t, status, truncated, instance, mounts...)
}

// groupOfMounts builds a notification of one alert per mount point of one
// instance, in the order given.
func groupOfMounts(t *testing.T, status string, truncated int, instance string, mounts ...string) []byte {
	t.Helper()
	var m alertmanager.Message
	require.NoError(t, json.Unmarshal(fixture(t), &m))
	m.Status, m.TruncatedAlerts = status, truncated
	m.GroupLabels = map[string]string{"alertname": "FileSystemSpaceFillingUp", "instance": instance}
	m.GroupKey = `{}:{alertname="FileSystemSpaceFillingUp", instance="` + instance + `"}`
	proto := m.Alerts[0]
	m.Alerts = nil
	for i, mp := range mounts {
		a := proto
		a.Status = status
		a.Labels = map[string]string{"alertname": "FileSystemSpaceFillingUp", "instance": instance, "mountpoint": mp, "severity": "warning"}
		a.Fingerprint = fmt.Sprintf("%016x", i)
		m.Alerts = append(m.Alerts, a)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

// TestEvidenceInNumberOrder: the alerts of a group are listed as people
// count (vol2 before vol10), not as text (vol0, vol1000, vol100, vol1001,
// …), a mount point before the ones below it: the 50 kept as evidence of
// 120 volumes are vol0 … vol49, and the incident's first lines are vol0 …
// vol4.
func TestEvidenceInNumberOrder(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	inst := "caascad-ci-workers-infra-infra-prd-0:9100"
	code, _ := e.post(t, "s3cret", groupOfMounts(t, "firing", 0, inst,
		"/opt/concourse/worker/vol1000", "/opt/concourse/worker/vol100", "/opt/concourse/worker/vol10",
		"/opt/concourse/worker/vol2", "/opt/concourse/worker/vol0", "/opt/concourse/worker", "/opt/concourse/worker/data-2b"))
	require.Equal(t, http.StatusOK, code)
	line := func(mp string) string { return "`mountpoint=" + mp + "` — Filesystem has 8% space left" }
	assert.Equal(t, []string{line("/opt/concourse/worker"), line("/opt/concourse/worker/data-2b"), line("/opt/concourse/worker/vol0"),
		line("/opt/concourse/worker/vol2"), line("/opt/concourse/worker/vol10"), line("/opt/concourse/worker/vol100"),
		line("/opt/concourse/worker/vol1000")}, e.sink.signals[0].Evidence)

	var mounts []string
	for i := 119; i >= 0; i-- {
		mounts = append(mounts, fmt.Sprintf("/opt/concourse/worker/vol%d", i))
	}
	code, _ = e.post(t, "s3cret", groupOfMounts(t, "firing", 0, inst, mounts...))
	require.Equal(t, http.StatusOK, code)
	ev := e.sink.signals[1].Evidence
	require.Len(t, ev, alertmanager.MaxEvidenceAlerts+1)
	for i := range alertmanager.MaxEvidenceAlerts {
		assert.Equal(t, line(fmt.Sprintf("/opt/concourse/worker/vol%d", i)), ev[i])
	}
	assert.Equal(t, "… and 70 more", ev[alertmanager.MaxEvidenceAlerts])
}

// TestMostSevereAlertsFirst: the incident's message shows the first
// alerts of a group, so a critical one among warnings comes first, saying
// its severity (the usual one, warning, is not repeated on every line);
// the signal counts every firing alert, those Alertmanager left out
// included.
func TestMostSevereAlertsFirst(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	inst := "caascad-ci-workers-infra-infra-prd-0:9100"
	body := groupOfMounts(t, "firing", 4, inst, "/opt/concourse/worker/vol0", "/opt/concourse/worker/vol1", "/opt/concourse/worker/vol2", "/opt/concourse/worker/vol10")
	var m alertmanager.Message
	require.NoError(t, json.Unmarshal(body, &m))
	m.Alerts[3].Labels["severity"] = "critical"
	m.Alerts[1].Labels["severity"] = "info"
	body, err := json.Marshal(m)
	require.NoError(t, err)
	code, _ := e.post(t, "s3cret", body)
	require.Equal(t, http.StatusOK, code)
	s := e.sink.signals[0]
	assert.Equal(t, []string{
		"`mountpoint=/opt/concourse/worker/vol10 severity=critical` — Filesystem has 8% space left",
		"`mountpoint=/opt/concourse/worker/vol0` — Filesystem has 8% space left",
		"`mountpoint=/opt/concourse/worker/vol2` — Filesystem has 8% space left",
		"`mountpoint=/opt/concourse/worker/vol1 severity=info` — Filesystem has 8% space left",
		"… and 4 more (4 not sent by Alertmanager: max_alerts)",
	}, s.Evidence)
	assert.Equal(t, 8, s.Alerts, "4 listed, 4 left out by Alertmanager")

	// One severity for all: it says nothing about one of them.
	code, _ = e.post(t, "s3cret", groupOfMounts(t, "firing", 0, inst, "/opt/concourse/worker/vol1"))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, []string{"`mountpoint=/opt/concourse/worker/vol1` — Filesystem has 8% space left"}, e.sink.signals[1].Evidence)
	assert.Equal(t, 1, e.sink.signals[1].Alerts)
}

// TestTitleSaysWhichObject: with group_by [alertname, instance], 100
// incidents were 100 identical "FileSystemSpaceFillingUp" lines. The group
// labels beyond alertname and the object labels every alert shares are in
// the title; the evidence does not repeat them; a 10 KB label value is
// shortened wherever it is shown.
func TestTitleSaysWhichObject(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	code, _ := e.post(t, "s3cret", groupOf(t, "firing", 2, 0, "caascad-ci-workers-infra-infra-prd-0:9100"))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sink.signals, 1)
	s := e.sink.signals[0]
	assert.Equal(t, "FileSystemSpaceFillingUp · instance=caascad-ci-workers-infra-infra-prd-0:9100", s.Title)
	assert.Equal(t, []string{"`mountpoint=/opt/concourse/worker/vol0000` — Filesystem has 8% space left",
		"`mountpoint=/opt/concourse/worker/vol0001` — Filesystem has 8% space left"}, s.Evidence)

	// Grouped by alertname only, an instance every alert shares names the object too.
	body := strings.ReplaceAll(string(fixture(t)), "caascad-ci-workers-infra-infra-prd-1:9100", "caascad-ci-workers-infra-infra-prd-0:9100")
	code, _ = e.post(t, "s3cret", []byte(body))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "FileSystemSpaceFillingUp · instance=caascad-ci-workers-infra-infra-prd-0:9100", e.sink.signals[1].Title)
	// Two instances: nothing to add.
	code, _ = e.post(t, "s3cret", fixture(t))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "FileSystemSpaceFillingUp", e.sink.signals[2].Title)

	huge := strings.Repeat("x", 10<<10)
	body = strings.ReplaceAll(string(fixture(t)), `"mountpoint": "/opt/concourse/worker"`, `"mountpoint": "/opt/concourse/worker", "job": "`+huge+`"`)
	body = strings.Replace(body, `"instance": "caascad-ci-workers-infra-infra-prd-1:9100"`, `"instance": "caascad-ci-workers-infra-infra-prd-1:9100", "pod": "`+huge+`"`, 1)
	code, _ = e.post(t, "s3cret", []byte(body))
	require.Equal(t, http.StatusOK, code)
	s = e.sink.signals[3]
	assert.Less(t, len(s.Title), 200, s.Title)
	assert.Contains(t, s.Title, "job=xxx")
	for _, l := range s.Evidence {
		assert.Less(t, len(l), 400, l)
	}
}

// TestEveryAlertOfAGroupIsTaken: 1,200 alerts of one instance used to be
// refused with 400 (Alertmanager never retries), the resolve too, and the
// incident stayed open for ever. A well-formed notification is taken
// whatever its number of alerts: the first ones are the evidence, the rest
// are counted, truncatedAlerts included, and a resolve always applies.
func TestEveryAlertOfAGroupIsTaken(t *testing.T) {
	route := diskRoute(t)
	e := newEnv(t, route)
	e.srv.Close()
	rc, err := alertmanager.NewReceiver(alertmanager.Options{Token: "s3cret", Routes: []*alertmanager.Route{route}, Targets: []string{"infra-prd"},
		Sink: e.sink, Observer: e.obs, Logger: slog.New(slog.NewTextHandler(e.logs, nil))})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(alertmanager.Path, rc)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)

	inst := "caascad-ci-workers-infra-infra-prd-0:9100"
	code, resp := e.post(t, "s3cret", groupOf(t, "firing", 1200, 0, inst))
	require.Equal(t, http.StatusOK, code, resp)
	s := e.sink.signals[0]
	assert.True(t, s.Firing)
	require.Len(t, s.Evidence, alertmanager.MaxEvidenceAlerts+1)
	assert.Equal(t, "… and 1,150 more", s.Evidence[alertmanager.MaxEvidenceAlerts])

	code, _ = e.post(t, "s3cret", groupOf(t, "firing", 1000, 200, inst))
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, "… and 1,150 more (200 not sent by Alertmanager: max_alerts)", e.sink.signals[1].Evidence[alertmanager.MaxEvidenceAlerts])

	code, _ = e.post(t, "s3cret", groupOf(t, "resolved", 1200, 0, inst))
	require.Equal(t, http.StatusOK, code)
	assert.False(t, e.sink.signals[2].Firing, "the resolve of a big group applies")
	assert.Equal(t, s.Key, e.sink.signals[2].Key)

	// The alerts Alertmanager left out may be firing: the group stays open.
	body := groupOf(t, "resolved", 3, 0, inst)
	body = bytes.Replace(body, []byte(`"status":"resolved","receiver"`), []byte(`"status":"firing","receiver"`), 1)
	body = bytes.Replace(body, []byte(`"truncatedAlerts":0`), []byte(`"truncatedAlerts":5`), 1)
	code, _ = e.post(t, "s3cret", body)
	require.Equal(t, http.StatusOK, code)
	assert.True(t, e.sink.signals[3].Firing, "firing alerts may be among the truncated ones")

	// In a resolved notification the alerts left out are resolved too:
	// nothing is said to be firing "and 50 more".
	code, _ = e.post(t, "s3cret", groupOf(t, "resolved", 3, 50, inst))
	require.Equal(t, http.StatusOK, code)
	assert.False(t, e.sink.signals[4].Firing)
	for _, l := range e.sink.signals[4].Evidence {
		assert.NotContains(t, l, "more", "a resolved group lists no alerts left out")
	}
	assert.Equal(t, map[string]int{"ok": 5}, e.obs.outcomes)
}

// TestSilencerExpiresAndCountsFiringAlerts: DELETE /api/v2/silence/{id};
// GET /api/v2/alerts with the group's matchers, silenced and inhibited
// alerts included, resolved ones not counted.
func TestSilencerExpiresAndCountsFiringAlerts(t *testing.T) {
	now := time.Date(2026, 3, 1, 4, 0, 0, 0, time.UTC)
	var deleted []string
	var query []string
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/api/v2/silence/"):
			id := strings.TrimPrefix(r.URL.Path, "/api/v2/silence/")
			deleted = append(deleted, id)
			if id == "gone" {
				http.Error(w, "silence not found", http.StatusNotFound)
			}
		case r.Method == http.MethodGet && r.URL.Path == "/api/v2/alerts":
			query = r.URL.Query()["filter"]
			assert.Equal(t, "true", r.URL.Query().Get("silenced"))
			assert.Equal(t, "true", r.URL.Query().Get("inhibited"))
			_, _ = io.WriteString(w, `[
  {"labels": {"alertname": "X", "instance": "a\"b"}, "endsAt": "2026-03-01T04:05:00Z", "status": {"state": "suppressed", "silencedBy": ["s1"]}},
  {"labels": {"alertname": "X", "instance": "a\"b"}, "endsAt": "2026-03-01T03:59:00Z", "status": {"state": "active"}},
  {"labels": {"alertname": "Y", "instance": "a\"b"}, "endsAt": "2026-03-01T04:05:00Z", "status": {"state": "active"}}
]`)
		default:
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusTeapot)
		}
	}))
	defer am.Close()
	s := &alertmanager.Silencer{URL: am.URL, Now: func() time.Time { return now }}
	ctx := context.Background()
	require.NoError(t, s.Expire(ctx, "7b3c"))
	require.NoError(t, s.Expire(ctx, "gone"), "a silence Alertmanager no longer has has ended")
	assert.Equal(t, []string{"7b3c", "gone"}, deleted)
	n, err := s.Firing(ctx, map[string]string{"alertname": "X", "instance": `a"b`})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the silenced one fires; the ended one and the other alert do not count")
	assert.Equal(t, []string{`alertname="X"`, `instance="a\"b"`}, query)

	down := &alertmanager.Silencer{URL: "http://127.0.0.1:1"}
	_, err = down.Firing(ctx, map[string]string{"alertname": "X"})
	assert.ErrorContains(t, err, "listing alerts in Alertmanager http://127.0.0.1:1")
}

// TestEvidenceKeysAreTheAlerts: a line leaves out the labels every alert
// of the group shares; when an alert joins with another value of one of
// them (device), every line shows it and reads differently. Each line
// carries its alert's identity — Alertmanager's fingerprint, or a hash of
// the labels when it sent none — which does not change, so the incident
// compares alerts, not their text.
func TestEvidenceKeysAreTheAlerts(t *testing.T) {
	e := newEnv(t, diskRoute(t))
	inst := "caascad-ci-workers-infra-infra-prd-0:9100"
	group := func(devices ...string) []byte {
		var mounts []string
		for i := range devices {
			mounts = append(mounts, fmt.Sprintf("/opt/concourse/worker/vol%d", i))
		}
		var m alertmanager.Message
		require.NoError(t, json.Unmarshal(groupOfMounts(t, "firing", 0, inst, mounts...), &m))
		for i, d := range devices {
			m.Alerts[i].Labels["device"] = d
			m.Alerts[i].Fingerprint = ""
		}
		m.Alerts[0].Fingerprint = "c0ffee0000000000" // as Alertmanager sends it
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	code, _ := e.post(t, "s3cret", group("/dev/sda1", "/dev/sda1", "/dev/sda1"))
	require.Equal(t, http.StatusOK, code)
	code, _ = e.post(t, "s3cret", group("/dev/sda1", "/dev/sda1", "/dev/sda1", "/dev/sdb1"))
	require.Equal(t, http.StatusOK, code)
	require.Len(t, e.sink.signals, 2)
	before, after := e.sink.signals[0], e.sink.signals[1]
	assert.Equal(t, "`mountpoint=/opt/concourse/worker/vol1` — Filesystem has 8% space left", before.Evidence[1], "device is common: not said")
	assert.Equal(t, "`device=/dev/sda1 mountpoint=/opt/concourse/worker/vol1` — Filesystem has 8% space left", after.Evidence[1], "no longer common: said")
	require.Len(t, before.EvidenceKeys, 3)
	require.Len(t, after.EvidenceKeys, 4)
	assert.Equal(t, "c0ffee0000000000", before.EvidenceKeys[0], "Alertmanager's fingerprint")
	assert.Equal(t, before.EvidenceKeys, after.EvidenceKeys[:3], "the same alerts, the same keys")
	assert.NotContains(t, before.EvidenceKeys, after.EvidenceKeys[3], "the alert that joined has its own")
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(after.EvidenceKeys))), 4, "one key per alert")

	// Identical lines are one line, with one key however many alerts.
	var m alertmanager.Message
	require.NoError(t, json.Unmarshal(groupOfMounts(t, "firing", 0, inst, "/opt/concourse/worker/a", "/opt/concourse/worker/a", "/opt/concourse/worker/a", "/opt/concourse/worker/b"), &m))
	b, err := json.Marshal(m)
	require.NoError(t, err)
	code, _ = e.post(t, "s3cret", b)
	require.Equal(t, http.StatusOK, code)
	s := e.sink.signals[2]
	assert.Equal(t, []string{"`mountpoint=/opt/concourse/worker/a` — Filesystem has 8% space left (×3)",
		"`mountpoint=/opt/concourse/worker/b` — Filesystem has 8% space left"}, s.Evidence)
	require.Len(t, s.EvidenceKeys, 2)
	assert.True(t, strings.HasPrefix(s.EvidenceKeys[0], "3×"), s.EvidenceKeys[0])
	assert.Equal(t, fmt.Sprintf("%016x", 3), s.EvidenceKeys[1])

	// A list cut at 50 lines: the keys are those of the lines kept, not
	// of its "… and N more" line.
	var many []string
	for i := range 60 {
		many = append(many, fmt.Sprintf("/opt/concourse/worker/v%d", i))
	}
	code, _ = e.post(t, "s3cret", groupOfMounts(t, "firing", 0, inst, many...))
	require.Equal(t, http.StatusOK, code)
	s = e.sink.signals[3]
	assert.Len(t, s.Evidence, alertmanager.MaxEvidenceAlerts+1)
	assert.Len(t, s.EvidenceKeys, alertmanager.MaxEvidenceAlerts)
}
