package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mattermost/mattermost/server/public/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Alertmanager the tests build and run (as e2e/alertmanager does).
const alertmanagerVersion = "0.31.1"

// EnvAlertmanager points at a prebuilt alertmanager binary (skips the build).
const EnvAlertmanager = "GROUNDCREW_E2E_ALERTMANAGER_BINARY"

// alertmanagerBinary returns $GROUNDCREW_E2E_ALERTMANAGER_BINARY or the
// cached build of e2e/alertmanager, building it (from that module's
// server/ directory) when missing.
func alertmanagerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(EnvAlertmanager); p != "" {
		return p
	}
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	bin := filepath.Join(cache, "groundcrew", "alertmanager-"+alertmanagerVersion, "alertmanager")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	t.Logf("building Alertmanager %s into %s (about a minute the first time)…", alertmanagerVersion, bin)
	require.NoError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	wd, err := os.Getwd()
	require.NoError(t, err)
	cmd := exec.Command("go", "build", "-o", bin+".tmp", "github.com/prometheus/alertmanager/cmd/alertmanager")
	cmd.Dir = filepath.Join(wd, "..", "alertmanager", "server")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "building alertmanager: %s", tail(string(out), 30))
	require.NoError(t, os.Rename(bin+".tmp", bin))
	return bin
}

