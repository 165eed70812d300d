package bot_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/runbooks"
)

// brokenOverrideHarness: a library with the built-in prune runbook and an
// override of it in /etc/groundcrew/runbooks that does not load (23:5:
// unknown field "opp").
func brokenOverrideHarness(t *testing.T, world *bottest.World) *harness {
	t.Helper()
	broken := strings.Replace(pruneRunbook, "    op: fake.prune", "    op: fake.prune\n    opp: typo", 1)
	return newHarness(t, world, func(o *bot.Options) {
		reg, err := opmodel.NewRegistry(core.Provider{}, world)
		require.NoError(t, err)
		lib, err := runbooks.NewLibrary(reg,
			runbooks.Source{Name: "builtin", FS: fstest.MapFS{"prune.yaml": {Data: []byte(pruneRunbook)}}},
			runbooks.Source{Name: "/etc/groundcrew/runbooks", FS: fstest.MapFS{"prune.yaml": {Data: []byte(broken)}}},
		)
		require.Error(t, err)
		o.Library, o.Ops = lib, reg
	})
}

// A broken override of a built-in makes the runbook unavailable: the
// built-in (with its destructive step) is never run in its place.
func TestBrokenOverride_IsUnavailableNotReplaced(t *testing.T) {
	world := bottest.NewWorld(map[string]string{"w-0": "stalled"})
	h := brokenOverrideHarness(t, world)

	h.cmd(alice, "run prune target=infra-prd")
	runs, err := h.db.ListRuns(h.ctx, runmodel.RunQuery{})
	require.NoError(t, err)
	assert.Empty(t, runs, "the built-in must not run while the override is broken")
	assert.Zero(t, world.CallCount("fake.prune"))
	replies := h.chat.Ephemerals(alice.ID)
	require.NotEmpty(t, replies)
	msg := replies[len(replies)-1]
	assert.Contains(t, msg, "`prune` is unavailable")
	assert.Contains(t, msg, "/etc/groundcrew/runbooks/prune.yaml")
	assert.Contains(t, msg, `First error: 26:5: unknown field "opp"`)
	assert.Contains(t, msg, "`groundcrew lint /etc/groundcrew/runbooks`")

	h.cmd(alice, "show prune")
	replies = h.chat.Ephemerals(alice.ID)
	assert.Equal(t, msg, replies[len(replies)-1], "show answers the same")

	h.cmd(alice, "list")
	replies = h.chat.Ephemerals(alice.ID)
	assert.Contains(t, replies[len(replies)-1], "`prune` ⚠️ broken — `/etc/groundcrew/runbooks/prune.yaml` does not load")
}

// A mistyped name of a broken runbook is suggested, said broken.
func TestBrokenOverride_IsSuggested(t *testing.T) {
	world := bottest.NewWorld(map[string]string{"w-0": "stalled"})
	h := brokenOverrideHarness(t, world)
	for _, cmd := range []string{"run prnue target=infra-prd", "show prnue"} {
		h.cmd(alice, cmd)
		replies := h.chat.Ephemerals(alice.ID)
		require.NotEmpty(t, replies)
		assert.Contains(t, last(replies), "There is no runbook \"prnue\". Did you mean `prune`? It is currently broken (its file does not load): `/runbook show prune` says why.", cmd)
	}
}
