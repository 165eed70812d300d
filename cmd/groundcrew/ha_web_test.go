package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/web"
)

// TestFailover_StandbyServesLivePages: a standby serves a run's page from
// the store, and its live stream follows the leader's commits (the
// approval, the prune, the end) through PostgreSQL's notifications.
func TestFailover_StandbyServesLivePages(t *testing.T) {
	h := newHAEnv(t, "")
	const key = "ha-web-link-key-0123456789abcdef"
	h.web = "web: {url: \"http://groundcrew.example\", link_key: " + key + "}\n"
	a, b := h.twoReplicas()
	a.say(t, "/runbook run prune-stalled target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0")
	run := h.waitRun("at its gate", 30*time.Second, atGate)
	signer, err := web.NewSigner([]byte(key))
	require.NoError(t, err)
	tok := signer.Sign(web.RunScope(run.ID), time.Now().Add(time.Hour))

	resp, err := http.Get("http://" + b.addr + "/runs/" + run.ID + "?t=" + tok)
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	assert.Contains(t, string(page), "waiting for approval", "the standby's page reads the store")
	assert.Contains(t, b.role(), "standby")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.addr+"/runs/"+run.ID+"/events?t="+tok, nil)
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer stream.Body.Close()
	require.Equal(t, http.StatusOK, stream.StatusCode)
	events := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stream.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			events <- sc.Text()
		}
		close(events)
	}()
	saw := func(what string) {
		t.Helper()
		for {
			select {
			case l, ok := <-events:
				require.True(t, ok, "the stream ended before %q", what)
				if strings.Contains(l, what) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("the standby's stream never said %q", what)
			}
		}
	}
	saw("waiting for approval")
	h.approveOnce(t, a, run.ID) // on the leader
	saw("approved by @carol")
	saw("event: end")
}
