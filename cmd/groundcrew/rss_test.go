package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeChild is serve in a child process for the memory test (it does
// nothing unless GROUNDCREW_TEST_SERVE names a config).
func TestServeChild(t *testing.T) {
	cfg := os.Getenv("GROUNDCREW_TEST_SERVE")
	if cfg == "" {
		t.Skip("the child of TestServe_RunsListAllKeepsServeMemoryFlat")
	}
	root := newRoot()
	root.SetArgs([]string{"serve", "--config", cfg})
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// procKiB reads a figure of /proc/<pid>/status in KiB (VmRSS, VmHWM).
func procKiB(t *testing.T, pid int, field string) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// TestServe_RunsListAllKeepsServeMemoryFlat runs serve in a child process
// on a store of GROUNDCREW_RSS_RUNS runs (default 5,000; the README figure
// is for 100,000), lists them all through its admin socket (and exports
// the audit log) and checks that
// serve's peak RSS stays under 100 MiB (serve streams the listing a page at
// a time; it used to hold all of it, 2.5 GB at 100,000 runs).
func TestServe_RunsListAllKeepsServeMemoryFlat(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc")
	}
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("GROUNDCREW_RSS_RUNS")); err == nil && v > 0 {
		n = v
	}
	if raceBuild {
		n = min(n, 1000)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "gc.db")
	start := time.Now()
	fillRuns(t, path, n)
	t.Logf("%d runs written in %s", n, time.Since(start).Round(time.Millisecond))
	cfg := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("store: gc.db\nchat: {platform: console}\nserver: {listen: \"127.0.0.1:0\"}\ntargets:\n  infra-prd:\n    simulator: {}\n"), 0o600))

	child := exec.Command(os.Args[0], "-test.run=^TestServeChild$", "-test.count=1")
	child.Env = append(os.Environ(), "GROUNDCREW_TEST_SERVE="+cfg)
	stdin, err := child.StdinPipe()
	require.NoError(t, err)
	child.Stdout, child.Stderr = io.Discard, io.Discard
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = stdin.Close(); _ = child.Process.Kill(); _, _ = child.Process.Wait() })
	require.Eventually(t, func() bool { return socketAnswers(path + ".sock") }, 30*time.Second, 20*time.Millisecond)
	pid := child.Process.Pid
	before := procKiB(t, pid, "VmRSS")

	start = time.Now()
	got, err := run(t, "", "runs", "list", "--all", "--format", "json", "--store", path)
	require.NoError(t, err)
	took := time.Since(start)
	assert.Equal(t, n, strings.Count(got, "\n"), "every run, one line each")
	peak, after := procKiB(t, pid, "VmHWM"), procKiB(t, pid, "VmRSS")
	t.Logf("runs list --all of %d runs through serve: %s, %.1f MB of JSON lines; serve RSS %.1f MiB before, peak %.1f MiB, %.1f MiB after (anon %.1f MiB, file %.1f MiB)",
		n, took.Round(time.Millisecond), float64(len(got))/1e6, float64(before)/1024, float64(peak)/1024, float64(after)/1024,
		float64(procKiB(t, pid, "RssAnon"))/1024, float64(procKiB(t, pid, "RssFile"))/1024)
	// The audit log is streamed the same way, in order.
	got, err = run(t, "", "audit", "export", "--store", path)
	require.NoError(t, err)
	assert.Equal(t, n, strings.Count(got, "\n"), "every audit entry, one line each")
	assert.True(t, strings.HasPrefix(got, `{"seq":1,`), got[:min(len(got), 80)])
	peak = procKiB(t, pid, "VmHWM")
	t.Logf("then audit export of %d entries: serve peak RSS %.1f MiB", n, float64(peak)/1024)
	if raceBuild {
		t.Log("race build: RSS not checked")
		return
	}
	assert.Less(t, peak, 100*1024, "serve's peak RSS stays under 100 MiB")
}
