package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// output is a goroutine-safe buffer of a process's output.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if os.Getenv("GROUNDCREW_E2E_VERBOSE") != "" {
		os.Stderr.Write(p)
	}
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func waitFor(t *testing.T, what string, timeout time.Duration, dump func() string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; output:\n%s", timeout, what, dump())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func httpOK(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

type alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

func postAlerts(t *testing.T, amURL string, alerts []alert) {
	t.Helper()
	body, err := json.Marshal(alerts)
	require.NoError(t, err)
	resp, err := http.Post(amURL+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

// TestAlertmanagerOpensDedupesAndResolves: a real Alertmanager notifies
// groundcrew; the firing group opens one incident thread, Alertmanager's
// repeat notifications update it without a second thread, and the
// resolved notification resolves it.
func TestAlertmanagerOpensDedupesAndResolves(t *testing.T) {
	e := newEnv(t, `{alertname: "FileSystemSpace(FillingUp|AlmostOutOfSpace)", mountpoint: "/opt/concourse/worker.*"}`, "")
	amBin, dir, gcBin, amPort, token := e.amBin, e.dir, e.gcBin, e.amPort, e.token
	gcURL, amURL := e.gcURL, e.amURL

	// groundcrew serve with the console: stdin stays open until the end.
	gcOut, gcErr := &output{}, &output{}
	gc := exec.Command(gcBin, "serve", "--config", filepath.Join(dir, "groundcrew.yaml"))
	gc.Dir = dir
	stdin, err := gc.StdinPipe()
	require.NoError(t, err)
	gc.Stdout, gc.Stderr = gcOut, gcErr
	require.NoError(t, gc.Start())
	defer func() { _ = gc.Process.Kill(); _ = gc.Wait() }()
	dump := func() string {
		return "--- groundcrew stdout\n" + gcOut.String() + "\n--- groundcrew stderr\n" + gcErr.String()
	}
	waitFor(t, "groundcrew /healthz", 30*time.Second, dump, func() bool { return httpOK(gcURL + "/healthz") })

	// A wrong token is refused with 401 before anything else.
	req, _ := http.NewRequest(http.MethodPost, gcURL+"/alertmanager", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// A real Alertmanager with a webhook receiver pointing at groundcrew.
	amOut := startAlertmanager(t, amBin, dir, amPort, gcURL, token, "  group_by: [alertname]\n  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 3s")
	dumpAll := func() string { return dump() + "\n--- alertmanager\n" + amOut.String() }

	now := time.Now().UTC()
	alerts := func(ends time.Time) []alert {
		var out []alert
		for i := range 2 {
			out = append(out, alert{
				Labels: map[string]string{"alertname": "FileSystemSpaceFillingUp", "mountpoint": "/opt/concourse/worker",
					"instance": fmt.Sprintf("caascad-ci-workers-infra-infra-prd-%d:9100", i)},
				Annotations: map[string]string{"summary": fmt.Sprintf("Filesystem has %d%% space left", 8+i)},
				StartsAt:    now, EndsAt: ends,
			})
		}
		return out
	}
	postAlerts(t, amURL, alerts(now.Add(10*time.Minute)))

	roots := regexp.MustCompile(`(?m)^#\d+ 🚨 FileSystemSpaceFillingUp on ` + "`infra-prd`" + ` — incident ` + "`(i-[0-9a-f]+)`")
	waitFor(t, "the incident to open", 30*time.Second, dumpAll, func() bool { return roots.MatchString(gcOut.String()) })
	// The console writes a message in more than one write: wait for the
	// whole root message, not just its first line.
	for _, want := range []string{
		"`instance=caascad-ci-workers-infra-infra-prd-0:9100` — Filesystem has 8% space left",
		"`/runbook run worker-disk-full target=infra-prd worker=caascad-ci-workers-infra-infra-prd-0`",
	} {
		waitFor(t, "the incident message to show "+want, 10*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), want) })
	}

	// Alertmanager repeats the notification every repeat_interval: the
	// incident counts them, and no second thread opens.
	waitFor(t, "repeat notifications", 45*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), "· 3 notifications") })
	assert.Len(t, roots.FindAllString(gcOut.String(), -1), 1, "one incident thread however many notifications")

	// 🔕 Silence 1 h creates ONE silence through Alertmanager's v2 API, by
	// the person who pressed it; the status says it and the button becomes
	// "Expire silence".
	_, err = io.WriteString(stdin, "/as bob\n/press 1 incident_silence\n")
	require.NoError(t, err)
	waitFor(t, "the silence", 20*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), "🔕 @bob silenced these alerts for 1 h") })
	silenceID := regexp.MustCompile("silence `([^`]+)`").FindStringSubmatch(gcOut.String())[1]
	// The button is gone (a second press of an old copy of the message is
	// refused: incident tests).
	waitFor(t, "the status to say silenced", 20*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), "[🔔 Expire silence]") })
	_, err = io.WriteString(stdin, "/as carol\n")
	require.NoError(t, err)
	assert.Contains(t, gcOut.String(), "🔕 silenced until")
	assert.Contains(t, gcOut.String(), "[🔔 Expire silence]")
	sil := getSilence(t, amURL, silenceID)
	assert.Equal(t, "@bob", sil.CreatedBy)
	assert.Equal(t, "active", sil.Status.State)
	require.Len(t, sil.Matchers, 1)
	assert.Equal(t, "alertname", sil.Matchers[0].Name)
	assert.Equal(t, "FileSystemSpaceFillingUp", sil.Matchers[0].Value)
	assert.Equal(t, 1, activeSilences(t, amURL))

	// Expire silence deletes it in Alertmanager.
	_, err = io.WriteString(stdin, "/press 1 incident_unsilence\n")
	require.NoError(t, err)
	waitFor(t, "the silence to expire", 20*time.Second, dumpAll, func() bool {
		return strings.Contains(gcOut.String(), "🔔 @carol expired the silence `"+silenceID+"`")
	})
	assert.Equal(t, "expired", getSilence(t, amURL, silenceID).Status.State)
	assert.Equal(t, 0, activeSilences(t, amURL))

	// Silenced again (once the coalesced edit gave the button back), the
	// alerts end: Alertmanager sends nothing for muted alerts, groundcrew
	// asks its API and resolves the incident.
	waitFor(t, "the silence button to come back", 20*time.Second, dumpAll, func() bool {
		_, after, _ := strings.Cut(gcOut.String(), "expired the silence")
		return strings.Contains(after, "[🔕 Silence 1 h]")
	})
	// carol and dave press "Silence" one right after the other (dave on
	// the root as he sees it, before the coalesced edit takes the button
	// away): one silence is made, and dave is told privately who silenced
	// it and until when.
	_, err = io.WriteString(stdin, "/press 1 incident_silence\n/as dave\n/press 1 incident_silence\n")
	require.NoError(t, err)
	waitFor(t, "the second silence", 20*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), "🔕 @carol silenced these alerts for 1 h") })
	silenceID2 := regexp.MustCompile("@carol silenced these alerts for 1 h[^`]*`([^`]+)`").FindStringSubmatch(gcOut.String())[1]
	require.NotEqual(t, silenceID, silenceID2)
	waitFor(t, "dave's press to be answered", 20*time.Second, dumpAll, func() bool {
		return strings.Contains(gcOut.String(), "is already silenced until") || strings.Contains(gcOut.String(), `message #1 has no "incident_silence" button`)
	})
	if strings.Contains(gcOut.String(), `message #1 has no "incident_silence" button`) {
		t.Log("the root's edit came before dave's press: the two-presses case is covered by the incident tests")
	} else {
		assert.Regexp(t, `\(only @dave sees this\)[^\n]*is already silenced until \d\d:\d\d UTC by @carol`, gcOut.String())
	}
	assert.Equal(t, 1, activeSilences(t, amURL), "one silence however many presses")

	postAlerts(t, amURL, alerts(time.Now().UTC().Add(-time.Second)))
	waitFor(t, "the silenced incident to resolve", 60*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), "✅ Resolved after") })
	assert.Contains(t, gcOut.String(), "Alertmanager has no firing alert for it any more")
	assert.Len(t, roots.FindAllString(gcOut.String(), -1), 1)
	// The silence ends with its incident: expired in Alertmanager, and the
	// thread says so.
	waitFor(t, "the silence to end with the incident", 20*time.Second, dumpAll, func() bool {
		return strings.Contains(gcOut.String(), "🔔 Silence `"+silenceID2+"` expired with the incident")
	})
	assert.Equal(t, "expired", getSilence(t, amURL, silenceID2).Status.State)
	assert.Equal(t, 0, activeSilences(t, amURL))

	_, err = io.WriteString(stdin, "/runbook incidents\n")
	require.NoError(t, err)
	waitFor(t, "/runbook incidents", 10*time.Second, dumpAll, func() bool { return strings.Contains(gcOut.String(), "No open incidents.") })
	assert.Equal(t, 1, strings.Count(gcErr.String(), "missing or wrong Bearer token"), "only our wrong-token request was refused")
	_ = stdin.Close()
}

