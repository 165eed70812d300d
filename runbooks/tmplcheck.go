package runbooks

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"gopkg.in/yaml.v3"
)

// templates checks the text and the string arguments of step i.
func (v *validator) templates(i int) {
	s := &v.r.rb.Steps[i]
	rs := v.r.steps[i]
	if f, ok := rs.fields["title"]; ok && s.Title != "" {
		v.checkTemplate(i, "title", f.value, false)
	}
	if f, ok := rs.fields["text"]; ok && s.Text != "" {
		v.checkTemplate(i, "text", f.value, s.Kind == runbookmodel.KindWait)
	}
	if rs.because != nil && s.Because != "" {
		v.checkTemplate(i, "because", rs.because, false)
	}
	keys := make([]string, 0, len(rs.args))
	for k := range rs.args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.checkArgTemplates(i, fmt.Sprintf("argument %q", k), rs.args[k].value)
	}
}

// checkArgTemplates checks every string scalar under an argument node.
func (v *validator) checkArgTemplates(i int, what string, n *yaml.Node) {
	n = resolve(n)
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			v.checkTemplate(i, what, n, false)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			v.checkArgTemplates(i, what, c)
		}
	case yaml.MappingNode:
		for j := 1; j < len(n.Content); j += 2 {
			v.checkArgTemplates(i, what, n.Content[j])
		}
	}
}

var tmplErrRe = regexp.MustCompile(`^template: [^:]*:(\d+):(?:\d+:)? ?(.*)$`)

// checkTemplate parses a template and checks the fields it uses.
func (v *validator) checkTemplate(i int, what string, n *yaml.Node, withResult bool) {
	src := n.Value
	if !strings.Contains(src, "{{") {
		return
	}
	where := fmt.Sprintf("%s of step %s", what, v.stepName(i))
	t, err := template.New("").Option("missingkey=error").Funcs(templateFuncs).Parse(src)
	if err != nil {
		msg := err.Error()
		line, col := n.Line, n.Column
		if m := tmplErrRe.FindStringSubmatch(msg); m != nil {
			l, _ := strconv.Atoi(m[1])
			line, col = v.srcPos(n, src, lineColToByte(src, l, 0))
			msg = m[2]
		}
		v.errorAt(line, col, "invalid template in %s: %s", where, msg)
		return
	}
	tw := tmplWalker{visit: func(path []string, pos parse.Pos) {
		line, col := v.srcPos(n, src, refStart(src, int(pos)))
		root := path[0]
		if !isTemplateRoot(root, withResult) {
			roots := slices.Clone(templateRoots)
			if withResult {
				roots = append(roots, EnvResult)
			}
			v.errorAt(line, col, "%s uses unknown field .%s%s (templates see %s)", where, root, dotHint(root, roots), "."+strings.Join(roots, ", ."))
			return
		}
		if len(path) > 1 {
			v.reference(i, where, root, path[1], line, col)
		}
	}}
	before := len(v.errs)
	for _, tree := range t.Templates() {
		if tree.Tree != nil && tree.Root != nil {
			tw.list(tree.Root, tree.Name() == "")
		}
	}
	if what == "title" && len(v.errs) == before {
		for _, ref := range resultsWithoutFallback(t) {
			line, col := v.srcPos(n, src, refStart(src, int(ref.pos)))
			v.errorAt(line, col, "%s shows .%s without a fallback; a title is shown before its step runs (the run's first message, /runbook show), "+
				"when earlier results are not there yet: give one, e.g. {{ .%s | default \"the worker\" }}", where, strings.Join(ref.path, "."), strings.Join(ref.path, "."))
		}
	}
	if what == "because" && len(v.errs) == before {
		for _, ref := range resultsWithoutFallback(t) {
			line, col := v.srcPos(n, src, refStart(src, int(ref.pos)))
			v.errorAt(line, col, "%s shows .%s without a fallback; the step it names may have been skipped too (a dry run, another branch), "+
				"so its result may not be there: give one, e.g. {{ .%s | default \"unknown\" }}", where, strings.Join(ref.path, "."), strings.Join(ref.path, "."))
		}
	}
}

// resultRef is a reference to a step result in a template.
type resultRef struct {
	path []string
	pos  parse.Pos
}

// resultsWithoutFallback returns the step results a title prints bare:
// not piped through default and not guarded by an if, with or range
// (whose else, or nothing, is shown while the result is missing).
func resultsWithoutFallback(t *template.Template) []resultRef {
	var out []resultRef
	var walk func(l *parse.ListNode)
	walk = func(l *parse.ListNode) {
		if l == nil {
			return
		}
		for _, n := range l.Nodes {
			switch n := n.(type) {
			case *parse.ActionNode:
				if !hasDefault(n.Pipe) {
					out = append(out, stepResults(n.Pipe)...)
				}
			case *parse.IfNode:
				walk(n.ElseList)
				if len(stepResults(n.Pipe)) == 0 {
					walk(n.List)
				}
			case *parse.WithNode:
				walk(n.ElseList)
				if len(stepResults(n.Pipe)) == 0 {
					walk(n.List)
				}
			case *parse.RangeNode:
				walk(n.ElseList)
			case *parse.ListNode:
				walk(n)
			}
		}
	}
	for _, tree := range t.Templates() {
		if tree.Tree != nil && tree.Root != nil && tree.Name() == "" {
			walk(tree.Root)
		}
	}
	return out
}

