package runbooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"gopkg.in/yaml.v3"
)

// Field names, as written in YAML.
var (
	runbookFields  = []string{"name", "title", "description", "tags", "params", "steps", "follow_up"}
	paramFields    = []string{"name", "description", "required", "default", "pattern", "enum", "max_length", "allow", "choices"}
	stepFields     = []string{"id", "kind", "title", "when", "op", "args", "text", "approval", "until", "timeout", "interval", "on_timeout", "goto", "on_failure"}
	approvalFields = []string{"approvers", "required", "expires"}
	whenFields     = []string{"if", "because"}
)

// field is one key/value pair of a YAML mapping.
type field struct{ key, value *yaml.Node }

// fields are the known fields of a mapping, by name.
type fields map[string]field

// has reports whether the field was written.
func (f fields) has(name string) bool { _, ok := f[name]; return ok }

// rawRunbook is a decoded runbook together with the YAML nodes the
// validator needs to place its errors.
type rawRunbook struct {
	rb     runbookmodel.Runbook
	warns  ErrorList
	root   *yaml.Node
	fields fields
	params []*rawParam
	steps  []*rawStep
}

type rawParam struct {
	node   *yaml.Node
	fields fields
}

type rawStep struct {
	node   *yaml.Node
	fields fields
	// args are the key/value nodes of args, by argument name.
	args fields
	// approval are the fields of the approval mapping.
	approval fields
	// when is the node of the when expression (the `if` of the mapping
	// form), because the node of its text (nil when not written).
	when, because *yaml.Node
}

// decoder turns YAML nodes into a rawRunbook, collecting errors.
type decoder struct {
	file string
	data []byte
	errs ErrorList
	// warns are the problems that do not stop the runbook from loading
	// (lint reports them).
	warns ErrorList
	// typos remembers, per mapping node, the known field names that an
	// unknown field was probably meant to be, so "no op" is not reported
	// on top of "unknown field opp; did you mean op?".
	typos map[*yaml.Node]map[string]bool
}

// misspelled reports whether mapping n has an unknown field that looks
// like a misspelling of name.
func (d *decoder) misspelled(n *yaml.Node, name string) bool {
	return d.typos[resolve(n)][name]
}

// errorf records an error at n (at the top of the file when n is nil).
func (d *decoder) errorf(n *yaml.Node, format string, a ...any) {
	e := &Error{File: d.file, Msg: fmt.Sprintf(format, a...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// warnf records a warning at n: lint reports it, the runbook still loads.
func (d *decoder) warnf(n *yaml.Node, format string, a ...any) {
	e := &Error{File: d.file, Msg: fmt.Sprintf(format, a...), Warning: true}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.warns = append(d.warns, e)
}

// errorAt records an error at an explicit position.
func (d *decoder) errorAt(line, col int, format string, a ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Column: col, Msg: fmt.Sprintf(format, a...)})
}

var yamlLineErr = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data into its single YAML document.
func (d *decoder) document() *yaml.Node {
	dec := yaml.NewDecoder(bytes.NewReader(d.data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.errorAt(1, 1, "file is empty; a runbook needs at least name and steps")
			return nil
		}
		d.yamlError(err)
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		d.errorf(&extra, "a file holds one runbook; found a second YAML document (---)")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	return root
}

// yamlError turns a yaml.v3 syntax error into Errors. yaml.v3 reports
// the line of the enclosing block rather than of the problem, so the
// problem line is found by parsing growing prefixes of the file.
func (d *decoder) yamlError(err error) {
	for _, msg := range strings.Split(err.Error(), "\n") {
		msg = strings.TrimSpace(msg)
		if msg == "" || msg == "yaml: unmarshal errors:" {
			continue
		}
		m := yamlLineErr.FindStringSubmatch(msg)
		if m == nil {
			d.errorAt(0, 0, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
			continue
		}
		line, _ := strconv.Atoi(m[1])
		if p := problemLine(d.data); p > line {
			d.errorAt(p, 0, "invalid YAML: %s (in the block that starts at line %d)", m[2], line)
			continue
		}
		d.errorAt(line, 0, "invalid YAML: %s", m[2])
	}
}

// maxProblemSearch bounds the prefix search of problemLine.
const maxProblemSearch = 2000

// problemLine returns the first line n such that the first n lines of data
// do not parse, or 0.
func problemLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var prefix []byte
	for i, l := range lines {
		if i >= maxProblemSearch {
			break
		}
		prefix = append(prefix, l...)
		var n yaml.Node
		dec := yaml.NewDecoder(bytes.NewReader(prefix))
		for {
			err := dec.Decode(&n)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return i + 1
			}
		}
	}
	return 0
}

// resolve follows aliases (*anchor) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapping returns the fields of mapping node n that are in known. Unknown
// and repeated keys are reported; where says whose field it is
// (` in step "prune"`).
func (d *decoder) mapping(n *yaml.Node, known []string, where func() string) fields {
	out := fields{}
	n = resolve(n)
	if n == nil {
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "field names must be plain words%s", where())
			continue
		}
		if k.Value == "<<" {
			d.errorf(k, "YAML merge keys (<<) are not supported%s; repeat the fields instead", where())
			continue
		}
		if prev, dup := out[k.Value]; dup {
			d.errorf(k, "field %q given twice%s (first at line %d)", k.Value, where(), prev.key.Line)
			continue
		}
		if !slices.Contains(known, k.Value) {
			d.errorf(k, "unknown field %q%s%s", k.Value, where(), didYouMean(k.Value, known))
			if s := textmodel.Suggest(k.Value, known); s != "" {
				if d.typos == nil {
					d.typos = map[*yaml.Node]map[string]bool{}
				}
				if d.typos[n] == nil {
					d.typos[n] = map[string]bool{}
				}
				d.typos[n][s] = true
			}
			continue
		}
		out[k.Value] = field{k, v}
	}
	return out
}

