package scenario

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"
)

// FuzzParseScenario: no scenario file makes the parser panic.
func FuzzParseScenario(f *testing.F) {
	for _, dir := range []string{"builtin", "testdata"} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(p) == ".yaml" {
				if data, err := os.ReadFile(p); err == nil {
					f.Add(data)
				}
			}
			return nil
		})
	}
	fsys := fstest.MapFS{"world.yaml": {Data: []byte("workers: []\n")}}
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = Parse("fuzz.yaml", data, fsys)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Parse did not return within 5 s on %q", data)
		}
	})
}
