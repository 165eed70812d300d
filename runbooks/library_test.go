package runbooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func names(rbs []*runbookmodel.Runbook) []string {
	out := make([]string, len(rbs))
	for i, rb := range rbs {
		out[i] = rb.Name
	}
	return out
}

func TestLoadFS_Good(t *testing.T) {
	rbs, err := LoadFS(os.DirFS(filepath.Join("testdata", "good")), testCatalog())
	require.NoError(t, err)
	assert.Equal(t, []string{"echo", "minimal", "worker-stalled"}, names(rbs), "recursive, *.yaml and *.yml, sorted by name")
	assert.Equal(t, "nested/echo.yml", rbs[0].Source)
}

func TestLoadFS_CollectsErrorsFromAllFiles(t *testing.T) {
	rbs, err := LoadFS(os.DirFS(filepath.Join("testdata", "library", "broken")), testCatalog())
	require.Error(t, err)
	var list ErrorList
	require.True(t, errors.As(err, &list))
	assert.Equal(t, []string{
		`bad.yaml:4:11: unknown step kind "nope" (kinds: query, action, approval, manual, wait)`,
		`dup2.yaml:1:7: runbook "extra" is already defined in dup.yaml`,
	}, errorStrings(list))
	assert.Equal(t, []string{"extra"}, names(rbs), "valid runbooks are still returned")
}

func TestLoadFS_SkipsHiddenAndOtherFiles(t *testing.T) {
	fsys := fstest.MapFS{
		"a.yaml":         {Data: []byte("name: a\nsteps:\n  - id: x\n    kind: manual\n    text: t\n")},
		"notes.md":       {Data: []byte("# not a runbook")},
		".hidden.yaml":   {Data: []byte("garbage: [")},
		".git/x.yaml":    {Data: []byte("garbage: [")},
		"sub/b.yml":      {Data: []byte("name: b\nsteps:\n  - id: x\n    kind: manual\n    text: t\n")},
		"sub/empty.yaml": {Data: []byte("")},
	}
	rbs, err := LoadFS(fsys, testCatalog())
	require.Error(t, err)
	assert.Equal(t, "sub/empty.yaml:1:1: file is empty; a runbook needs at least name and steps", err.Error())
	assert.Equal(t, []string{"a", "b"}, names(rbs))
}

func TestLint(t *testing.T) {
	assert.Empty(t, Lint(os.DirFS(filepath.Join("testdata", "good")), testCatalog()))
	list := Lint(os.DirFS(filepath.Join("testdata", "bad")), testCatalog())
	assert.Greater(t, len(list), 60, "every bad file contributes")
	for _, e := range list {
		assert.NotEmpty(t, e.File)
	}
}

func errorStrings(list ErrorList) []string {
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Error()
	}
	return out
}

func TestNewLibrary_Override(t *testing.T) {
	lib, err := NewLibrary(testCatalog(),
		Source{Name: "builtin", FS: os.DirFS(filepath.Join("testdata", "library", "builtin"))},
		DirSource(filepath.Join("testdata", "library", "config")),
	)
	require.NoError(t, err)
	assert.Equal(t, []string{"bye", "extra", "hello"}, names(lib.List()))
	assert.Equal(t, []string{"bye", "extra", "hello"}, lib.Names())

	hello, ok := lib.Get("hello")
	require.True(t, ok)
	assert.Equal(t, "Our own hello", hello.Title, "the config directory wins")
	assert.Equal(t, filepath.Join("testdata", "library", "config")+"/hello.yaml", hello.Source)

	bye, ok := lib.Get("bye")
	require.True(t, ok)
	assert.Equal(t, "builtin/bye.yaml", bye.Source)

	_, ok = lib.Get("nope")
	assert.False(t, ok)

	assert.Equal(t, []Override{{
		Name:     "hello",
		Source:   filepath.Join("testdata", "library", "config") + "/hello.yaml",
		Replaced: "builtin/hello.yaml",
	}}, lib.Overridden())
}

func TestNewLibrary_ErrorsKeepValidRunbooks(t *testing.T) {
	lib, err := NewLibrary(testCatalog(),
		Source{Name: "builtin", FS: os.DirFS(filepath.Join("testdata", "library", "builtin"))},
		Source{Name: "/etc/runbooks", FS: os.DirFS(filepath.Join("testdata", "library", "broken"))},
	)
	require.Error(t, err)
	var list ErrorList
	require.True(t, errors.As(err, &list))
	assert.Equal(t, []string{
		`/etc/runbooks/bad.yaml:4:11: unknown step kind "nope" (kinds: query, action, approval, manual, wait)`,
		`/etc/runbooks/dup2.yaml:1:7: runbook "extra" is already defined in /etc/runbooks/dup.yaml`,
	}, errorStrings(list))
	require.NotNil(t, lib)
	assert.Equal(t, []string{"bye", "extra", "hello"}, lib.Names())
	assert.Empty(t, lib.Overridden())
}

