package slack

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// FuzzHTTPHandler: no request body — correctly signed, so it reaches the
// decoders of slash commands, Events API callbacks and interactivity
// payloads — makes the handler panic or answer 5xx; a request with a
// wrong signature is always 401.
func FuzzHTTPHandler(f *testing.F) {
	a, err := New(Config{Mode: ModeHTTP, BotToken: testBotToken, SigningSecret: testSecret}, Options{APIURL: "http://127.0.0.1:1/api/"})
	if err != nil {
		f.Fatal(err)
	}
	h := a.HTTPHandler()
	paths := []string{PathCommands, PathEvents, PathInteractivity}
	f.Add(uint8(0), commandBody("run worker-stalled target=infra-prd worker=0"), true)
	f.Add(uint8(0), []byte("ssl_check=1"), true)
	f.Add(uint8(1), []byte(`{"type":"url_verification","challenge":"abc"}`), true)
	f.Add(uint8(1), []byte(`{"type":"event_callback","event_id":"Ev1","event":{"type":"reaction_added","user":"U1","reaction":"white_check_mark","item":{"type":"message","channel":"C1","ts":"1.2"}}}`), true)
	f.Add(uint8(1), []byte(`{"type":"event_callback","event":{"type":"reaction_removed"}}`), true)
	f.Add(uint8(2), []byte(`payload=%7B%22type%22%3A%22block_actions%22%2C%22user%22%3A%7B%22id%22%3A%22U1%22%7D%2C%22actions%22%3A%5B%7B%22action_id%22%3A%22approve%22%2C%22value%22%3A%22r-1%22%7D%5D%7D`), true)
	f.Add(uint8(2), []byte(`payload=%7B`), false)
	f.Fuzz(func(t *testing.T, path uint8, body []byte, signed bool) {
		p := paths[int(path)%len(paths)]
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req := httptest.NewRequest(http.MethodPost, p, bytes.NewReader(body))
		if p == PathEvents {
			req.Header.Set("Content-Type", "application/json")
		} else {
			req.Header.Set("Content-Type", formType)
		}
		req.Header.Set("X-Slack-Request-Timestamp", ts)
		sig := sign(testSecret, ts, body)
		if !signed {
			sig = sign("another-secret-entirely-0000000", ts, body)
		}
		req.Header.Set("X-Slack-Signature", sig)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if !signed && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s: a request with a wrong signature got %d", p, rec.Code)
		}
		if rec.Code >= 500 {
			t.Fatalf("%s: %d for %q", p, rec.Code, body)
		}
		a.inbox.mu.Lock()
		a.inbox.q = nil // nobody drains it here
		a.inbox.mu.Unlock()
	})
}
