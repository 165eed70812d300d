// Package httpguard keeps groundcrew's HTTP endpoints from being held
// open: server timeouts for every listener, and a deadline and size limit
// for reading a request body, applied by each handler before it verifies
// the request (an unsigned request that trickles its body is dropped after
// BodyTimeout, not kept for as long as the client likes).
package httpguard

import (
	"errors"
	"io"
	"net/http"
	"time"
)

// Timeouts of Server and of reading a body.
const (
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request (headers and body).
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds a handler and its answer (chat endpoints answer
	// within a few seconds; /metrics too).
	WriteTimeout = 60 * time.Second
	IdleTimeout  = 120 * time.Second
	// BodyTimeout is how long a handler waits for a request body.
	BodyTimeout = 5 * time.Second
)

// Server returns an http.Server for h with the timeouts above; every
// request's body must arrive within BodyTimeout (see Guard).
func Server(h http.Handler) *http.Server {
	return server(h, BodyTimeout)
}

func server(h http.Handler, body time.Duration) *http.Server {
	return &http.Server{
		Handler:           Guard(h, body),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
	}
}

// Guard sets the connection's read deadline to timeout from the start of
// each request (BodyTimeout when 0), before h runs. Without it, a handler
// that answers without reading the body (a 401 for a missing token, a
// health check) still holds the connection: net/http drains an unread body
// of up to 256 KiB before writing the answer, for as long as ReadTimeout
// allows. Handlers that need longer set their own deadline (Deadline).
func Guard(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			Deadline(w, timeout)
		}
		h.ServeHTTP(w, r)
	})
}

// ErrTooLarge is returned by ReadBody for a body over its limit.
var ErrTooLarge = errors.New("request body too large")

// ReadBody reads r's body, at most max bytes, within timeout (BodyTimeout
// when 0). The read deadline is set on the connection, so a client sending
// slowly is cut off at the deadline whatever server it came through.
func ReadBody(w http.ResponseWriter, r *http.Request, max int64, timeout time.Duration) ([]byte, error) {
	Deadline(w, timeout)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return nil, ErrTooLarge
	}
	return body, err
}

// Deadline sets the read deadline of the request's connection to timeout
// from now (BodyTimeout when 0), for handlers that read the body
// themselves (ParseForm, a JSON decoder). Where the ResponseWriter cannot
// set deadlines (tests' recorders) it does nothing.
func Deadline(w http.ResponseWriter, timeout time.Duration) {
	if timeout <= 0 {
		timeout = BodyTimeout
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
}
