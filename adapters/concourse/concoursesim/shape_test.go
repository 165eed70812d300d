package concoursesim_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// volatile keys differ by construction (ids of other runs, clock times,
// addresses, secrets); their values are not compared, their types are.
var volatile = map[string]bool{
	"start_time": true, "end_time": true, "last_updated": true, "paused_at": true, "time": true,
	"addr": true, "baggageclaim_url": true, "access_token": true, "id_token": true,
	"expires_in": true, "external_url": true, "sub": true,
}

// opaque subtrees are compared by presence only (public build plans).
var opaque = map[string]bool{"plan": true}

func assertSameBody(t *testing.T, kind string, want json.RawMessage, got []byte, ignore []string) {
	t.Helper()
	if len(want) == 0 || string(want) == "null" {
		assert.Empty(t, strings.TrimSpace(string(got)), "body should be empty")
		return
	}
	if kind == "text" {
		var s string
		require.NoError(t, json.Unmarshal(want, &s))
		assert.Equal(t, s, string(got), "text body")
		return
	}
	var w, g any
	require.NoError(t, json.Unmarshal(want, &w))
	require.NoError(t, json.Unmarshal(got, &g), "body %q is not JSON", got)
	c := comparer{ignore: map[string]bool{}}
	for _, p := range ignore {
		c.ignore[p] = true
	}
	c.compare("$", "", w, g)
	diffs := c.diffs
	assert.Empty(t, diffs, "body differs from the recording:\n%s", strings.Join(diffs, "\n"))
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	}
	return fmt.Sprintf("%T", v)
}

// comparer records differences of keys, types, lengths and the values of
// non-volatile keys. ignore lists JSON paths ("$.id") whose values differ
// by construction in one case.
type comparer struct {
	ignore map[string]bool
	diffs  []string
}

func (c *comparer) compare(path, key string, want, got any) {
	diffs := &c.diffs
	if jsonType(want) != jsonType(got) {
		*diffs = append(*diffs, fmt.Sprintf("%s: type %s, want %s (%v)", path, jsonType(got), jsonType(want), got))
		return
	}
	if opaque[key] {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: missing", path, k))
				continue
			}
			c.compare(path+"."+k, k, wv, gv)
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: unexpected key", path, k))
			}
		}
	case []any:
		g := got.([]any)
		if len(w) != len(g) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %d elements, want %d", path, len(g), len(w)))
			return
		}
		w, g = sortedByName(w), sortedByName(g)
		for i := range w {
			c.compare(fmt.Sprintf("%s[%d]", path, i), key, w[i], g[i])
		}
	default:
		// plan ids in event origins are random on the real server
		stable := !volatile[key] && !c.ignore[path] && !strings.HasSuffix(path, ".origin.id")
		if stable && want != got {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, want %v", path, got, want))
		}
	}
}

// sortedByName orders arrays of objects that have a name but no id
// (workers come back in database order on the real server).
func sortedByName(a []any) []any {
	for _, e := range a {
		m, ok := e.(map[string]any)
		if !ok {
			return a
		}
		if _, hasID := m["id"]; hasID {
			return a
		}
		if _, hasName := m["name"]; !hasName {
			return a
		}
	}
	out := append([]any(nil), a...)
	sort.SliceStable(out, func(i, j int) bool {
		return fmt.Sprint(out[i].(map[string]any)["name"]) < fmt.Sprint(out[j].(map[string]any)["name"])
	})
	return out
}

type sseFrame struct {
	id, name string
	data     any
}

func parseFrames(t *testing.T, s string) []sseFrame {
	t.Helper()
	var out []sseFrame
	for _, block := range strings.Split(strings.TrimSpace(s), "\n\n") {
		var f sseFrame
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				f.id = v
			case "event":
				f.name = v
			case "data":
				if v != "" {
					require.NoError(t, json.Unmarshal([]byte(v), &f.data), "data %q", v)
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// assertSameEvents compares two SSE bodies frame by frame: ids, event
// names, event types and versions, and payload shapes.
func assertSameEvents(t *testing.T, want, got string) {
	t.Helper()
	wf, gf := parseFrames(t, want), parseFrames(t, got)
	require.Len(t, gf, len(wf), "frames:\n%s", got)
	c := comparer{}
	for i := range wf {
		if wf[i].id != gf[i].id || wf[i].name != gf[i].name {
			c.diffs = append(c.diffs, fmt.Sprintf("frame %d: id %s event %s, want id %s event %s", i, gf[i].id, gf[i].name, wf[i].id, wf[i].name))
			continue
		}
		c.compare(fmt.Sprintf("frame[%d]", i), "", wf[i].data, gf[i].data)
	}
	diffs := c.diffs
	assert.Empty(t, diffs, "events differ from the recording:\n%s\ngot:\n%s", strings.Join(diffs, "\n"), got)
}
