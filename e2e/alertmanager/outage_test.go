package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gcProcess is one `groundcrew serve` (console chat) of a test.
type gcProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *output
	err   *output
}

func (p *gcProcess) say(t *testing.T, lines ...string) {
	t.Helper()
	for _, l := range lines {
		_, err := io.WriteString(p.stdin, l+"\n")
		require.NoError(t, err)
	}
}

// kill is a kill -9: nothing is drained.
func (p *gcProcess) kill() { _ = p.cmd.Process.Kill(); _ = p.cmd.Wait() }

func startGroundcrew(t *testing.T, bin, dir, url string, first ...string) *gcProcess {
	t.Helper()
	p := &gcProcess{out: &output{}, err: &output{}}
	p.cmd = exec.Command(bin, "serve", "--config", filepath.Join(dir, "groundcrew.yaml"))
	p.cmd.Dir = dir
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.err
	require.NoError(t, p.cmd.Start())
	t.Cleanup(p.kill)
	// The first console lines are read before the engine's first tick
	// flushes the outbox.
	p.say(t, first...)
	waitFor(t, "groundcrew /healthz", 30*time.Second, func() string { return p.out.String() + p.err.String() }, func() bool { return httpOK(url + "/healthz") })
	return p
}

// TestChatOutageStormAndRestarts: with a real Alertmanager (group_by
// [alertname, instance], group_wait 1s, group_interval 5s, repeat_interval
// 1m), chat fails for 2 minutes while an alert fires and changes, and
// groundcrew is killed (-9) and restarted during the outage. Within
// seconds of chat coming back the incident thread is there, once, complete
// and in order. Then a storm of 100 groups × 10 alerts opens 100
// incidents, each titled with its instance.
func TestChatOutageStormAndRestarts(t *testing.T) {
	e := newEnv(t, `{alertname: "FileSystemSpace(FillingUp|AlmostOutOfSpace)"}`, "")
	amBin, dir, gcBin, amPort, token := e.amBin, e.dir, e.gcBin, e.amPort, e.token
	gcURL, amURL := e.gcURL, e.amURL

	gc := startGroundcrew(t, gcBin, dir, gcURL, "/chat down")
	amOut := startAlertmanager(t, amBin, dir, amPort, gcURL, token, "  group_by: [alertname, instance]\n  group_wait: 1s\n  group_interval: 5s\n  repeat_interval: 1m")
	dump := func() string {
		return "--- groundcrew stdout\n" + gc.out.String() + "\n--- groundcrew stderr\n" + gc.err.String() + "\n--- alertmanager\n" + amOut.String()
	}

	outageStart := time.Now()
	host := "caascad-ci-workers-infra-infra-prd-0:9100"
	disk := func(mounts ...string) []alert {
		var as []alert
		for i, m := range mounts {
			as = append(as, alert{Labels: map[string]string{"alertname": "FileSystemSpaceFillingUp", "instance": host, "mountpoint": m},
				Annotations: map[string]string{"summary": fmt.Sprintf("Filesystem has %d%% space left", 8+i)},
				StartsAt:    outageStart, EndsAt: outageStart.Add(30 * time.Minute)})
		}
		return as
	}
	postAlerts(t, amURL, disk("/opt/concourse/worker", "/opt/concourse/worker/volumes"))
	waitFor(t, "the notification while chat is down", 30*time.Second, dump, func() bool {
		// the incident is opened and its root queued (the webhook never
		// waits for chat)
		return strings.Contains(gc.err.String(), `msg="incident opened"`) && strings.Contains(gc.err.String(), "key=root:i-")
	})
	// The group changes (a third file system) while chat is still down.
	postAlerts(t, amURL, disk("/opt/concourse/worker", "/opt/concourse/worker/volumes", "/var/lib/docker"))
	time.Sleep(8 * time.Second) // group_interval: Alertmanager notifies the change
	assert.NotContains(t, gc.out.String(), "incident `i-", "nothing reached chat")

	// kill -9 during the outage, and again; chat stays down.
	gc.kill()
	gc = startGroundcrew(t, gcBin, dir, gcURL, "/chat down")
	time.Sleep(20 * time.Second)
	gc.kill()
	gc = startGroundcrew(t, gcBin, dir, gcURL, "/chat down")
	if d := 2*time.Minute - time.Since(outageStart); d > 0 {
		time.Sleep(d)
	}
	assert.NotContains(t, gc.out.String(), "incident `i-", "nothing reached chat")

	gc.say(t, "/chat up")
	back := time.Now()
	title := "FileSystemSpaceFillingUp · instance=" + host
	rootRe := regexp.MustCompile(`(?m)^#(\d+) 🚨 ` + regexp.QuoteMeta(title) + " on `infra-prd` — incident `(i-[0-9a-f]+)`")
	waitFor(t, "the incident thread after chat is back", 30*time.Second, dump, func() bool {
		o := gc.out.String()
		return rootRe.MatchString(o) && strings.Contains(o, "🔁 Changed") && strings.Contains(o, "/var/lib/docker")
	})
	t.Logf("the thread was complete %s after chat came back", time.Since(back).Round(100*time.Millisecond))
	assert.Less(t, time.Since(back), 15*time.Second, "within seconds of chat coming back")
	o := gc.out.String()
	assert.Len(t, rootRe.FindAllString(o, -1), 1, "one root however many notifications and restarts")
	root := rootRe.FindStringSubmatch(o)
	iRoot, iChanged := strings.Index(o, root[0]), strings.Index(o, "↳ 🔁 Changed")
	require.Positive(t, iChanged, dump())
	assert.Less(t, iRoot, iChanged, "the root first, then what changed")
	assert.Contains(t, o[iRoot:iChanged], "• `mountpoint=/opt/concourse/worker` — Filesystem has 8% space left\n", "the root lists the alerts")
	assert.Contains(t, o[iRoot:iChanged], "• `mountpoint=/opt/concourse/worker/volumes` — Filesystem has 9% space left\n")
	assert.NotContains(t, o, "🔔 Firing", "the root shows both alerts: no reply repeats them")
	// What changed, and the two that did not counted, not listed again.
	assert.Regexp(t, "^↳ 🔁 Changed: 1 new\n +• `mountpoint=/var/lib/docker` — Filesystem has 10% space left  🆕\n"+
		" +2 others still firing — the incident message lists them all\n", o[iChanged:])

	// Storm: 100 groups × 10 alerts.
	var storm []alert
	for g := range 100 {
		for a := range 10 {
			storm = append(storm, alert{Labels: map[string]string{"alertname": "FileSystemSpaceFillingUp", "instance": fmt.Sprintf("storm-%03d:9100", g), "mountpoint": fmt.Sprintf("/data/%d", a)},
				Annotations: map[string]string{"summary": "Filesystem almost full"}, StartsAt: time.Now().UTC(), EndsAt: time.Now().UTC().Add(30 * time.Minute)})
		}
	}
	postAlerts(t, amURL, storm)
	stormRoot := regexp.MustCompile("(?m)^#\\d+ 🚨 FileSystemSpaceFillingUp · instance=storm-(\\d{3}):9100 on `infra-prd` — incident")
	waitFor(t, "100 storm incidents", 90*time.Second, dump, func() bool { return len(stormRoot.FindAllString(gc.out.String(), -1)) >= 100 })
	seen := map[string]int{}
	for _, m := range stormRoot.FindAllStringSubmatch(gc.out.String(), -1) {
		seen[m[1]]++
	}
	assert.Len(t, seen, 100, "each group its own incident, titled with its instance")
	for g, n := range seen {
		assert.Equal(t, 1, n, "storm-%s posted once", g)
	}
	// Ten alerts a group: the root shows /data/0 … /data/4 and counts the
	// others, which its 🔔 Firing reply lists (in number order), once.
	firing := regexp.MustCompile("↳ 🔔 Firing: the other 5 \\(the incident message shows the first 5\\)\n +• `mountpoint=/data/5` — Filesystem almost full\n" +
		" +• `mountpoint=/data/6` — Filesystem almost full\n +• `mountpoint=/data/7` — Filesystem almost full\n +• `mountpoint=/data/8` — Filesystem almost full\n" +
		" +• `mountpoint=/data/9` — Filesystem almost full\n")
	waitFor(t, "the storm's 🔔 Firing replies", 60*time.Second, dump, func() bool { return len(firing.FindAllString(gc.out.String(), -1)) >= 100 })
	o = gc.out.String()
	storm0 := regexp.MustCompile("(?m)^#\\d+ 🚨 FileSystemSpaceFillingUp · instance=storm-000:9100 on `infra-prd` — incident[^\n]*\n(?: +[^#\\s][^\n]*\n)*")
	r0 := storm0.FindString(o)
	require.NotEmpty(t, r0, dump())
	assert.Regexp(t, "• `mountpoint=/data/4` — Filesystem almost full\n +• … and 5 more \\(5 listed in the thread\\)\n", r0)
	assert.NotContains(t, r0, "/data/5`", "the root shows five")
	assert.Len(t, firing.FindAllString(o, -1), 100, "one 🔔 Firing reply per storm group, with the five the root does not show")
	assert.Equal(t, 100, strings.Count(o, "🔔 Firing"), "and no other")
	gc.say(t, "/runbook incidents")
	waitFor(t, "/runbook incidents", 20*time.Second, dump, func() bool {
		return strings.Contains(gc.out.String(), "Open incidents (101): 101 not acknowledged · 0 acknowledged")
	})
	resp, err := http.Get(gcURL + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), `groundcrew_incidents{state="open"} 101`)
	assert.Regexp(t, `groundcrew_alertmanager_notifications_total\{outcome="ok"\} [1-9]`, string(body))
}
