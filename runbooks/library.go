package runbooks

import (
	"io/fs"
	"os"
	"sort"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// Source is a place runbooks are loaded from.
type Source struct {
	// Name prefixes the file names in errors and in Runbook.Source:
	// "builtin" or the configured directory.
	Name string
	FS   fs.FS
}

// BuiltinSource is the embedded library, named "builtin".
func BuiltinSource() Source { return Source{Name: "builtin", FS: Builtin()} }

// DirSource is a runbook directory on disk. Nothing is read until the
// source is loaded.
func DirSource(dir string) Source { return Source{Name: dir, FS: os.DirFS(dir)} }

// Override records a runbook that a later source replaced.
type Override struct {
	Name string
	// Source is the file that is used now; Replaced is the one it hides.
	Source, Replaced string
}

// Library is the set of runbooks the bot offers, by name. It is immutable
// and safe for concurrent use; build a new one to reload.
type Library struct {
	byName    map[string]*runbookmodel.Runbook
	broken    map[string]Broken
	overrides []Override
}

// NewLibrary loads the sources in order; a runbook from a later source
// replaces an earlier one with the same name (pass BuiltinSource() first
// so configured directories override built-ins). Two files with the same
// name inside one source are an error.
//
// When some files are invalid, NewLibrary returns the library of the valid
// runbooks together with an ErrorList of every problem, so the caller can
// choose between refusing to start and carrying on with a warning.
//
// A file that does not load makes the runbook it was meant to define
// unavailable (see Broken): an earlier source's runbook of that name — a
// built-in — is never used in its place, since the team meant their own
// version. A later source's valid runbook of that name replaces it as usual.
func NewLibrary(cat Catalog, sources ...Source) (*Library, error) {
	l := &Library{byName: map[string]*runbookmodel.Runbook{}, broken: map[string]Broken{}}
	var errs ErrorList
	for _, src := range sources {
		rbs, broken, _, err := loadFS(src.FS, src.Name, cat)
		errs = append(errs, errorsOf(src.Name, err)...)
		valid := map[string]bool{}
		for _, rb := range rbs {
			valid[rb.Name] = true
			if prev, ok := l.byName[rb.Name]; ok {
				l.overrides = append(l.overrides, Override{Name: rb.Name, Source: rb.Source, Replaced: prev.Source})
			}
			l.byName[rb.Name] = rb
			delete(l.broken, rb.Name)
		}
		for _, b := range broken {
			if valid[b.Name] {
				// Another file of this source defines the name: the
				// broken one is reported as an error, not as the runbook.
				continue
			}
			if prev, dup := l.broken[b.Name]; dup && prev.Dir == b.Dir {
				continue // the first broken file of a source is reported
			}
			delete(l.byName, b.Name)
			l.broken[b.Name] = b
		}
	}
	return l, errs.Err()
}

// Broken returns the file that keeps the named runbook unavailable.
func (l *Library) Broken(name string) (Broken, bool) {
	b, ok := l.broken[name]
	return b, ok
}

// BrokenList returns every unavailable runbook, sorted by name.
func (l *Library) BrokenList() []Broken {
	out := make([]Broken, 0, len(l.broken))
	for _, b := range l.broken {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Get returns the runbook with the given name.
func (l *Library) Get(name string) (*runbookmodel.Runbook, bool) {
	rb, ok := l.byName[name]
	return rb, ok
}

// List returns the runbooks sorted by name.
func (l *Library) List() []*runbookmodel.Runbook {
	out := make([]*runbookmodel.Runbook, 0, len(l.byName))
	for _, rb := range l.byName {
		out = append(out, rb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the runbook names, sorted.
func (l *Library) Names() []string {
	out := make([]string, 0, len(l.byName))
	for name := range l.byName {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Overridden lists the runbooks a later source replaced, sorted by name
// (for `groundcrew lint`, startup logs and /runbook list).
func (l *Library) Overridden() []Override {
	out := append([]Override(nil), l.overrides...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