// isMapping reports whether n is a mapping, reporting an error if not.
func (d *decoder) isMapping(n *yaml.Node, what string) bool {
	n = resolve(n)
	if n.Kind == yaml.MappingNode {
		return true
	}
	d.errorf(n, "%s must be a mapping (key: value lines), not %s", what, nodeKind(n))
	return false
}

// str returns a scalar field as a string ("" when absent or null).
func (d *decoder) str(f fields, name string) string {
	fl, ok := f[name]
	if !ok {
		return ""
	}
	v := fl.value
	if unquotedTemplate(v) {
		d.errorf(v, "%s: %s", name, quoteTemplates)
		return ""
	}
	if v.Kind != yaml.ScalarNode {
		d.errorf(v, "%s must be a single value, not %s", name, nodeKind(v))
		return ""
	}
	if v.Tag == "!!null" {
		return ""
	}
	return v.Value
}

// strList returns a list-of-strings field.
func (d *decoder) strList(f fields, name string) []string {
	fl, ok := f[name]
	if !ok {
		return nil
	}
	v := fl.value
	if v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.SequenceNode {
		d.errorf(v, "%s must be a list ([a, b] or lines starting with -), not %s", name, nodeKind(v))
		return nil
	}
	out := make([]string, 0, len(v.Content))
	for _, item := range v.Content {
		item = resolve(item)
		if item.Kind != yaml.ScalarNode {
			d.errorf(item, "%s: items must be single values, not %s", name, nodeKind(item))
			continue
		}
		out = append(out, item.Value)
	}
	return out
}

// boolean returns a true/false field.
func (d *decoder) boolean(f fields, name string) bool {
	fl, ok := f[name]
	if !ok {
		return false
	}
	var b bool
	if fl.value.Kind != yaml.ScalarNode || fl.value.Decode(&b) != nil {
		d.errorf(fl.value, "%s must be true or false, not %s", name, nodeValue(fl.value))
	}
	return b
}

// integer returns a whole-number field.
func (d *decoder) integer(f fields, name string) int {
	fl, ok := f[name]
	if !ok {
		return 0
	}
	var n int
	if fl.value.Kind != yaml.ScalarNode || fl.value.Decode(&n) != nil {
		d.errorf(fl.value, "%s must be a whole number, not %s", name, nodeValue(fl.value))
	}
	return n
}

// duration returns a duration field ("30s", "20m", "1h30m", "2d").
func (d *decoder) duration(f fields, name string) time.Duration {
	fl, ok := f[name]
	if !ok {
		return 0
	}
	v := fl.value
	if v.Kind != yaml.ScalarNode {
		d.errorf(v, "%s must be a duration such as 30s, 20m or 1h, not %s", name, nodeKind(v))
		return 0
	}
	dur, err := parseDuration(v.Value)
	if err != nil {
		d.errorf(v, "%s: %v", name, err)
		return 0
	}
	return dur
}

// parseDuration parses Go durations plus whole days ("2d").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration; write e.g. 30s, 20m or 1h")
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return 0, fmt.Errorf("%q has no unit; write e.g. %ss, %sm or %sh", s, s, s, s)
	}
	var dur time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration; write e.g. 30s, 20m, 1h or 2d", s)
		}
		dur = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		dur, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration; write e.g. 30s, 20m, 1h or 2d", s)
		}
	}
	if dur <= 0 {
		return 0, fmt.Errorf("%q must be longer than zero", s)
	}
	return dur, nil
}

// quoteTemplates is the advice for an unquoted template.
const quoteTemplates = `put templates in quotes: "{{ .params.worker }}" (unquoted, YAML reads {{ … }} as a mapping)`

// unquotedTemplate reports whether n is what YAML makes of an unquoted
// `{{ .x }}`: a flow mapping whose only key is another flow mapping.
func unquotedTemplate(n *yaml.Node) bool {
	n = resolve(n)
	return n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle != 0 &&
		len(n.Content) == 2 && n.Content[0].Kind == yaml.MappingNode
}

// findUnquotedTemplate returns the first unquoted template under n, or nil.
func findUnquotedTemplate(n *yaml.Node) *yaml.Node {
	n = resolve(n)
	if unquotedTemplate(n) {
		return n
	}
	for _, c := range n.Content {
		if found := findUnquotedTemplate(c); found != nil {
			return found
		}
	}
	return nil
}

// nodeKind names a node's shape for error messages.
func nodeKind(n *yaml.Node) string {
	switch resolve(n).Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// nodeValue shows a node's value for error messages.
func nodeValue(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", n.Value)
	}
	return nodeKind(n)
}
