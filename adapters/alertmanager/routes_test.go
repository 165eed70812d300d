package alertmanager_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// manualNames is the manual's naming template for infra-prd.
func manualNames(target, id string) (string, bool) {
	if target != "infra-prd" {
		return "", false
	}
	return "caascad-ci-workers-infra-infra-prd-" + id, true
}

// TestWorkerIDOnlyWhenTheHostMatchesTheTemplate (#22.2): workerID gives
// the ID only when the target's naming template names the alert's host for
// that ID; worker-7 (another naming) stays worker-7, never 7 (which is
// caascad-…-prd-7, another machine).
func TestWorkerIDOnlyWhenTheHostMatchesTheTemplate(t *testing.T) {
	for instance, want := range map[string]string{
		"caascad-ci-workers-infra-infra-prd-7:9100":                       "7",
		"caascad-ci-workers-infra-infra-prd-7.infra-prd.caascad.com:9100": "7",
		"worker-7:9100":                                 "worker-7",
		"worker-7.example.com:9100":                     "worker-7",
		"caascad-ci-workers-infra-infra-prd-7-old:9100": "caascad-ci-workers-infra-infra-prd-7-old",
		"10.0.4.7:9100":                                 "",
	} {
		e := newEnv(t, diskRoute(t))
		body := strings.ReplaceAll(string(fixture(t)), "caascad-ci-workers-infra-infra-prd-0:9100", instance)
		code, _ := e.post(t, "s3cret", []byte(body))
		require.Equal(t, http.StatusOK, code)
		require.NotEmpty(t, e.sink.signals)
		s := e.sink.signals[0]
		assert.Equal(t, want, s.Params["id"], instance)
		assert.Equal(t, instance, s.Instance, "the signal carries the alert's instance")
	}
}
