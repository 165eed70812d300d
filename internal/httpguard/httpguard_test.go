package httpguard

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/internal/httpguard/httpguardtest"
)

func TestReadBody_TrickleIsCutOff(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := ReadBody(w, r, 1<<20, 300*time.Millisecond); err != nil {
			http.Error(w, "slow body", http.StatusRequestTimeout)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Config = Server(h)
	srv.Start()
	defer srv.Close()
	took, answer := httpguardtest.Trickle(t, srv.Listener.Addr().String(), "/", 100*time.Millisecond, 10*time.Second)
	assert.NotEqual(t, "still open", answer)
	assert.Less(t, took, 5*time.Second, "dropped at the body deadline, not held: %s", answer)
}

func TestReadBody_Limit(t *testing.T) {
	rr := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/", strBody(20))
	_, err := ReadBody(rr, r, 10, 0)
	assert.ErrorIs(t, err, ErrTooLarge)
	r = httptest.NewRequest(http.MethodPost, "/", strBody(5))
	b, err := ReadBody(rr, r, 10, 0)
	require.NoError(t, err)
	assert.Len(t, b, 5)
}

// TestServer_UnreadBodyDoesNotHoldTheConnection: a handler that answers
// without reading the body (a 401 before the token check reads anything,
// /healthz) must not keep a trickling client for ReadTimeout (30 s): the
// body deadline applies to every request, read or not.
func TestServer_UnreadBodyDoesNotHoldTheConnection(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no token", http.StatusUnauthorized)
	})
	srv := httptest.NewUnstartedServer(h)
	srv.Config = server(h, 300*time.Millisecond)
	srv.Start()
	defer srv.Close()
	took, answer := httpguardtest.Trickle(t, srv.Listener.Addr().String(), "/", 100*time.Millisecond, 10*time.Second)
	assert.NotEqual(t, "still open", answer)
	assert.Less(t, took, 3*time.Second, "answered at the body deadline, not held until ReadTimeout: %s", answer)
}
