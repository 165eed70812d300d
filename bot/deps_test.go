package bot_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/groundcrew/groundcrew/"

// deps is a package's transitive dependencies: those of the module
// (relative to it) and the others.
type deps struct{ mod, ext []string }

// pkgDeps lists every package of the module (relative to it) with its deps.
func pkgDeps(t *testing.T) map[string]deps {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}", module+"...").CombinedOutput()
	require.NoError(t, err, string(out))
	all := map[string]deps{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, ds, _ := strings.Cut(line, "|")
		var d deps
		for _, dep := range strings.Fields(ds) {
			if rel, ok := strings.CutPrefix(dep, module); ok {
				d.mod = append(d.mod, rel)
			} else {
				d.ext = append(d.ext, dep)
			}
		}
		all[strings.TrimPrefix(pkg, module)] = d
	}
	require.Contains(t, all, "bot")
	return all
}

// under reports whether pkg is one of the roots or below one.
func under(pkg string, roots ...string) bool {
	for _, r := range roots {
		if pkg == r || strings.HasPrefix(pkg, r+"/") {
			return true
		}
	}
	return false
}

var (
	platformLibs = []string{"go.etcd.io/bbolt", "github.com/slack-go", "github.com/mattermost", "github.com/jackc/pgx",
		"github.com/prometheus"}
	// subsystems are the engine's neighbours: they use its ports and never an edge.
	subsystems = []string{"digest", "incident", "watch", "checkpoint", "metrics"}
	// floors is the house from the ground up (README "Architecture"): a
	// room (a top-level folder) imports only rooms on lower floors, never one
	// beside it or above it. A new room gets its floor here and in the README.
	floors = [][]string{
		{"model"},
		{"internal", "leader", "runbooks", "policy", "delivery"},
		{"bot", "incident", "digest", "checkpoint"},
		{"watch", "adapters", "store", "web"},
		{"metrics", "config", "scenario"},
		{"cmd"},
	}
	// mayImportBot are the only packages that may import bot: the
	// composition roots, scenarios and the engine's own sub-packages.
	mayImportBot = []string{"bot", "cmd", "scenario", "internal/soak"}
)

// adapterKinds derives the chat adapters (those adapters/chatplatform
// registers, plus adapters/chatutil) and the ops adapters (every other
// adapters/<x>), so a new adapter is under the rules without being listed here.
func adapterKinds(t *testing.T, deps map[string]deps) (chat, ops []string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", module+"adapters/chatplatform").CombinedOutput()
	require.NoError(t, err, string(out))
	chat = []string{"adapters/chatutil"}
	for _, imp := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(imp, module); ok && under(rel, "adapters") {
			chat = append(chat, strings.Join(strings.SplitN(rel, "/", 3)[:2], "/"))
		}
	}
	require.Contains(t, chat, "adapters/console", "chatplatform registers the console")
	for pkg := range deps {
		parts := strings.SplitN(pkg, "/", 3)
		if len(parts) < 2 || parts[0] != "adapters" {
			continue
		}
		top := parts[0] + "/" + parts[1]
		if top == "adapters/chatplatform" || slices.Contains(chat, top) || slices.Contains(ops, top) {
			continue
		}
		ops = append(ops, top)
	}
	require.Contains(t, ops, "adapters/concourse")
	return chat, ops
}

// TestNothingButTheRootsImportsBot: the vocabulary lives in model/, so
// adapters, the store, delivery and the subsystems never import the engine.
func TestNothingButTheRootsImportsBot(t *testing.T) {
	for pkg, ds := range pkgDeps(t) {
		if under(pkg, mayImportBot...) || strings.HasSuffix(pkg, "test") {
			continue
		}
		assert.NotContains(t, ds.mod, "bot", "%s must not import bot: use the model packages (model/chatmodel, model/opmodel, model/runmodel)", pkg)
	}
}

// TestDependencyDirection keeps the engine free of adapters, the store and
// platform libraries: it talks to them only through the ports it owns.
func TestDependencyDirection(t *testing.T) {
	deps := pkgDeps(t)
	for _, pkg := range []string{"bot", "policy"} {
		for _, d := range deps[pkg].mod {
			assert.False(t, under(d, "adapters", "store", "config", "cmd", "scenario"), "%s must not depend on %s", pkg, d)
			assert.False(t, under(d, subsystems...), "%s must not depend on the subsystem %s (it depends on bot)", pkg, d)
		}
		for _, d := range deps[pkg].ext {
			for _, lib := range platformLibs {
				assert.False(t, strings.HasPrefix(d, lib), "%s must not depend on %s", pkg, d)
			}
		}
	}
}

// TestArchitecture checks every rule of the README's architecture map.
func TestArchitecture(t *testing.T) {
	deps := pkgDeps(t)
	chatAdapters, opsAdapters := adapterKinds(t, deps)
	for pkg, ds := range deps {
		mod := ds.mod
		switch {
		case under(pkg, "runbooks"), pkg == "delivery", pkg == "policy":
			for _, d := range mod {
				assert.True(t, under(d, "model"), "%s imports only the model packages, not %s", pkg, d)
			}
		case under(pkg, "model"):
			for _, d := range mod {
				assert.True(t, under(d, "model"), "the model package %s imports only other model packages, not %s: the model is a leaf", pkg, d)
			}
		case under(pkg, "adapters/chatplatform"):
			for _, d := range mod {
				assert.False(t, under(d, opsAdapters...), "the chat platform registry %s must not import the ops adapter %s", pkg, d)
			}
		case under(pkg, chatAdapters...):
			for _, d := range mod {
				assert.False(t, under(d, opsAdapters...), "chat adapter %s must not import the ops adapter %s", pkg, d)
				assert.False(t, under(d, "store", "config", "cmd", "scenario"), "chat adapter %s must not import %s", pkg, d)
			}
		case under(pkg, opsAdapters...):
			for _, d := range mod {
				assert.False(t, under(d, chatAdapters...), "ops adapter %s must not import the chat adapter %s", pkg, d)
				assert.False(t, under(d, "store", "config", "cmd", "scenario"), "ops adapter %s must not import %s", pkg, d)
				if under(d, opsAdapters...) {
					own := strings.Join(strings.SplitN(pkg, "/", 3)[:2], "/")
					assert.True(t, under(d, own), "ops adapter %s must not import another ops adapter, %s", pkg, d)
				}
			}
		case under(pkg, subsystems...):
			for _, d := range mod {
				assert.False(t, under(d, "adapters", "store", "config", "cmd", "scenario"), "%s must reach %s only through a port", pkg, d)
			}
		case under(pkg, "store"):
			for _, d := range mod {
				assert.False(t, under(d, "adapters", "config", "cmd", "scenario"), "the store must not import %s", d)
			}
		}
	}
}

