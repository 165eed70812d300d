package metrics_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/metrics"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func TestRunCommitted_RunsStepsGates(t *testing.T) {
	m := metrics.New(metrics.Options{Version: "1.2.3", Targets: []string{"infra-prd"}})
	t0 := time.Date(2025, 3, 10, 8, 0, 0, 0, time.UTC)
	r := &runmodel.Run{ID: "r-1", Runbook: "worker-stalled", Target: "infra-prd", State: runmodel.RunRunning,
		Steps: []runmodel.StepState{{ID: "q", Kind: "query", StartedAt: t0, FinishedAt: t0.Add(2 * time.Second)}}}
	m.RunCommitted(r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}, {Type: runmodel.JStepDone, Step: "q"}}})
	r.Gate = &runmodel.Gate{RequestedAt: t0.Add(time.Minute)}
	m.RunCommitted(r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JGateOpened}}})
	m.RunCommitted(r, &runmodel.Batch{Audit: []runmodel.AuditEntry{{Action: "approve"}, {Action: "approval_granted", Time: t0.Add(4 * time.Minute)}}})
	r.State = runmodel.RunFailed
	m.RunCommitted(r, &runmodel.Batch{Journal: []runmodel.JournalEntry{{Type: runmodel.JRunFinished}}})

	out := scrape(t, m)
	assert.Contains(t, out, `groundcrew_runs_started_total{runbook="worker-stalled"} 1`)
	assert.Contains(t, out, `groundcrew_runs_finished_total{outcome="failed",runbook="worker-stalled"} 1`)
	assert.Contains(t, out, "groundcrew_gates_opened_total 1")
	assert.Contains(t, out, `groundcrew_gates_decided_total{decision="approved"} 1`)
	assert.Contains(t, out, `groundcrew_gates_decided_total{decision="expired"} 0`)
	assert.Contains(t, out, `groundcrew_gate_decision_seconds_sum{decision="approved"} 180`)
	assert.Contains(t, out, `groundcrew_step_duration_seconds_sum{kind="query",status="succeeded"} 2`)
	assert.Contains(t, out, `groundcrew_build_info{goversion="go`)
	assert.Contains(t, out, `version="1.2.3"`)
}

func TestDigestSettled(t *testing.T) {
	m := metrics.New(metrics.Options{Targets: []string{"infra-prd"}})
	m.ExpectDigests("infra-prd")
	m.DigestSettled("infra-prd", digest.Posted, 90*time.Second)
	m.DigestSettled("infra-prd", digest.Skipped, 3*time.Hour)
	out := scrape(t, m)
	assert.Contains(t, out, `groundcrew_digests_total{outcome="posted",target="infra-prd"} 1`)
	assert.Contains(t, out, `groundcrew_digests_total{outcome="skipped",target="infra-prd"} 1`)
	assert.Contains(t, out, `groundcrew_digests_total{outcome="failed",target="infra-prd"} 0`)
	assert.Contains(t, out, `groundcrew_digest_lag_seconds_sum{target="infra-prd"} 90`)
}

func TestWatchPolled(t *testing.T) {
	m := metrics.New(metrics.Options{Targets: []string{"infra-prd"}})
	m.WatchPolled("infra-prd", 2*time.Second, 3*time.Second, nil)
	m.WatchPolled("infra-prd", 0, time.Second, errors.New("503"))
	out := scrape(t, m)
	assert.Contains(t, out, `groundcrew_watch_polls_total{outcome="ok",target="infra-prd"} 1`)
	assert.Contains(t, out, `groundcrew_watch_polls_total{outcome="error",target="infra-prd"} 1`)
	assert.Contains(t, out, `groundcrew_watch_lag_seconds_sum{target="infra-prd"} 2`)
	assert.Contains(t, out, `groundcrew_watch_poll_duration_seconds_sum{target="infra-prd"} 4`)
}

func TestProvider_CountsCallsAndBoundsTargets(t *testing.T) {
	m := metrics.New(metrics.Options{Targets: []string{"infra-prd"}})
	p := m.Provider(fakeProvider{})
	op := p.Ops()[0]
	_, err := op.Do(context.Background(), opmodel.Call{Target: "infra-prd"})
	require.NoError(t, err)
	_, err = op.Do(context.Background(), opmodel.Call{Target: "$(rm -rf /)"})
	require.Error(t, err)
	out := scrape(t, m)
	assert.Contains(t, out, `groundcrew_op_calls_total{operation="postgres.db_table_sizes",outcome="ok",phase="do",target="infra-prd"} 1`)
	assert.Contains(t, out, `groundcrew_op_calls_total{operation="postgres.db_table_sizes",outcome="error",phase="do",target="other"} 1`)
	assert.Contains(t, out, `groundcrew_api_errors_total{api="postgres",reason="error",target="other"} 1`)
	assert.Contains(t, out, `groundcrew_op_duration_seconds_count{operation="postgres.db_table_sizes",phase="do",target="infra-prd"} 1`)
	assert.NotContains(t, out, "rm -rf")
}

type fakeProvider struct{}

func (fakeProvider) Ops() []opmodel.Op {
	return []opmodel.Op{{Name: "postgres.db_table_sizes", Class: opmodel.ClassRead, Do: func(_ context.Context, c opmodel.Call) (opmodel.Result, error) {
		if c.Target != "infra-prd" {
			return opmodel.Result{}, errors.New("no such target")
		}
		return opmodel.Result{}, nil
	}}}
}

func TestTransport_ErrorsAnd429(t *testing.T) {
	codes := []int{200, 429, 503, 404}
	i := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(codes[i%len(codes)])
		i++
	}))
	defer srv.Close()
	m := metrics.New(metrics.Options{})
	c := m.HTTPClient("slack", nil, time.Second)
	for range codes {
		resp, err := c.Get(srv.URL)
		require.NoError(t, err)
		resp.Body.Close()
	}
	_, err := c.Get("http://127.0.0.1:1/")
	require.Error(t, err)
	out := scrape(t, m)
	assert.Contains(t, out, `groundcrew_api_requests_total{api="slack",target=""} 5`)
	assert.Contains(t, out, `groundcrew_api_rate_limited_total{api="slack",target=""} 1`)
	assert.Contains(t, out, `groundcrew_api_errors_total{api="slack",reason="5xx",target=""} 1`)
	assert.Contains(t, out, `groundcrew_api_errors_total{api="slack",reason="4xx",target=""} 2`)
	assert.Contains(t, out, `groundcrew_api_errors_total{api="slack",reason="transport",target=""} 1`)
}

func TestOutboxAndStoreGauges(t *testing.T) {
	m := metrics.New(metrics.Options{})
	now := time.Date(2025, 3, 10, 8, 0, 0, 0, time.UTC)
	m.Outbox(func() ([]runmodel.OutboxItem, error) {
		return []runmodel.OutboxItem{{Queued: now.Add(-5 * time.Minute)}, {Queued: now.Add(-time.Minute)}}, nil
	}, func() time.Time { return now })
	m.StoreSize(func() (int64, error) { return 4096, nil })
	out := scrape(t, m)
	assert.Contains(t, out, "groundcrew_outbox_items 2")
	assert.Contains(t, out, "groundcrew_outbox_oldest_age_seconds 300")
	assert.Contains(t, out, "groundcrew_store_size_bytes 4096")
}

func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}
