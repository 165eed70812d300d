package runbooks

import (
	"os"
	"regexp"
	"testing"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/stretchr/testify/require"
)

// TestFormatDoc_ExampleLoads keeps the first example of FORMAT.md valid.
func TestFormatDoc_ExampleLoads(t *testing.T) {
	doc, err := os.ReadFile("FORMAT.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "FORMAT.md starts with a yaml example")
	cat := testCatalog()
	cat["concourse.workers"] = runbookmodel.OpInfo{Name: "concourse.workers", Class: "read", Args: []runbookmodel.ArgInfo{{Name: "name"}, {Name: "team"}}}
	cat["concourse.prune_worker"] = runbookmodel.OpInfo{Name: "concourse.prune_worker", Class: "destructive", Args: []runbookmodel.ArgInfo{{Name: "worker", Required: true}}}
	_, err = Parse("FORMAT.md", m[1], cat)
	require.NoError(t, err)
}
