package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBinaryLinksNoTestFake keeps test fakes out of the production binary:
// the scenario runner and the demo use simulators (concoursesim, pgsim),
// never bot/bottest.
func TestBinaryLinksNoTestFake(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/groundcrew/groundcrew/cmd/groundcrew").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, strings.HasSuffix(dep, "test") && strings.HasPrefix(dep, "github.com/groundcrew/"),
			"cmd/groundcrew links the test package %s", dep)
	}
}