// stepResults returns the .steps.<id>.result… references of a pipeline.
func stepResults(p *parse.PipeNode) []resultRef {
	var out []resultRef
	tmplWalker{visit: func(path []string, pos parse.Pos) {
		if len(path) >= 3 && path[0] == EnvSteps && path[2] == "result" {
			out = append(out, resultRef{path, pos})
		}
	}}.pipe(p, true)
	return out
}

// hasDefault reports whether a pipeline calls default.
func hasDefault(p *parse.PipeNode) bool {
	if p == nil {
		return false
	}
	for _, c := range p.Cmds {
		if len(c.Args) > 0 {
			if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "default" {
				return true
			}
		}
	}
	return false
}

// refStart moves a template position back to the start of the field
// reference it is in: text/template places a chained field such as
// ".steps.x.result" at its second segment.
func refStart(src string, pos int) int {
	for pos > 0 && pos <= len(src) {
		c := src[pos-1]
		if c != '.' && c != '$' && c != '_' && !('a' <= c && c <= 'z') && !('A' <= c && c <= 'Z') && !('0' <= c && c <= '9') {
			break
		}
		pos--
	}
	return pos
}

// dotHint is didYouMean for template fields (".params").
func dotHint(word string, roots []string) string {
	if s := textmodel.Suggest(word, roots); s != "" {
		return fmt.Sprintf("; did you mean .%s?", s)
	}
	return ""
}

// tmplWalker finds the field paths a template reads from its top-level
// data (".params.x", "$.steps.y", `index .steps "y"`). Inside range and
// with, dot is something else, so plain fields there are not checked.
type tmplWalker struct {
	visit func(path []string, pos parse.Pos)
}

func (w tmplWalker) list(l *parse.ListNode, top bool) {
	if l == nil {
		return
	}
	for _, n := range l.Nodes {
		w.node(n, top)
	}
}

func (w tmplWalker) node(n parse.Node, top bool) {
	switch n := n.(type) {
	case *parse.ActionNode:
		w.pipe(n.Pipe, top)
	case *parse.IfNode:
		w.pipe(n.Pipe, top)
		w.list(n.List, top)
		w.list(n.ElseList, top)
	case *parse.RangeNode:
		w.pipe(n.Pipe, top)
		w.list(n.List, false)
		w.list(n.ElseList, top)
	case *parse.WithNode:
		w.pipe(n.Pipe, top)
		w.list(n.List, false)
		w.list(n.ElseList, top)
	case *parse.TemplateNode:
		w.pipe(n.Pipe, top)
	case *parse.ListNode:
		w.list(n, top)
	}
}

func (w tmplWalker) pipe(p *parse.PipeNode, top bool) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		w.command(c, top)
	}
}

func (w tmplWalker) command(c *parse.CommandNode, top bool) {
	// index .steps "x" "result" reads steps.x.result.
	if len(c.Args) >= 3 {
		if id, ok := c.Args[0].(*parse.IdentifierNode); ok && id.Ident == "index" {
			if path, pos, ok := fieldPath(c.Args[1], top); ok {
				for _, a := range c.Args[2:] {
					s, ok := a.(*parse.StringNode)
					if !ok {
						break
					}
					path = append(path, s.Text)
				}
				w.visit(path, pos)
				for _, a := range c.Args[2:] {
					w.arg(a, top)
				}
				return
			}
		}
	}
	for _, a := range c.Args {
		w.arg(a, top)
	}
}

func (w tmplWalker) arg(a parse.Node, top bool) {
	if path, pos, ok := fieldPath(a, top); ok {
		w.visit(path, pos)
		return
	}
	switch a := a.(type) {
	case *parse.PipeNode:
		w.pipe(a, top)
	case *parse.ChainNode:
		w.arg(a.Node, top)
	}
}

// fieldPath returns the top-level path of a field node: .a.b or $.a.b.
func fieldPath(n parse.Node, top bool) ([]string, parse.Pos, bool) {
	switch n := n.(type) {
	case *parse.FieldNode:
		if top {
			return slices.Clone(n.Ident), n.Pos, true
		}
	case *parse.VariableNode:
		if len(n.Ident) > 1 && n.Ident[0] == "$" {
			return slices.Clone(n.Ident[1:]), n.Pos, true
		}
	case *parse.ChainNode:
		// (.steps).x is rare; only plain pipes are followed.
	}
	return nil, 0, false
}
