package browser

import (
	"bytes"
	"context"
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

	"github.com/chromedp/chromedp"
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

// runbook is a short runbook with each kind of thing a page shows: a
// query with a table, a manual step, a destructive step behind a gate.
const runbook = `
name: web-check
title: Web page check
description: A query, a manual step and a gated prune, for the browser test.
steps:
  - id: workers
    kind: query
    title: Workers
    op: concourse.workers
  - id: look
    kind: manual
    title: Look at the stalled worker
    text: |
      Run ` + "`sudo systemctl status concourse-worker`" + ` on the worker.
      ✅ when you looked.
  - id: prune
    kind: action
    title: Prune every stalled worker
    op: concourse.prune_worker
    args: {all_stalled: true}
`

// TestRunPageInABrowser runs a runbook through the console of a real
// `groundcrew serve` and reads its page in headless Chromium, then opens
// an incident from an Alertmanager webhook and follows its page.
func TestRunPageInABrowser(t *testing.T) {
	chromium := os.Getenv("GROUNDCREW_E2E_CHROMIUM")
	if chromium == "" {
		t.Skip("GROUNDCREW_E2E_CHROMIUM is not set: run e2e/browser/run.sh")
	}
	dir := t.TempDir()
	gcBin := filepath.Join(dir, "groundcrew")
	build := exec.Command("go", "build", "-o", gcBin, "./cmd/groundcrew")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))

	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "runbooks"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runbooks", "web-check.yaml"), []byte(runbook), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "link-key"), []byte("e2e-link-key-0123456789abcdef\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "groundcrew.yaml"), []byte(fmt.Sprintf(`
store: %[1]s/gc.db
server: {listen: "127.0.0.1:%[2]d"}
chat:
  platform: console
  console: {users: [alice, bob, carol], groups: {ci-oncall: [alice, bob, carol]}}
targets:
  infra-prd: {simulator: {}}
approvals:
  default: {approvers: [group:ci-oncall], required: 1, expires: 30m}
runbooks: [%[1]s/runbooks]
alerts:
  alertmanager: {token: e2e-alert-token}
  routes:
    - name: disk-full
      match: {alertname: FileSystemSpaceFillingUp}
      target: infra-prd
      channel: "#ci-ops"
      runbook: worker-disk-full
      params: {worker: "0"}
web:
  url: %[3]s
  link_key_file: %[1]s/link-key
`, dir, port, base)), 0o600))

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
	type_ := func(lines ...string) {
		_, err := io.WriteString(stdin, strings.Join(lines, "\n")+"\n")
		require.NoError(t, err)
	}
	waitFor(t, "groundcrew /healthz", 30*time.Second, dump, func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	})

	// alice starts the run; the thread root links to its page.
	type_("/as alice", "/runbook run web-check target=infra-prd")
	link := regexp.MustCompile(`🔗 Run page: (` + regexp.QuoteMeta(base) + `/runs/(r-[0-9a-z]+)\?t=[0-9a-z-]+)`)
	waitFor(t, "the run's root message with its link", 30*time.Second, dump, func() bool { return link.MatchString(gcOut.String()) })
	m := link.FindStringSubmatch(gcOut.String())
	runURL, runID := m[1], m[2]
	waitFor(t, "the manual step", 30*time.Second, dump, func() bool { return strings.Contains(gcOut.String(), "Look at the stalled worker") })

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(filepath.Join(dir, "chromium-profile")),
		chromedp.WindowSize(1280, 1600))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	var logs output
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithErrorf(func(f string, a ...any) { fmt.Fprintf(&logs, f+"\n", a...) }))
	defer cancel()

	// The page while the run waits for bob: live, the manual step waiting.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(runURL), chromedp.WaitVisible(`#step-look`)), dump())
	text, err := chromedp.Run(ctx, chromedp.Text(`#step-look`))
	require.NoError(t, err)
	assert.Contains(t, text, "waiting for a person")
	assert.Contains(t, text, "sudo systemctl status concourse-worker")
	waitText(t, ctx, `#live-status`, "live", dump)

	// bob answers in chat: the open page shows the step done without a reload.
	type_("/as bob", "/react manual ✅")
	waitText(t, ctx, `#step-look`, "succeeded", dump)
	waitText(t, ctx, `#gates`, "waiting for approval", dump)
	version, err := chromedp.Run(ctx, chromedp.AttributeValue(`#live`, "data-version"))
	require.NoError(t, err)
	assert.NotEmpty(t, version.Value, "the update came by the live stream, not a reload")

	// alice may not approve her own run; carol approves; the prune runs.
	type_("/as alice", "/react gate ✅", "/as carol", "/react gate ✅")
	waitText(t, ctx, `#step-prune`, "succeeded", dump)
	waitText(t, ctx, `#live-status`, "the run has ended", dump)

	steps, err := chromedp.Run(ctx, chromedp.Text(`#steps`))
	require.NoError(t, err)
	gates, err := chromedp.Run(ctx, chromedp.Text(`#gates`))
	require.NoError(t, err)
	changes, err := chromedp.Run(ctx, chromedp.Text(`#changes`))
	require.NoError(t, err)
	audit, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#audit').textContent`))
	require.NoError(t, err)
	for _, want := range []string{"1. Workers", "2. Look at the stalled worker", "done by @bob", "3. Prune every stalled worker"} {
		assert.Contains(t, steps, want)
	}
	for _, want := range []string{"Prune every stalled worker", "@alice not counted", "@carol approved", "by reaction", "approved"} {
		assert.Contains(t, gates, want)
	}
	assert.Regexp(t, `prune`, changes)
	assert.NotContains(t, changes, "None")
	assert.Contains(t, audit, "groundcrew audit verify --expect")
	assert.Contains(t, audit, "approve")

	// Screenshots, desktop and phone width, next to the test's files.
	shots := filepath.Join(dir, "screenshots")
	require.NoError(t, os.MkdirAll(shots, 0o755))
	desktop, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Reload(), chromedp.WaitVisible(`#steps`)))
	phone, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	width, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	require.NoError(t, err)
	assert.LessOrEqual(t, width, 400, "the phone page does not scroll sideways")
	require.NoError(t, os.WriteFile(filepath.Join(shots, "run-desktop.png"), desktop, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(shots, "run-phone.png"), phone, 0o644))
	if keep := os.Getenv("GROUNDCREW_E2E_SCREENSHOTS"); keep != "" {
		_ = os.MkdirAll(keep, 0o755)
		_ = os.WriteFile(filepath.Join(keep, "run-desktop.png"), desktop, 0o644)
		_ = os.WriteFile(filepath.Join(keep, "run-phone.png"), phone, 0o644)
	}
	t.Logf("screenshots in %s", shots)

	// The Markdown of the page is the post-mortem of `runs show`.
	resp, err := http.Get(strings.Replace(runURL, runID+"?", runID+".md?", 1))
	require.NoError(t, err)
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(md), "# web-check on infra-prd — run "+runID)

	// A tampered link is refused.
	resp, err = http.Get(runURL[:len(runURL)-1] + "x")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	// An incident's page follows the incident: an alert opens it, and the
	// open page shows bob's acknowledgement, then the resolve, without a
	// reload.
	alert(t, base, "firing", dump)
	incLink := regexp.MustCompile(`🔗 Incident page: (` + regexp.QuoteMeta(base) + `/incidents/(i-[0-9a-z]+)\?t=[0-9a-z-]+)`)
	waitFor(t, "the incident's root message with its link", 30*time.Second, dump, func() bool { return incLink.MatchString(gcOut.String()) })
	m = incLink.FindStringSubmatch(gcOut.String())
	incURL, incID := m[1], m[2]
	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1600), chromedp.Navigate(incURL), chromedp.WaitVisible(`#timeline`)), dump())
	waitText(t, ctx, `#live-status`, "live", dump)
	head, err := chromedp.Run(ctx, chromedp.Text(`.head`))
	require.NoError(t, err)
	assert.Contains(t, head, "FileSystemSpaceFillingUp")
	assert.Contains(t, head, "not yet")
	type_("/as bob", "/runbook incidents ack "+incID)
	waitText(t, ctx, `.head`, "@bob at", dump)
	waitText(t, ctx, `#timeline`, "acknowledged", dump)
	version, err = chromedp.Run(ctx, chromedp.AttributeValue(`#live`, "data-version"))
	require.NoError(t, err)
	assert.NotEmpty(t, version.Value, "the acknowledgement came by the live stream, not a reload")
	alert(t, base, "resolved", dump)
	waitText(t, ctx, `.head`, "resolved", dump)
	incShot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(shots, "incident-desktop.png"), incShot, 0o644))
	if keep := os.Getenv("GROUNDCREW_E2E_SCREENSHOTS"); keep != "" {
		_ = os.WriteFile(filepath.Join(keep, "incident-desktop.png"), incShot, 0o644)
	}
	assert.Empty(t, strings.TrimSpace(logs.String()), "no browser-side errors")
}

