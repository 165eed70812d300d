package concourse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzEventStream: no server response makes the build event-stream (SSE)
// parser panic or loop: it ends with io.EOF or an error.
func FuzzEventStream(f *testing.F) {
	for _, s := range []string{
		"id: 0\nevent: event\ndata: {\"data\":{\"origin\":{\"id\":\"x\"},\"payload\":\"hello\\n\"},\"event\":\"log\",\"version\":\"5.1\"}\n\nevent: end\ndata\n\n",
		"event: event\ndata: {\"event\":\"status\",\"data\":{\"status\":\"succeeded\",\"time\":1}}\n\n",
		": comment\n\n\n", "event: nope\n\n", "data: a\ndata: b\n", "id:\r\nevent: event\r\ndata: {}\r\n\r\n", "event: event\ndata: {\"event\":\"log\",\"data\":",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &EventStream{body: io.NopCloser(bytes.NewReader(data)), cancel: func() {}, r: bufio.NewReaderSize(bytes.NewReader(data), 64<<10)}
		for i := 0; ; i++ {
			if i > len(data)+2 {
				t.Fatalf("more events than bytes: the parser loops on %q", data)
			}
			_, err := s.Next()
			if errors.Is(err, io.EOF) || err != nil {
				return
			}
		}
	})
}
