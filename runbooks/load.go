package runbooks

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// MaxFileSize is the largest runbook file the loader reads (the largest
// built-in runbook is under 8 KiB).
const MaxFileSize = 256 << 10

func tooLarge(file string, n int64) *Error {
	return &Error{File: file, Msg: fmt.Sprintf("the file is %d KiB; the limit for a runbook file is %d KiB", (n+1023)>>10, MaxFileSize>>10)}
}

// Parse decodes and validates one runbook. file names it in errors and in
// Runbook.Source. cat says which operations exist; a nil cat skips the
// operation checks (format-only validation). On failure the error is an
// ErrorList with every problem found, sorted by position.
func Parse(file string, data []byte, cat Catalog) (*runbookmodel.Runbook, error) {
	r, errs := parseRaw(file, data, cat)
	if len(errs) > 0 {
		return nil, errs
	}
	return &r.rb, nil
}

// parseRaw is Parse returning the YAML nodes and the warnings too.
func parseRaw(file string, data []byte, cat Catalog) (*rawRunbook, ErrorList) {
	if len(data) > MaxFileSize {
		return nil, ErrorList{tooLarge(file, int64(len(data)))}
	}
	d := &decoder{file: file, data: data}
	root := d.document()
	if root == nil {
		return nil, d.errs
	}
	r := d.runbook(root)
	if r != nil {
		v := &validator{decoder: d, cat: cat, r: r}
		v.validate()
		d.warns.Sort()
		r.warns = d.warns
	}
	d.errs.Sort()
	return r, d.errs
}

// namePos is where the runbook's name is written.
func (r *rawRunbook) namePos() (int, int) {
	if f, ok := r.fields["name"]; ok {
		return f.value.Line, f.value.Column
	}
	return r.root.Line, r.root.Column
}

// LoadFS parses every *.yaml and *.yml file under fsys (recursively, in
// lexical order). File names in errors and Runbook.Source are paths
// inside fsys. Errors from all files are collected into one ErrorList;
// two files declaring the same runbook name are an error too. The valid
// runbooks are returned even when other files have errors.
func LoadFS(fsys fs.FS, cat Catalog) ([]*runbookmodel.Runbook, error) {
	rbs, _, _, err := loadFS(fsys, "", cat)
	return rbs, err
}

// LoadSource is LoadFS with the source's name joined to the file names in
// errors and in Runbook.Source ("/etc/groundcrew/runbooks/prune.yaml").
func LoadSource(src Source, cat Catalog) ([]*runbookmodel.Runbook, error) {
	rbs, _, _, err := loadFS(src.FS, src.Name, cat)
	return rbs, err
}

// loadFS is LoadFS with prefix joined to the file names it reports. It
// also returns the files that do not load, with the runbook name each was
// meant to define, and the warnings of those that do.
func loadFS(fsys fs.FS, prefix string, cat Catalog) ([]*runbookmodel.Runbook, []Broken, ErrorList, error) {
	var (
		out    []*runbookmodel.Runbook
		broken []Broken
		errs   ErrorList
		warns  ErrorList
	)
	seen := map[string]string{} // runbook name -> file
	err := fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
		name := displayName(prefix, p)
		if err != nil {
			errs = append(errs, &Error{File: name, Msg: fmt.Sprintf("reading: %v", err)})
			if de != nil && de.IsDir() && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			if p != "." && strings.HasPrefix(de.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		ext := path.Ext(p)
		if ext != ".yaml" && ext != ".yml" || strings.HasPrefix(de.Name(), ".") {
			return nil
		}
		if info, err := de.Info(); err == nil && info.Size() > MaxFileSize {
			e := tooLarge(name, info.Size())
			errs = append(errs, e)
			broken = append(broken, Broken{Name: intendedName(nil, nil, p), File: name, Dir: prefix, Errors: ErrorList{e}})
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			e := &Error{File: name, Msg: fmt.Sprintf("reading: %v", err)}
			errs = append(errs, e)
			broken = append(broken, Broken{Name: intendedName(nil, nil, p), File: name, Dir: prefix, Errors: ErrorList{e}})
			return nil
		}
		r, perrs := parseRaw(name, data, cat)
		if len(perrs) > 0 {
			errs = append(errs, perrs...)
			broken = append(broken, Broken{Name: intendedName(r, data, p), File: name, Dir: prefix, Errors: perrs})
			return nil
		}
		if first, dup := seen[r.rb.Name]; dup {
			line, col := r.namePos()
			errs = append(errs, &Error{File: name, Line: line, Column: col,
				Msg: fmt.Sprintf("runbook %q is already defined in %s", r.rb.Name, first)})
			return nil
		}
		seen[r.rb.Name] = name
		warns = append(warns, r.warns...)
		rb := r.rb
		out = append(out, &rb)
		return nil
	})
	if err != nil {
		errs = append(errs, &Error{File: prefix, Msg: fmt.Sprintf("reading: %v", err)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, broken, warns, errs.Err()
}

// Lint validates every runbook file under fsys and returns all problems,
// warnings included (nil when there are none).
func Lint(fsys fs.FS, cat Catalog) ErrorList {
	_, problems := LintSource(Source{FS: fsys}, cat)
	return problems
}

// LintSource validates every runbook file of src: it returns how many
// runbooks load and every problem — errors (the file does not load) and
// warnings (Error.Warning: it loads, but people will read less than they
// should, e.g. a when without because), errors first. It backs `groundcrew
// lint <dir>`.
func LintSource(src Source, cat Catalog) (int, ErrorList) {
	rbs, _, warns, err := loadFS(src.FS, src.Name, cat)
	return len(rbs), append(errorsOf(src.Name, err), warns...)
}

// LintFile is LintSource for one file: whether it loads, and its problems.
func LintFile(file string, data []byte, cat Catalog) (bool, ErrorList) {
	if len(data) > MaxFileSize {
		return false, ErrorList{tooLarge(file, int64(len(data)))}
	}
	r, errs := parseRaw(file, data, cat)
	if len(errs) > 0 {
		return false, errs
	}
	return true, r.warns
}

// Errors returns the problems of l that are not warnings.
func (l ErrorList) Errors() ErrorList {
	var out ErrorList
	for _, e := range l {
		if !e.Warning {
			out = append(out, e)
		}
	}
	return out
}

// Broken is a runbook file that does not load. The runbook it was meant to
// define is unavailable (a built-in of the same name is not used instead).
type Broken struct {
	// Name is the file's `name:` when it can be read, else the file's base
	// name without extension.
	Name string
	// File is the file, as shown in errors; Dir is the directory (source)
	// it is in, for `groundcrew lint <dir>`.
	File, Dir string
	// Errors are the problems found, sorted by position (never empty).
	Errors ErrorList
}

// nameLine finds a top-level `name:` in a file that does not parse.
var nameLine = regexp.MustCompile(`(?m)^name:[ \t]*["']?([A-Za-z0-9][A-Za-z0-9_.-]*)["']?[ \t]*(?:#.*)?\r?$`)

// intendedName is the runbook name a file that does not load was meant to
// define: its decoded name, else a readable top-level `name:` line, else
// the file's base name.
func intendedName(r *rawRunbook, data []byte, p string) string {
	if r != nil && r.rb.Name != "" {
		return r.rb.Name
	}
	if m := nameLine.FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return strings.TrimSuffix(path.Base(p), path.Ext(p))
}

func displayName(prefix, p string) string {
	if prefix == "" {
		return p
	}
	if p == "." {
		return prefix
	}
	return strings.TrimSuffix(prefix, "/") + "/" + p
}