// amProcess is a running Alertmanager.
type amProcess struct {
	url string
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if os.Getenv("GROUNDCREW_E2E_VERBOSE") != "" {
		os.Stderr.Write(p)
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startAlertmanager runs Alertmanager with a webhook receiver pointing at
// groundcrew: groups by alertname and instance, group_wait 1s,
// group_interval 5s (the webhook's timeout: Alertmanager gives up on a
// receiver that does not answer within it), repeat_interval 1h.
func startAlertmanager(t *testing.T, dir, gcURL, tokenFile string) *amProcess {
	t.Helper()
	port := freePort(t)
	am := &amProcess{url: fmt.Sprintf("http://127.0.0.1:%d", port), out: &syncBuffer{}}
	cfg := fmt.Sprintf(`
route:
  receiver: groundcrew
  group_by: [alertname, instance]
  group_wait: 1s
  group_interval: 5s
  repeat_interval: 1h
receivers:
  - name: groundcrew
    webhook_configs:
      - url: "%s/alertmanager"
        send_resolved: true
        http_config:
          authorization: {type: Bearer, credentials_file: "%s"}
`, gcURL, tokenFile)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alertmanager.yml"), []byte(cfg), 0o600))
	am.cmd = exec.Command(alertmanagerBinary(t), "--config.file="+filepath.Join(dir, "alertmanager.yml"),
		"--storage.path="+filepath.Join(dir, "am-data"), fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--cluster.listen-address=", "--log.level=debug")
	am.cmd.Stdout, am.cmd.Stderr = am.out, am.out
	require.NoError(t, am.cmd.Start())
	t.Cleanup(func() { _ = am.cmd.Process.Kill(); _ = am.cmd.Wait() })
	eventually(t, 30*time.Second, "Alertmanager /-/ready", func() bool {
		resp, err := http.Get(am.url + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, am.out.String)
	return am
}

type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt,omitzero"`
}

func (am *amProcess) post(t *testing.T, alerts ...amAlert) {
	t.Helper()
	body, err := json.Marshal(alerts)
	require.NoError(t, err)
	resp, err := http.Post(am.url+"/api/v2/alerts", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
}

// silence is a silence as Alertmanager's v2 API shows it.
type silence struct {
	ID        string `json:"id"`
	CreatedBy string `json:"createdBy"`
	Comment   string `json:"comment"`
	Status    struct {
		State string `json:"state"`
	} `json:"status"`
}

func (am *amProcess) silences(t *testing.T) []silence {
	t.Helper()
	resp, err := http.Get(am.url + "/api/v2/silences")
	require.NoError(t, err)
	defer resp.Body.Close()
	var out []silence
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

func (am *amProcess) silence(t *testing.T, id string) silence {
	t.Helper()
	for _, s := range am.silences(t) {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("Alertmanager has no silence %s", id)
	return silence{}
}

// metric sums the samples of a Prometheus text exposition of the metric
// name whose labels include each of labels (`integration="webhook"`).
func metric(t *testing.T, url, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if match {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			require.NoError(t, err, line)
			sum += v
		}
	}
	return sum
}

// writeAlertsConfig writes a groundcrew config: Mattermost (channels by
// name: "#ci-ops" is resolved through the team), the simulated target,
// Alertmanager's webhook and silences (keep: keep_after_resolve).
func writeAlertsConfig(t *testing.T, w *world, simURL, simTSA, amURL, tokenFile string, keep bool) (cfgPath, listen string) {
	t.Helper()
	dir := t.TempDir()
	listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := mattermostConfig(w, dir, listen, simURL, simTSA) + fmt.Sprintf(`alerts:
  alertmanager: {token_file: %s, url: "%s"}
  silences: {keep_after_resolve: %t}
  routes:
    - name: disk
      match: {alertname: "DiskFull"}
      target: %s
      channel: "#ci-ops"
`, tokenFile, amURL, keep, targetName)
	cfgPath = filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))
	return cfgPath, listen
}

var incidentID = regexp.MustCompile("incident `(i-[0-9a-f]+)`")

// incidentRoots lists the bot's incident roots in the channel (edit
// history versions excluded), by incident id, with how many posts each id
// has (a duplicate would be two).
func incidentRoots(ctx context.Context, t *testing.T, w *world, u *mmUser) (map[string]*model.Post, map[string]int) {
	t.Helper()
	list, _, err := u.GetPostsForChannel(ctx, w.Channel.Id, 0, 100, "", false, false)
	require.NoError(t, err)
	roots, counts := map[string]*model.Post{}, map[string]int{}
	for _, id := range list.Order {
		p := list.Posts[id]
		if p.UserId != w.BotUser.Id || p.RootId != "" || p.OriginalId != "" {
			continue
		}
		if m := incidentID.FindStringSubmatch(p.Message); m != nil && strings.Contains(p.Message, "DiskFull") {
			roots[m[1]] = p
			counts[m[1]]++
		}
	}
	return roots, counts
}

func actionNames(p *model.Post) []string {
	var out []string
	for _, a := range p.Attachments() {
		for _, act := range a.Actions {
			out = append(out, act.Name)
		}
	}
	return out
}

// TestHungMattermostAlertsStillAnswered is issue 38 against real servers:
// Mattermost is frozen with SIGSTOP (it takes connections and never
// answers) for longer than Alertmanager's group_interval while alerts
// fire, change and repeat. Alertmanager's webhook is answered every time,
// in well under a second (Alertmanager logs no failed notification), and
// /readyz says chat is not answering while the bot stays ready. After
// SIGCONT each incident's root appears exactly once within 30 s, with its
// buttons in its first version. Then a silence made from an incident is
// expired when the incident resolves (Alertmanager's API says expired),
// and kept with alerts.silences.keep_after_resolve, the resolved root
// saying so.
func TestHungMattermostAlertsStillAnswered(t *testing.T) {
	groundcrewBinary(t)
	srv := startServer(t)
	w := bootstrap(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	sim := e2eSim(t)
	carol, dave := w.Users["carol"], w.Users["dave"]
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "am-token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("e2e-am-token\n"), 0o600))

	cfgPath, listen := writeAlertsConfig(t, w, sim.URL(), sim.TSAAddr(), "http://placeholder", tokenFile, false)
	am := startAlertmanager(t, dir, "http://"+listen, tokenFile)
	rewriteAMURL(t, cfgPath, am.url)
	gc := startGroundcrewWith(t, cfgPath, listen)
	eventually(t, 60*time.Second, "groundcrew connected to mattermost", func() bool {
		b, _ := os.ReadFile(gc.logPath)
		return strings.Contains(string(b), "mattermost websocket connected")
	}, gc.logTail)

	now := time.Now().UTC()
	disk := func(instance, mount string, ends time.Time) amAlert {
		return amAlert{Labels: map[string]string{"alertname": "DiskFull", "instance": instance, "mountpoint": mount},
			Annotations: map[string]string{"summary": mount + " on " + instance + " is almost full"}, StartsAt: now, EndsAt: ends}
	}

	t.Run("frozen mattermost", func(t *testing.T) {
		freeze := time.Now()
		require.NoError(t, syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGSTOP))
		thawed := false
		thaw := func() {
			if !thawed {
				thawed = true
				require.NoError(t, syscall.Kill(-srv.cmd.Process.Pid, syscall.SIGCONT))
			}
		}
		defer thaw()

		am.post(t, disk("worker-0:9100", "/opt/concourse/worker", time.Time{}), disk("worker-1:9100", "/opt/concourse/worker", time.Time{}))
		eventually(t, 30*time.Second, "both notifications answered", func() bool {
			return metric(t, gc.url, "groundcrew_alertmanager_notifications_total", `outcome="ok"`) >= 2
		}, gc.logTail, am.out.String)
		// A change of one group while chat is still frozen: another notification.
		time.Sleep(3 * time.Second)
		am.post(t, disk("worker-0:9100", "/opt/concourse/worker", time.Time{}), disk("worker-0:9100", "/opt/concourse/worker/volumes", time.Time{}))
		eventually(t, 30*time.Second, "the change answered", func() bool {
			return metric(t, gc.url, "groundcrew_alertmanager_notifications_total", `outcome="ok"`) >= 3
		}, gc.logTail, am.out.String)
		// Frozen longer than group_interval (5 s) twice over, and until a
		// post timed out: /readyz says why, and stays 200.
		var ready map[string]any
		eventually(t, 60*time.Second, "/readyz to say chat does not answer", func() bool {
			resp, err := http.Get(gc.url + "/readyz")
			require.NoError(t, err)
			defer resp.Body.Close()
			ready = map[string]any{}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&ready))
			require.Equal(t, http.StatusOK, resp.StatusCode, "chat frozen does not make the bot unready: %v", ready)
			chat, _ := ready["checks"].(map[string]any)["chat"].(string)
			return strings.HasPrefix(chat, "not answering since") || chat == "not connected"
		}, gc.logTail)
		t.Logf("/readyz while mattermost is frozen: %v", ready["checks"])
		t.Logf("groundcrew_chat_connected: %v, groundcrew_outbox_items: %v", metric(t, gc.url, "groundcrew_chat_connected"), metric(t, gc.url, "groundcrew_outbox_items"))
		for time.Since(freeze) < 20*time.Second {
			time.Sleep(500 * time.Millisecond)
		}

		// Alertmanager: every notification answered, none failed, all fast.
		sent := metric(t, am.url, "alertmanager_notifications_total", `integration="webhook"`)
		failed := metric(t, am.url, "alertmanager_notifications_failed_total", `integration="webhook"`)
		fast := metric(t, am.url, "alertmanager_notification_latency_seconds_bucket", `integration="webhook"`, `le="1"`)
		total := metric(t, am.url, "alertmanager_notification_latency_seconds_count", `integration="webhook"`)
		t.Logf("alertmanager: %v webhook notifications, %v failed, %v of %v answered within 1 s (frozen %s)", sent, failed, fast, total, time.Since(freeze).Round(time.Second))
		assert.GreaterOrEqual(t, sent, 3.0)
		assert.Zero(t, failed, "Alertmanager logs no failed notification:\n%s", am.out.String())
		assert.Equal(t, total, fast, "every webhook answered within 1 s")
		assert.NotContains(t, am.out.String(), "Notify for alerts failed")

		thaw()
		thawedAt := time.Now()
		var roots map[string]*model.Post
		var counts map[string]int
		eventually(t, 30*time.Second, "both incidents' roots in the channel", func() bool {
			roots, counts = incidentRoots(ctx, t, w, carol)
			return len(roots) == 2
		}, gc.logTail)
		t.Logf("both roots in the channel %s after SIGCONT", time.Since(thawedAt).Round(100*time.Millisecond))
		time.Sleep(8 * time.Second) // anything posted twice would be there by now
		roots, counts = incidentRoots(ctx, t, w, carol)
		assert.Len(t, roots, 2)
		for id, n := range counts {
			assert.Equal(t, 1, n, "incident %s has %d roots", id, n)
		}
		// One write: no version of a root lacks its buttons (Mattermost
		// keeps each earlier version as an edit-history post).
		since, _, err := carol.GetPostsSince(ctx, w.Channel.Id, freeze.Add(-time.Minute).UnixMilli(), false)
		require.NoError(t, err)
		for _, p := range since.Posts {
			if p.UserId == w.BotUser.Id && p.RootId == "" && incidentID.MatchString(p.Message) {
				assert.Contains(t, actionNames(p), "👀 Acknowledge", "every version of a root has its buttons (post %s, original %q): %s", p.Id, p.OriginalId, p.Message)
			}
		}
		for _, p := range roots {
			assert.Regexp(t, `Status: open since \d\d:\d\d UTC`, p.Message)
			assert.Contains(t, actionNames(p), "🔕 Silence 1 h")
		}
	})

	t.Run("a silence ends with its incident", func(t *testing.T) {
		roots, _ := incidentRoots(ctx, t, w, carol)
		var root *model.Post
		var id string
		for i, p := range roots {
			if strings.Contains(p.Message, "worker-1") {
				root, id = p, i
			}
		}
		require.NotNil(t, root, "the worker-1 incident")
		// carol and dave press "Silence 1 h" at the same moment: one
		// silence; the one who lost is told privately who silenced it.
		eph := map[string]*ephemeralListener{"carol": listenEphemeral(t, srv.URL, carol), "dave": listenEphemeral(t, srv.URL, dave)}
		var wg sync.WaitGroup
		for _, u := range []*mmUser{carol, dave} {
			wg.Add(1)
			go func() { defer wg.Done(); clickAs(ctx, t, u, root.Id, "🔕 Silence 1 h") }()
		}
		wg.Wait()
		var sil silence
		eventually(t, 20*time.Second, "one silence in Alertmanager", func() bool {
			n := 0
			for _, s := range am.silences(t) {
				if strings.Contains(s.Comment, id) && s.Status.State == "active" {
					sil = s
					n++
				}
			}
			require.LessOrEqual(t, n, 1, "one silence however many presses")
			return n == 1
		})
		loser := "dave"
		if sil.CreatedBy == "@dave" {
			loser = "carol"
		}
		got := eph[loser].waitFor(t, "is already silenced until", 20*time.Second)
		t.Logf("%s was told: %s", loser, got.Message)
		assert.Contains(t, got.Message, "by "+sil.CreatedBy)

		// The alert resolves: Alertmanager sends nothing for a silenced
		// alert; groundcrew asks it (every 15 s), resolves the incident and
		// expires the silence.
		am.post(t, disk("worker-1:9100", "/opt/concourse/worker", time.Now().UTC().Add(-time.Second)))
		eventually(t, 60*time.Second, "the silence expired with the incident", func() bool {
			return am.silence(t, sil.ID).Status.State == "expired"
		}, gc.logTail)
		eventually(t, 20*time.Second, "the thread to say so", func() bool {
			return strings.Contains(threadText(ctx, t, carol, root.Id), "expired with the incident")
		}, func() string { return threadText(ctx, t, carol, root.Id) })
		var p *model.Post
		eventually(t, 20*time.Second, "the root to say how the resolution was found", func() bool {
			var err error
			p, _, err = carol.GetPost(ctx, root.Id, "")
			require.NoError(t, err)
			return strings.Contains(p.Message, "found by asking Alertmanager") && len(actionNames(p)) == 0
		}, func() string { return p.Message + fmt.Sprint(actionNames(p)) })
		assert.Contains(t, p.Message, "· 1 notification", "the poll is not a notification")
		assert.NotContains(t, p.Message, "Its silence", "no silence left behind")
	})

	t.Run("kept with keep_after_resolve", func(t *testing.T) {
		// A second groundcrew (a new store) with the option, and an
		// Alertmanager of its own.
		_ = syscall.Kill(-gc.cmd.Process.Pid, syscall.SIGTERM)
		<-gc.exited
		gc.exited <- nil
		_ = am.cmd.Process.Kill()
		cfgPath, listen := writeAlertsConfig(t, w, sim.URL(), sim.TSAAddr(), am.url, tokenFile, true)
		// Alertmanager's webhook goes to the new address.
		am2 := startAlertmanager(t, t.TempDir(), "http://"+listen, tokenFile)
		rewriteAMURL(t, cfgPath, am2.url)
		gc2 := startGroundcrewWith(t, cfgPath, listen)
		eventually(t, 60*time.Second, "groundcrew connected to mattermost", func() bool {
			b, _ := os.ReadFile(gc2.logPath)
			return strings.Contains(string(b), "mattermost websocket connected")
		}, gc2.logTail)
		am2.post(t, disk("worker-3:9100", "/opt/concourse/worker", time.Time{}))
		var root *model.Post
		eventually(t, 30*time.Second, "the worker-3 incident", func() bool {
			roots, _ := incidentRoots(ctx, t, w, carol)
			for _, p := range roots {
				if strings.Contains(p.Message, "worker-3") {
					root = p
				}
			}
			return root != nil
		}, gc2.logTail)
		clickAs(ctx, t, carol, root.Id, "🔕 Silence 1 h")
		var sil silence
		eventually(t, 20*time.Second, "the silence", func() bool {
			for _, s := range am2.silences(t) {
				if s.Status.State == "active" {
					sil = s
					return true
				}
			}
			return false
		})
		am2.post(t, disk("worker-3:9100", "/opt/concourse/worker", time.Now().UTC().Add(-time.Second)))
		eventually(t, 60*time.Second, "the incident resolved, its root saying the silence is kept", func() bool {
			p, _, err := carol.GetPost(ctx, root.Id, "")
			require.NoError(t, err)
			root = p
			return strings.Contains(p.Message, "is still in force until")
		}, gc2.logTail)
		assert.Contains(t, root.Message, "kept after the resolution")
		assert.Equal(t, "active", am2.silence(t, sil.ID).Status.State, "kept")
		assert.Equal(t, []string{"🔔 Expire silence"}, actionNames(root))
		clickAs(ctx, t, carol, root.Id, "🔔 Expire silence")
		eventually(t, 20*time.Second, "the silence expired from the resolved root", func() bool {
			return am2.silence(t, sil.ID).Status.State == "expired"
		}, gc2.logTail)
	})
}

// rewriteAMURL puts Alertmanager's URL (known once it runs) in the config.
func rewriteAMURL(t *testing.T, cfgPath, url string) {
	t.Helper()
	b, err := os.ReadFile(cfgPath)
	require.NoError(t, err)
	b = regexp.MustCompile(`url: "http://[^"]*"}`).ReplaceAll(b, []byte(`url: "`+url+`"}`))
	require.NoError(t, os.WriteFile(cfgPath, b, 0o600))
}
