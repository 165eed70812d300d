package runbooks

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"gopkg.in/yaml.v3"
)

// checkEnv and checkEnvWait are the typed environments expressions are
// checked against at load time: they catch unknown names (`param.x`),
// comparisons of a string param with a number, and non-bool results
// before a run starts. Step results and `result` are typed `any`, since
// their shape depends on the operation.
type checkEnv struct {
	Params    map[string]string         `expr:"params"`
	Vars      map[string]string         `expr:"vars"`
	Target    string                    `expr:"target"`
	FlyTarget string                    `expr:"fly_target"`
	Steps     map[string]map[string]any `expr:"steps"`
	Run       map[string]any            `expr:"run"`
}

type checkEnvWait struct {
	checkEnv
	Result any `expr:"result"`
}

// exprEnv returns the load-time environment for an expression.
func exprEnv(withResult bool) any {
	if withResult {
		return checkEnvWait{}
	}
	return checkEnv{}
}

// expressions checks when and until of step i.
func (v *validator) expressions(i int) {
	s := &v.r.rb.Steps[i]
	rs := v.r.steps[i]
	if rs.when != nil && s.When != "" {
		v.checkExpr(i, "when", rs.when, false)
	}
	if f, ok := rs.fields["until"]; ok && s.Until != "" && s.Kind == runbookmodel.KindWait {
		v.checkExpr(i, "until", f.value, true)
	}
}

// checkExpr parses an expression, checks its step and param references,
// and type-checks it against exprEnv.
func (v *validator) checkExpr(i int, what string, n *yaml.Node, withResult bool) {
	src := n.Value
	where := fmt.Sprintf("%s of step %s", what, v.stepName(i))
	tree, err := parser.Parse(src)
	if err != nil {
		v.exprError(n, src, where, err)
		return
	}
	before := len(v.errs)
	ast.Walk(&tree.Node, visitorFunc(func(node *ast.Node) {
		m, ok := (*node).(*ast.MemberNode)
		if !ok {
			return
		}
		root, ok := m.Node.(*ast.IdentifierNode)
		if !ok {
			return
		}
		prop, ok := m.Property.(*ast.StringNode)
		if !ok {
			return
		}
		line, col := v.srcPos(n, src, runeToByte(src, root.Location().From))
		v.reference(i, where, root.Value, prop.Value, line, col)
	}))
	if len(v.errs) > before {
		return // the type check would only repeat the problem
	}
	_, err = expr.Compile(src, expr.Env(exprEnv(withResult)), expr.AsBool())
	if err != nil {
		v.exprError(n, src, where, err)
	}
}

// exprError reports an expr parse or type error at its place in the file.
func (v *validator) exprError(n *yaml.Node, src, where string, err error) {
	var fe *file.Error
	if !errors.As(err, &fe) {
		v.errorf(n, "invalid %s: %s", where, exprHint(err.Error(), where))
		return
	}
	line, col := v.srcPos(n, src, lineColToByte(src, fe.Line, fe.Column))
	v.errorAt(line, col, "invalid %s: %s", where, exprHint(fe.Message, where))
}

// exprHint adds advice to expr's messages for the common mistakes.
func exprHint(msg, where string) string {
	if strings.HasPrefix(msg, "expected bool") {
		msg += "; " + what(where) + " must be true or false, e.g. params.worker != \"\""
	}
	if name, ok := strings.CutPrefix(msg, "unknown name "); ok {
		msg += didYouMean(name, []string{EnvParams, EnvVars, EnvTarget, EnvFlyTarget, EnvSteps, EnvRun, EnvResult}) +
			" (expressions see params, vars, target, fly_target, steps, run, and result in until)"
	}
	if strings.Contains(msg, "mismatched types string and") {
		msg += "; params and vars are strings, convert them first: int(params.limit) > 3"
	}
	return msg
}

// what returns the field name at the start of a "when of step x" label.
func what(where string) string {
	name, _, _ := strings.Cut(where, " ")
	return name
}

