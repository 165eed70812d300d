package concourse

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSameMachine (#22.2): the alert's instance must be the worker found:
// its name or host, port dropped; worker-7 is not …-prd-7, and an address
// matches nothing.
func TestSameMachine(t *testing.T) {
	const name, host = "caascad-ci-workers-infra-infra-prd-7", "caascad-ci-workers-infra-infra-prd-7.infra-prd.caascad.com"
	for inst, want := range map[string]bool{
		"caascad-ci-workers-infra-infra-prd-7:9100":                       true,
		"caascad-ci-workers-infra-infra-prd-7.infra-prd.caascad.com:9100": true,
		"CAASCAD-CI-WORKERS-INFRA-INFRA-PRD-7:9100":                       true,
		"caascad-ci-workers-infra-infra-prd-7.other.example.com":          true, // short form is the name
		"worker-7:9100": false,
		"caascad-ci-workers-infra-infra-prd-17:9100": false,
		"10.0.4.7:9100": false,
		"[::1]:9100":    false,
		":9100":         false,
	} {
		assert.Equal(t, want, sameMachine(inst, name, host), inst)
	}
}