// alert sends Alertmanager's webhook (version 4) for one disk alert.
func alert(t *testing.T, base, status string, dump func() string) {
	t.Helper()
	ends := "0001-01-01T00:00:00Z"
	if status == "resolved" {
		ends = time.Now().UTC().Format(time.RFC3339)
	}
	body := fmt.Sprintf(`{"version":"4","status":%[1]q,"receiver":"groundcrew","groupKey":"{}:{alertname=\"FileSystemSpaceFillingUp\"}",
"groupLabels":{"alertname":"FileSystemSpaceFillingUp"},"commonLabels":{"alertname":"FileSystemSpaceFillingUp","instance":"worker-0:9100"},
"externalURL":"http://alertmanager:9093","alerts":[{"status":%[1]q,"labels":{"alertname":"FileSystemSpaceFillingUp","instance":"worker-0:9100"},
"annotations":{"summary":"Filesystem /opt/concourse/worker has 6%% space left"},"startsAt":%[2]q,"endsAt":%[3]q,"fingerprint":"3d5e1f2a9b8c7d6e"}]}`,
		status, time.Now().Add(-3*time.Minute).UTC().Format(time.RFC3339), ends)
	req, err := http.NewRequest(http.MethodPost, base+"/alertmanager", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer e2e-alert-token")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s\n%s", b, dump())
}

// waitText waits until the element's text contains want.
func waitText(t *testing.T, ctx context.Context, sel, want string, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		g, err := chromedp.Run(tctx, chromedp.Text(sel))
		cancel()
		if got = g; err == nil && strings.Contains(got, want) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s never showed %q; it shows:\n%s\n%s", sel, want, got, dump())
}
