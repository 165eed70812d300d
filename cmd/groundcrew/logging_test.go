package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

func TestLog_RunLinesCarryRunbookAndTarget(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		var buf bytes.Buffer
		log := newLogger(&config.Config{Log: config.Log{Level: "debug", Format: format}}, &buf)
		theRunIndex.RunCommitted(&runmodel.Run{ID: "r-log1", Runbook: "worker-stalled", Target: "infra-prd"}, &runmodel.Batch{})
		log.Warn("chat post failed", "run", "r-log1", "attempts", 2)
		log.With("run", "r-log1").Info("with")
		log.Info("no run", "err", "x")
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		require.Len(t, lines, 3)
		if format == "json" {
			for _, l := range lines[:2] {
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &m), l)
				assert.Equal(t, "r-log1", m["run"])
				assert.Equal(t, "worker-stalled", m["runbook"])
				assert.Equal(t, "infra-prd", m["target"])
			}
		} else {
			assert.Contains(t, lines[0], "run=r-log1")
			assert.Contains(t, lines[0], "runbook=worker-stalled target=infra-prd")
		}
		assert.NotContains(t, lines[2], "runbook")
	}
}

// TestLog_NoSecretEverAppears runs serve at debug level with secrets in the
// configuration (a wrong Concourse password, so its login fails and is
// logged; a database DSN with a password) and finds none of them in the
// log or the chat.
func TestLog_NoSecretEverAppears(t *testing.T) {
	const pw, dsnPW = "Hunter2-concourse-S3CRET", "pg-S3CRET-pw"
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pw"), []byte(pw+"\n"), 0o600))
	path := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
store: gc.db
server: {listen: "127.0.0.1:0"}
chat: {platform: console}
log: {level: debug, format: json}
targets:
  infra-prd:
    simulator: {}
    username: admin
    password_file: pw
    database:
      dsn: "postgres://gc:`+dsnPW+`@127.0.0.1:1/concourse?connect_timeout=1"
`), 0o600))
	cfg, err := config.Load(path)
	require.NoError(t, err)
	var logs syncBuffer
	in, w := io.Pipe()
	out := &syncBuffer{}
	a, err := newApp(cfg, appOptions{In: in, Out: out, Logger: newLogger(cfg, &logs)})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- a.run(t.Context()) }()
	_, err = io.WriteString(w, "/runbook run list-workers target=infra-prd\n/runbook run postgres-build-logs-full target=infra-prd\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return strings.Count(out.String(), "`/runbook summary r-") >= 2 && strings.Contains(logs.String(), "target unhealthy")
	}, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, w.Close())
	<-done
	a.close()
	assert.Contains(t, logs.String(), `"msg":"target unhealthy","target":"infra-prd","reachable":true,"login_ok":false`)
	all := logs.String() + out.String()
	assert.Contains(t, logs.String(), `"msg":"run finished","run":"r-`)
	assert.Contains(t, logs.String(), `"runbook":"list-workers","target":"infra-prd","state":"failed"`)
	for _, s := range []string{pw, dsnPW} {
		assert.NotContains(t, all, s)
	}
}