// room is the top-level folder of a package of the module.
func room(pkg string) string { return strings.SplitN(pkg, "/", 2)[0] }

func floorOf(t *testing.T, pkg string) int {
	t.Helper()
	for i, rooms := range floors {
		if slices.Contains(rooms, room(pkg)) {
			return i + 1
		}
	}
	t.Fatalf("%s is in no floor: add its folder to floors (bot/deps_test.go) and to the README's architecture map", pkg)
	return 0
}

// TestFloors: every import runs down the house, from a room to a room on a
// lower floor (or inside one room); none runs sideways or back up.
func TestFloors(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}", module+"...").CombinedOutput()
	require.NoError(t, err, string(out))
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imps, _ := strings.Cut(line, "|")
		pkg = strings.TrimPrefix(pkg, module)
		if room(pkg) == "e2e" || strings.HasSuffix(pkg, "test") || pkg == "internal/soak" {
			continue // test helpers and end-to-end modules stand outside the house
		}
		from := floorOf(t, pkg)
		for _, imp := range strings.Fields(imps) {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || room(dep) == room(pkg) {
				continue
			}
			assert.Less(t, floorOf(t, dep), from, "%s (floor %d) imports %s (floor %d): an import runs only down the house", pkg, from, dep, floorOf(t, dep))
		}
	}
}

// TestNoAliasesOfModelTypes: every model name has one name, its own. No
// package re-exports a model type, constant, variable or function
// (type Run = runmodel.Run, var Sanitize = textmodel.Sanitize).
func TestNoAliasesOfModelTypes(t *testing.T) {
	fset := token.NewFileSet()
	var aliases []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") && name != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		models := map[string]bool{} // the names the file imports model packages under
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if rel, ok := strings.CutPrefix(p, module); ok && under(rel, "model") {
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				models[name] = true
			}
		}
		isModel := func(e ast.Expr) bool {
			if sel, ok := e.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok {
					return models[x.Name]
				}
			}
			return false
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if s.Assign != 0 && isModel(s.Type) {
						aliases = append(aliases, fset.Position(s.Pos()).String()+": type "+s.Name.Name)
					}
				case *ast.ValueSpec:
					for i, v := range s.Values {
						if isModel(v) {
							aliases = append(aliases, fset.Position(s.Pos()).String()+": "+s.Names[i].Name)
						}
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, aliases, "name the model's types by their own package (runmodel.Run), never through an alias")
}

// TestBinaryHasNoTestCode: the production binary links no test fake and no
// package of the module imports testing outside tests.
func TestBinaryHasNoTestCode(t *testing.T) {
	deps := pkgDeps(t)
	bin := append(slices.Clone(deps["cmd/groundcrew"].mod), "cmd/groundcrew")
	require.Greater(t, len(bin), 10)
	for _, d := range bin {
		last := d[strings.LastIndex(d, "/")+1:]
		assert.False(t, strings.HasSuffix(last, "test"), "the binary links the test fake %s", d)
		out, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", module+d).CombinedOutput()
		require.NoError(t, err, string(out))
		for _, imp := range strings.Fields(string(out)) {
			assert.NotEqual(t, "testing", imp, "%s (in the binary) imports testing", d)
			assert.False(t, strings.HasPrefix(imp, "github.com/stretchr/testify"), "%s (in the binary) imports testify", d)
		}
	}
}

// TestEngineStaysACoordinator: Engine wires small types, one concern each
// (DEVELOPERS.md); a new concern gets its own type, not more Engine
// methods. It had 98 methods before the subsystems were split out.
func TestEngineStaysACoordinator(t *testing.T) {
	const limit = 50
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var methods []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || len(fn.Recv.List) != 1 {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok && id.Name == "Engine" {
					methods = append(methods, name+": "+fn.Name.Name)
				}
			}
		}
	}
	require.NotEmpty(t, methods)
	assert.LessOrEqual(t, len(methods), limit, "Engine has %d methods; give the new concern its own type:\n%s", len(methods), strings.Join(methods, "\n"))
}

// TestOneCommandParser: command text is read by one parser, the engine's
// (Parse). The chat adapters make command events and scenarios type them;
// a subsystem that answers a command declares it (chatmodel.CommandSpec)
// and is handed it parsed, so no other package looks at EventCommand.
func TestOneCommandParser(t *testing.T) {
	makers := []string{"bot", "model", "adapters", "scenario"}
	fset := token.NewFileSet()
	var readers []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		if d.IsDir() {
			if under(rel, makers...) || under(rel, "e2e", "testdata", ".ci") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "EventCommand" {
				readers = append(readers, fset.Position(sel.Pos()).String())
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	assert.Empty(t, readers, "only the engine reads commands; declare a CommandSpec and implement Commander instead")
}
