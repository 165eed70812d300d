package alertmanager_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/groundcrew/groundcrew/adapters/alertmanager"
)

// FuzzDecode: the webhook decoder never panics, every error wraps
// ErrMalformed, and what it accepts survives a round trip.
func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("testdata/firing.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"version":"4","status":"resolved","groupKey":"g","alerts":[{"status":"resolved","labels":{"a":"b"}}]}`))
	f.Add([]byte(`{"version":"4"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := alertmanager.Decode(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, alertmanager.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if _, err := alertmanager.Decode(bytes.NewReader(out)); err != nil {
			t.Fatalf("accepted input does not decode again: %v", err)
		}
	})
}
