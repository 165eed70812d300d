package mattermost

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestParseRetryAfter(t *testing.T) {
	future := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		in       string
		min, max time.Duration
	}{
		{"", 0, 0},
		{"3", 3 * time.Second, 3 * time.Second},
		{"-1", 0, 0},
		{"soon", 0, 0},
		{future, 80 * time.Second, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := parseRetryAfter(tt.in)
			assert.GreaterOrEqual(t, got, tt.min)
			assert.LessOrEqual(t, got, tt.max)
		})
	}
}

func TestAPIError_Retryable(t *testing.T) {
	for status, want := range map[int]bool{0: true, 429: true, 500: true, 502: true, 503: true, 504: true, 400: false, 401: false, 403: false, 404: false, 501: false} {
		assert.Equal(t, want, (&APIError{StatusCode: status}).Retryable(), "status %d", status)
	}
}
