package bot_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDependencyDirection keeps the engine free of adapters, the store and
// platform libraries: it talks to them only through the ports it owns.
func TestDependencyDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/groundcrew/groundcrew/bot", "github.com/groundcrew/groundcrew/runbooks").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{
			"github.com/groundcrew/groundcrew/adapters", "github.com/groundcrew/groundcrew/store",
			"github.com/groundcrew/groundcrew/config", "go.etcd.io/bbolt", "github.com/slack-go",
			"github.com/mattermost", "github.com/jackc/pgx",
		} {
			require.False(t, strings.HasPrefix(dep, banned), "bot/runbooks must not depend on %s", dep)
		}
	}
}
