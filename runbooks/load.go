package runbooks

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Parse decodes and validates one runbook. file names it in errors and in
// Runbook.Source. cat says which operations exist; a nil cat skips the
// operation checks (format-only validation). On failure the error is an
// ErrorList with every problem found, sorted by position.
func Parse(file string, data []byte, cat Catalog) (*Runbook, error) {
	r, errs := parseRaw(file, data, cat)
	if len(errs) > 0 {
		return nil, errs
	}
	return &r.rb, nil
}

// parseRaw is Parse returning the YAML nodes too.
func parseRaw(file string, data []byte, cat Catalog) (*rawRunbook, ErrorList) {
	d := &decoder{file: file, data: data}
	root := d.document()
	if root == nil {
		return nil, d.errs
	}
	r := d.runbook(root)
	if r != nil {
		v := &validator{decoder: d, cat: cat, r: r}
		v.validate()
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
func LoadFS(fsys fs.FS, cat Catalog) ([]*Runbook, error) {
	return loadFS(fsys, "", cat)
}

// LoadSource is LoadFS with the source's name joined to the file names in
// errors and in Runbook.Source ("/etc/groundcrew/runbooks/prune.yaml").
func LoadSource(src Source, cat Catalog) ([]*Runbook, error) {
	return loadFS(src.FS, src.Name, cat)
}

// loadFS is LoadFS with prefix joined to the file names it reports.
func loadFS(fsys fs.FS, prefix string, cat Catalog) ([]*Runbook, error) {
	var (
		out  []*Runbook
		errs ErrorList
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
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			errs = append(errs, &Error{File: name, Msg: fmt.Sprintf("reading: %v", err)})
			return nil
		}
		r, perrs := parseRaw(name, data, cat)
		if len(perrs) > 0 {
			errs = append(errs, perrs...)
			return nil
		}
		if first, dup := seen[r.rb.Name]; dup {
			line, col := r.namePos()
			errs = append(errs, &Error{File: name, Line: line, Column: col,
				Msg: fmt.Sprintf("runbook %q is already defined in %s", r.rb.Name, first)})
			return nil
		}
		seen[r.rb.Name] = name
		rb := r.rb
		out = append(out, &rb)
		return nil
	})
	if err != nil {
		errs = append(errs, &Error{File: prefix, Msg: fmt.Sprintf("reading: %v", err)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errs.Err()
}

// Lint validates every runbook file under fsys and returns all problems
// (nil when there are none). It backs `groundcrew lint <dir>`.
func Lint(fsys fs.FS, cat Catalog) ErrorList {
	_, err := LoadFS(fsys, cat)
	return errorsOf("", err)
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
