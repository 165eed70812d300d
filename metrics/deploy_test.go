package metrics_test

import (
	"context"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/metrics"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// TestDeployReferencesExistingMetrics: every groundcrew_* series the alert
// rules and the Grafana dashboard query is one the binary exports.
func TestDeployReferencesExistingMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{Targets: []string{"t"}})
	now := time.Now()
	r := &runmodel.Run{ID: "r", Runbook: "rb", Target: "t", State: runmodel.RunSucceeded, Gate: &runmodel.Gate{RequestedAt: now},
		Steps: []runmodel.StepState{{ID: "s", Kind: "query"}}}
	m.RunCommitted(r, &runmodel.Batch{
		Journal: []runmodel.JournalEntry{{Type: runmodel.JRunStarted}, {Type: runmodel.JStepDone, Step: "s"}, {Type: runmodel.JGateOpened}, {Type: runmodel.JRunFinished}},
		Audit:   []runmodel.AuditEntry{{Action: runmodel.ActionApprovalGranted, Time: now}},
	})
	m.DigestSettled("t", digest.Posted, time.Second)
	m.WatchPolled("t", 0, time.Second, nil)
	_, _ = m.Provider(fakeProvider{}).Ops()[0].Do(context.Background(), opmodel.Call{Target: "t"})
	m.Transport("concourse", "t", nil)
	m.Outbox(func() ([]runmodel.OutboxItem, error) { return nil, nil }, time.Now)
	m.StoreSize(func() (int64, error) { return 1, nil })
	m.SetTarget("t", true, true)
	m.ChatConnected(func() bool { return true })
	m.Ready(func() bool { return true })
	m.AlertPath().Incidents(func() (map[string]int, error) { return map[string]int{"open": 1}, nil })
	exported := scrape(t, m)

	name := regexp.MustCompile(`groundcrew_[a-z_]+`)
	for _, f := range []string{"../deploy/helm/groundcrew/rules/groundcrew.rules.yaml", "../deploy/grafana/groundcrew-dashboard.json"} {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		names := name.FindAllString(string(data), -1)
		require.NotEmpty(t, names, f)
		for _, n := range names {
			assert.Regexp(t, `(?m)^`+n+`[{ ]`, exported, "%s queries %s, which the binary does not export", f, n)
		}
	}
}