type silenceInfo struct {
	CreatedBy string `json:"createdBy"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
	Matchers []struct {
		Name, Value string
	} `json:"matchers"`
}

func getSilence(t *testing.T, amURL, id string) silenceInfo {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/silence/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	var sil silenceInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&sil))
	return sil
}

func activeSilences(t *testing.T, amURL string) int {
	t.Helper()
	resp, err := http.Get(amURL + "/api/v2/silences")
	require.NoError(t, err)
	defer resp.Body.Close()
	var sils []silenceInfo
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&sils))
	n := 0
	for _, s := range sils {
		if s.Status.State == "active" {
			n++
		}
	}
	return n
}

// setup skips the test without a real Alertmanager (run.sh builds one) and
// builds groundcrew into a fresh directory: the Alertmanager binary, that
// directory and the groundcrew binary.
func setup(t *testing.T) (amBin, dir, gcBin string) {
	t.Helper()
	amBin = os.Getenv("GROUNDCREW_E2E_ALERTMANAGER_BINARY")
	if amBin == "" {
		t.Skip("GROUNDCREW_E2E_ALERTMANAGER_BINARY is not set: run e2e/alertmanager/run.sh")
	}
	dir = t.TempDir()
	gcBin = filepath.Join(dir, "groundcrew")
	build := exec.Command("go", "build", "-o", gcBin, "./cmd/groundcrew")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	return amBin, dir, gcBin
}
