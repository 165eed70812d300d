package scenario

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden summaries")

// TestSummaries_Golden renders the end-of-run summary of built-in
// runbooks' scenarios and compares it with testdata/summaries/<name>.golden
// (go test ./scenario -run TestSummaries_Golden -update rewrites them).
func TestSummaries_Golden(t *testing.T) {
	cases := map[string]string{
		"success":          "workers-saturated/last resort, every pending build aborted after approval",
		"failure-expired":  "workers-saturated/the bulk abort is not approved in time",
		"rejection":        "worker-stalled/approval rejected, the worker stays",
		"drift":            "workers-saturated/more builds queue while the approval waits, so it is asked again",
		"crash-and-resume": "worker-stalled/groundcrew restarts while the approval waits; the vote already given still counts",
	}
	all, err := LoadFS(Builtin())
	require.NoError(t, err)
	byName := map[string]*Scenario{}
	for _, sc := range all {
		byName[sc.Runbook+"/"+sc.Name] = sc
	}
	ids := regexp.MustCompile(`\br-[0-9a-z]{4,}\b`)
	for golden, name := range cases {
		t.Run(golden, func(t *testing.T) {
			sc, ok := byName[name]
			require.True(t, ok, "no built-in scenario %q", name)
			res := Run(context.Background(), sc, Options{Start: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)})
			require.True(t, res.Passed(), res.Report())
			got := ids.ReplaceAllString(res.Summary, "r-XXXX")
			got = regexp.MustCompile(`127\.0\.0\.1:\d+`).ReplaceAllString(got, "127.0.0.1:PORT")
			got = regexp.MustCompile(`connect \d+ ms`).ReplaceAllString(got, "connect N ms")
			p := filepath.Join("testdata", "summaries", golden+".golden")
			if *update {
				require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
			}
			want, err := os.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, string(want), got)
		})
	}
}
