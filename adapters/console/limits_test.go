package console_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
	"github.com/groundcrew/groundcrew/store"
)

// A line over the limit (here 2 MiB; it used to end the session with
// "bufio.Scanner: token too long") is refused with a message, and the lines
// after it still run.
func TestConsole_HugeLineIsRefusedNotFatal(t *testing.T) {
	world := bottest.NewWorld(map[string]string{"w-0": "running"})
	db, err := store.Open(filepath.Join(t.TempDir(), "gc.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	reg, err := opmodel.NewRegistry(core.Provider{}, world)
	require.NoError(t, err)
	lib, err := runbooks.NewLibrary(reg, runbooks.Source{Name: "t", FS: fstest.MapFS{"p.yaml": {Data: []byte(rb)}}})
	require.NoError(t, err)
	script := "/runbook list\n/runbook run prune who=" + strings.Repeat("x", 2<<20) + "\n/runbook show prune\n/runbook run prune who=" + strings.Repeat("y", 20000) + "\n/runbook help"
	var out bytes.Buffer
	var eng *bot.Engine
	c := console.New(console.Config{}, strings.NewReader(script), &out,
		console.Options{AfterLine: func() { _ = eng.WaitIdle(context.Background()) }})
	eng, err = bot.New(bot.Options{Store: db, Chat: c, Capabilities: bot.CapabilitiesOf(db, c), Ops: reg, Library: lib,
		Targets: map[string]bot.TargetInfo{"infra-prd": {}}})
	require.NoError(t, err)
	require.NoError(t, c.Run(context.Background(), eng))
	got := out.String()
	assert.Contains(t, got, "input line 2 is longer than 64 KiB, the limit for one line; it was ignored")
	assert.Contains(t, got, "prune — Prune stalled workers\n  test", "line 3 still ran")
	assert.Contains(t, got, "the limit is 16 KiB", "line 4 is a refused command")
	assert.Contains(t, got, "groundcrew runs Concourse runbooks", "the last line (no newline) still ran")
	assert.Less(t, len(got), 20000, "nothing huge is echoed")
	runs, err := db.ListRuns(context.Background(), runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs)
}
