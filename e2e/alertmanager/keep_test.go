package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startAlertmanager starts a real Alertmanager on amPort whose one
// receiver is groundcrew's webhook, with the route given (YAML, indented
// under route:); it returns its output.
func startAlertmanager(t *testing.T, amBin, dir string, amPort int, gcURL, token, route string) *output {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(fmt.Sprintf(`
route:
  receiver: groundcrew
%s
receivers:
  - name: groundcrew
    webhook_configs:
      - url: "%s/alertmanager"
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials_file: "%s"}
`, route, gcURL, token)), 0o600))
	amOut := &output{}
	am := exec.Command(amBin, "--config.file="+filepath.Join(dir, "alertmanager.yml"), "--storage.path="+filepath.Join(dir, "am-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", amPort), "--cluster.listen-address=", "--log.level=debug")
	am.Stdout, am.Stderr = amOut, amOut
	require.NoError(t, am.Start())
	t.Cleanup(func() { _ = am.Process.Kill(); _ = am.Wait() })
	waitFor(t, "Alertmanager /-/ready", 30*time.Second, amOut.String, func() bool {
		return httpOK(fmt.Sprintf("http://127.0.0.1:%d/-/ready", amPort))
	})
	return amOut
}

// e2eEnv is one test's groundcrew and Alertmanager: their binaries,
// directory, ports and the webhook's token file.
type e2eEnv struct {
	amBin, dir, gcBin   string
	gcPort, amPort      int
	gcURL, amURL, token string
}

// newEnv builds groundcrew (setup), picks the ports and writes the token
// and groundcrew.yaml: console chat, a simulated infra-prd, and one
// Alertmanager route of disk alerts matching match (a YAML flow map) to
// worker-disk-full in #ci-ops; alerts are more lines under alerts:.
func newEnv(t *testing.T, match, alerts string) *e2eEnv {
	t.Helper()
	e := &e2eEnv{}
	e.amBin, e.dir, e.gcBin = setup(t)
	e.gcPort, e.amPort = freePort(t), freePort(t)
	e.gcURL, e.amURL = fmt.Sprintf("http://127.0.0.1:%d", e.gcPort), fmt.Sprintf("http://127.0.0.1:%d", e.amPort)
	e.token = filepath.Join(e.dir, "am-token")
	require.NoError(t, os.WriteFile(e.token, []byte("e2e-token\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(e.dir, "groundcrew.yaml"), []byte(fmt.Sprintf(`
store: %s/gc.db
server: {listen: "127.0.0.1:%d"}
chat: {platform: console}
targets:
  infra-prd: {simulator: {}}
alerts:
  alertmanager: {token_file: %s, url: "%s"}
%s
  routes:
    - match: %s
      target: infra-prd
      channel: "#ci-ops"
      runbook: worker-disk-full
      params: {worker: "{{ .labels.instance | shortHost }}"}
`, e.dir, e.gcPort, e.token, e.amURL, alerts, match)), 0o600))
	return e
}

// TestSilenceKeptAfterResolve: with alerts.silences.keep_after_resolve
// the silence made from the incident outlives it in a real Alertmanager;
// the resolved root says it is still in force and until when, and its
// "Expire silence" button expires it there.
func TestSilenceKeptAfterResolve(t *testing.T) {
	e := newEnv(t, `{alertname: "FileSystemSpaceFillingUp"}`, "  silences: {keep_after_resolve: true}")
	gcURL, amURL := e.gcURL, e.amURL
	gc := startGroundcrew(t, e.gcBin, e.dir, gcURL, "/as carol")
	amOut := startAlertmanager(t, e.amBin, e.dir, e.amPort, gcURL, e.token, "  group_by: [alertname]\n  group_wait: 1s\n  group_interval: 2s\n  repeat_interval: 1h")
	dump := func() string {
		return "--- groundcrew stdout\n" + gc.out.String() + "\n--- groundcrew stderr\n" + gc.err.String() + "\n--- alertmanager\n" + amOut.String()
	}

	start := time.Now().UTC()
	disk := func(ends time.Time) []alert {
		return []alert{{Labels: map[string]string{"alertname": "FileSystemSpaceFillingUp", "instance": "caascad-ci-workers-infra-infra-prd-0:9100", "mountpoint": "/opt/concourse/worker"},
			Annotations: map[string]string{"summary": "Filesystem has 8% space left"}, StartsAt: start, EndsAt: ends}}
	}
	postAlerts(t, amURL, disk(start.Add(time.Hour)))
	waitFor(t, "the incident's Silence button", 30*time.Second, dump, func() bool { return strings.Contains(gc.out.String(), "[🔕 Silence 1 h]") })
	gc.say(t, "/press 1 incident_silence")
	waitFor(t, "the silence", 20*time.Second, dump, func() bool { return strings.Contains(gc.out.String(), "🔕 @carol silenced these alerts for 1 h") })
	silenceID := regexp.MustCompile("@carol silenced these alerts for 1 h[^`]*`([^`]+)`").FindStringSubmatch(gc.out.String())[1]

	// The alert ends; Alertmanager sends nothing for it (it is muted), and
	// groundcrew finds it gone through the API.
	postAlerts(t, amURL, disk(time.Now().UTC().Add(-time.Second)))
	waitFor(t, "the incident to resolve", 60*time.Second, dump, func() bool { return strings.Contains(gc.out.String(), "✅ Resolved after") })
	waitFor(t, "the resolved root to say the silence is kept", 20*time.Second, dump, func() bool {
		return strings.Contains(gc.out.String(), "🔕 Its silence `"+silenceID+"` (by @carol) is still in force until")
	})
	assert.NotContains(t, gc.out.String(), "expired with the incident")
	assert.Equal(t, "active", getSilence(t, amURL, silenceID).Status.State, "kept after the resolution")
	waitFor(t, "the resolved root's Expire silence button", 20*time.Second, dump, func() bool {
		_, after, _ := strings.Cut(gc.out.String(), "Status: resolved at")
		return strings.Contains(after, "[🔔 Expire silence]")
	})

	// Its button still expires it, in Alertmanager.
	gc.say(t, "/as bob", "/press 1 incident_unsilence")
	waitFor(t, "the silence to expire", 20*time.Second, dump, func() bool {
		return strings.Contains(gc.out.String(), "🔔 @bob expired the silence `"+silenceID+"`")
	})
	assert.Equal(t, "expired", getSilence(t, amURL, silenceID).Status.State)
	assert.Equal(t, 0, activeSilences(t, amURL))
}