func TestBuiltin_Loads(t *testing.T) {
	lib, err := NewLibrary(nil, BuiltinSource()) // operations are checked against the real catalogue in scenario
	require.NoError(t, err)
	hello, ok := lib.Get("hello")
	require.True(t, ok)
	assert.Equal(t, "builtin/hello.yaml", hello.Source)
	for _, rb := range lib.List() {
		assert.NotEmpty(t, rb.Title, "built-in %s has a title", rb.Name)
		assert.NotEmpty(t, rb.Description, "built-in %s has a description", rb.Name)
	}
}

func TestLoadSource_PrefixesFileNames(t *testing.T) {
	_, err := LoadSource(DirSource(filepath.Join("testdata", "library", "broken")), testCatalog())
	require.Error(t, err)
	var list ErrorList
	require.True(t, errors.As(err, &list))
	require.NotEmpty(t, list)
	assert.Equal(t, filepath.Join("testdata", "library", "broken")+"/bad.yaml", list[0].File)
}

func TestNewLibrary_BrokenOverrideHidesTheBuiltin(t *testing.T) {
	builtin := Source{Name: "builtin", FS: os.DirFS(filepath.Join("testdata", "library", "builtin"))}
	conf := Source{Name: "/etc/runbooks", FS: fstest.MapFS{
		// Decodes, but has an unknown field: the name is known.
		"hello.yaml": {Data: []byte("name: hello\ntitle: Our hello\nsteps:\n  - id: greet\n    kind: manual\n    txt: ours\n")},
		// Does not parse as YAML: the name line is still readable.
		"greeting.yaml": {Data: []byte("name: bye\nsteps: [\n")},
		// No name at all: the file's base name.
		"extra.yml": {Data: []byte("steps: {\n")},
	}}
	lib, err := NewLibrary(testCatalog(), builtin, conf)
	require.Error(t, err, "config check still fails on broken files")

	for _, name := range []string{"hello", "bye", "extra"} {
		_, ok := lib.Get(name)
		assert.False(t, ok, "%s: a broken override is unavailable, the built-in is not used", name)
	}
	assert.Empty(t, lib.Names())

	b, ok := lib.Broken("hello")
	require.True(t, ok)
	assert.Equal(t, "/etc/runbooks/hello.yaml", b.File)
	assert.Equal(t, "/etc/runbooks", b.Dir)
	require.NotEmpty(t, b.Errors)
	assert.Equal(t, 6, b.Errors[0].Line)
	assert.Equal(t, 5, b.Errors[0].Column)
	assert.Contains(t, b.Errors[0].Msg, `unknown field "txt"`)

	var got []string
	for _, b := range lib.BrokenList() {
		got = append(got, b.Name+"="+b.File)
	}
	assert.Equal(t, []string{"bye=/etc/runbooks/greeting.yaml", "extra=/etc/runbooks/extra.yml", "hello=/etc/runbooks/hello.yaml"}, got)
}

func TestNewLibrary_LaterValidSourceReplacesBroken(t *testing.T) {
	broken := Source{Name: "/a", FS: fstest.MapFS{"hello.yaml": {Data: []byte("name: hello\nsteps: [\n")}}}
	fixed := Source{Name: "/b", FS: fstest.MapFS{"hello.yaml": {Data: []byte("name: hello\nsteps:\n  - id: x\n    kind: manual\n    text: t\n")}}}
	lib, err := NewLibrary(testCatalog(), broken, fixed)
	require.Error(t, err)
	rb, ok := lib.Get("hello")
	require.True(t, ok)
	assert.Equal(t, "/b/hello.yaml", rb.Source)
	assert.Empty(t, lib.BrokenList())
}

// A when without because loads (it is a warning, not an error), and lint
// says where and what to write.
func TestLint_WhenWithoutBecauseWarns(t *testing.T) {
	src := "name: x\nsteps:\n  - id: a\n    kind: query\n    op: fake.status\n  - id: b\n    kind: query\n    op: fake.status\n    when: steps.a.status == \"failed\"\n"
	rb, err := Parse("x.yaml", []byte(src), testCatalog())
	require.NoError(t, err, "a missing because does not stop the runbook from loading")
	assert.Equal(t, `steps.a.status == "failed"`, rb.Steps[1].When)
	ok, problems := LintFile("x.yaml", []byte(src), testCatalog())
	assert.True(t, ok)
	require.Len(t, problems, 1)
	assert.True(t, problems[0].Warning)
	assert.Empty(t, problems.Errors())
	assert.Equal(t, `x.yaml:9:11: warning: when of step "b" has no because, so the thread would show the expression: say in words why the step is skipped — when: {if: <the expression>, because: <why, e.g. the worker is running, not stalled>}`, problems[0].Error())

	fixed := strings.Replace(src, `when: steps.a.status == "failed"`, `when: {if: steps.a.status == "failed", because: a succeeded}`, 1)
	ok, problems = LintFile("x.yaml", []byte(fixed), testCatalog())
	assert.True(t, ok)
	assert.Empty(t, problems)
}