// reference checks one `root.name` reference (steps.x or params.x) made by
// step i. line and col locate it in the file.
func (v *validator) reference(i int, where, root, name string, line, col int) {
	switch root {
	case EnvSteps:
		j, ok := v.stepIndex[name]
		switch {
		case !ok:
			v.errorAt(line, col, "%s refers to unknown step %q%s", where, name, didYouMean(name, v.stepIDs))
		case j == i:
			v.errorAt(line, col, "%s refers to its own step %q; only earlier steps have results", where, name)
		case j > i:
			v.errorAt(line, col, "%s refers to step %q, which comes later (line %d); only earlier steps have results", where, name, v.r.rb.Steps[j].Line)
		}
	case EnvParams:
		if !v.params[name] {
			declared := "the runbook declares no params"
			if len(v.paramList) > 0 {
				declared = "params: " + strings.Join(v.paramList, ", ")
			}
			hint := didYouMean(name, v.paramList)
			if name == EnvTarget {
				hint = "; the target is not a param, use target"
			}
			v.errorAt(line, col, "%s uses undeclared param %q%s (%s)", where, name, hint, declared)
		}
	}
}

// visitorFunc adapts a function to ast.Visitor.
type visitorFunc func(node *ast.Node)

func (f visitorFunc) Visit(node *ast.Node) { f(node) }

// srcPos maps a byte offset inside the value of scalar n to a file line
// and column. It is exact for single-line plain and quoted scalars and for
// literal blocks (|); other styles report the scalar's own position.
func (v *validator) srcPos(n *yaml.Node, src string, off int) (int, int) {
	off = min(max(off, 0), len(src))
	line := strings.Count(src[:off], "\n") + 1
	lineStart := strings.LastIndexByte(src[:off], '\n') + 1
	col := utf8.RuneCountInString(src[lineStart:off])
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		fileLine := n.Line + line
		srcLine := src[lineStart:]
		if k := strings.IndexByte(srcLine, '\n'); k >= 0 {
			srcLine = srcLine[:k]
		}
		text := v.line(fileLine)
		if srcLine == "" || !strings.HasSuffix(text, srcLine) {
			return n.Line, n.Column
		}
		indent := utf8.RuneCountInString(text) - utf8.RuneCountInString(srcLine)
		return fileLine, indent + col + 1
	case strings.Contains(src, "\n"), n.Style&yaml.FoldedStyle != 0:
		return n.Line, n.Column
	}
	// A single-line scalar: exact only when the text before the offset is
	// written as is on the scalar's first line (no escapes, no folding).
	start := n.Column
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		start++
	}
	text := []rune(v.line(n.Line))
	if start-1 > len(text) || !strings.HasPrefix(string(text[start-1:]), src[:off]) {
		return n.Line, n.Column
	}
	return n.Line, start + col
}

// line returns line n (1-based) of the file being decoded, without its newline.
func (d *decoder) line(n int) string {
	data := string(d.data)
	for i := 1; i < n; i++ {
		k := strings.IndexByte(data, '\n')
		if k < 0 {
			return ""
		}
		data = data[k+1:]
	}
	if k := strings.IndexByte(data, '\n'); k >= 0 {
		data = data[:k]
	}
	return strings.TrimSuffix(data, "\r")
}

// runeToByte converts a rune offset in s to a byte offset.
func runeToByte(s string, runes int) int {
	for i := range s {
		if runes == 0 {
			return i
		}
		runes--
	}
	return len(s)
}

// lineColToByte converts a 1-based line and 0-based rune column in s to a
// byte offset.
func lineColToByte(s string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		k := strings.IndexByte(s[off:], '\n')
		if k < 0 {
			return len(s)
		}
		off += k + 1
	}
	rest := s[off:]
	if k := strings.IndexByte(rest, '\n'); k >= 0 {
		rest = rest[:k]
	}
	return off + runeToByte(rest, col)
}

// templateRoots are the top-level fields templates may use.
var templateRoots = []string{EnvParams, EnvVars, EnvTarget, EnvFlyTarget, EnvSteps, EnvRun}

// isTemplateRoot reports whether name may start a template field path.
func isTemplateRoot(name string, withResult bool) bool {
	return slices.Contains(templateRoots, name) || (withResult && name == EnvResult)
}
