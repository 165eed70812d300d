package runbooks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"gopkg.in/yaml.v3"
)

// runbook decodes the document root into a rawRunbook. Shape errors
// (unknown fields, wrong types) are recorded; semantic checks are left to
// the validator.
func (d *decoder) runbook(root *yaml.Node) *rawRunbook {
	r := &rawRunbook{root: root}
	if !d.isMapping(root, "a runbook") {
		return nil
	}
	r.fields = d.mapping(root, runbookFields, func() string { return "" })
	r.rb = runbookmodel.Runbook{
		Name:        d.str(r.fields, "name"),
		Title:       d.str(r.fields, "title"),
		Description: d.str(r.fields, "description"),
		Tags:        d.strList(r.fields, "tags"),
		FollowUp:    d.strList(r.fields, "follow_up"),
		Source:      d.file,
	}
	if f, ok := r.fields["params"]; ok {
		d.params(r, f.value)
	}
	if f, ok := r.fields["steps"]; ok {
		d.steps(r, f.value)
	}
	return r
}

func (d *decoder) params(r *rawRunbook, n *yaml.Node) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "params must be a list of parameters (lines starting with -), not %s", nodeKind(n))
		return
	}
	for i, item := range n.Content {
		item = resolve(item)
		if !d.isMapping(item, fmt.Sprintf("param %d", i+1)) {
			continue
		}
		name := peekScalar(item, "name")
		where := func() string {
			if name != "" {
				return fmt.Sprintf(" in param %q", name)
			}
			return fmt.Sprintf(" in param %d", i+1)
		}
		f := d.mapping(item, paramFields, where)
		r.rb.Params = append(r.rb.Params, runbookmodel.Param{
			Name:        d.str(f, "name"),
			Description: d.str(f, "description"),
			Required:    d.boolean(f, "required"),
			Default:     d.str(f, "default"),
			Pattern:     d.str(f, "pattern"),
			Enum:        d.strList(f, "enum"),
			MaxLength:   d.integer(f, "max_length"),
			Allow:       d.strList(f, "allow"),
			Choices:     d.str(f, "choices"),
		})
		p := r.rb.Params[len(r.rb.Params)-1]
		if fl, ok := f["choices"]; ok && !slices.Contains([]string{runbookmodel.ChoicesWorkers, runbookmodel.ChoicesPipelines, runbookmodel.ChoicesTeams}, p.Choices) {
			d.errorf(fl.value, "choices must be %s, %s or %s, not %s", runbookmodel.ChoicesWorkers, runbookmodel.ChoicesPipelines, runbookmodel.ChoicesTeams, nodeValue(fl.value))
		}
		if fl, ok := f["max_length"]; ok && (p.MaxLength < 1 || p.MaxLength > MaxParamLengthLimit) {
			d.errorf(fl.value, "max_length must be between 1 and %d characters, not %s", MaxParamLengthLimit, nodeValue(fl.value))
		}
		if fl, ok := f["allow"]; ok {
			for i, a := range p.Allow {
				if !slices.Contains(textmodel.CharClasses, a) {
					n := fl.value
					if i < len(fl.value.Content) {
						n = fl.value.Content[i]
					}
					d.errorf(n, "allow: unknown character class %q%s; classes: %s", a, didYouMean(a, textmodel.CharClasses), strings.Join(textmodel.CharClasses, ", "))
				}
			}
		}
		if fl, ok := f["default"]; ok && p.Default != "" {
			if err := CheckValue(p, p.Default); err != nil {
				d.errorf(fl.value, "default: %v", err)
			}
		}
		r.params = append(r.params, &rawParam{node: item, fields: f})
	}
}

func (d *decoder) steps(r *rawRunbook, n *yaml.Node) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "steps must be a list of steps (lines starting with -), not %s", nodeKind(n))
		return
	}
	for i, item := range n.Content {
		item = resolve(item)
		if !d.isMapping(item, fmt.Sprintf("step %d", i+1)) {
			continue
		}
		// Peek at the id so every message about this step can name it.
		id := peekScalar(item, "id")
		where := func() string {
			if id != "" {
				return fmt.Sprintf(" in step %q", id)
			}
			return fmt.Sprintf(" in step %d", i+1)
		}
		f := d.mapping(item, stepFields, where)
		s := runbookmodel.Step{
			ID:        d.str(f, "id"),
			Kind:      runbookmodel.Kind(d.str(f, "kind")),
			Title:     d.str(f, "title"),
			Op:        d.str(f, "op"),
			Text:      d.str(f, "text"),
			Until:     d.str(f, "until"),
			Timeout:   d.duration(f, "timeout"),
			Interval:  d.duration(f, "interval"),
			OnTimeout: d.str(f, "on_timeout"),
			Goto:      d.str(f, "goto"),
			OnFailure: d.str(f, "on_failure"),
			Line:      item.Line,
			Column:    item.Column,
		}
		rs := &rawStep{node: item, fields: f}
		if w, ok := f["when"]; ok {
			s.When, s.Because, rs.when, rs.because = d.when(w.value, where)
		}
		if a, ok := f["args"]; ok {
			s.Args, rs.args = d.args(a.value, where)
		}
		if a, ok := f["approval"]; ok {
			s.Approval, rs.approval = d.approval(a.value, where)
		}
		r.rb.Steps = append(r.rb.Steps, s)
		r.steps = append(r.steps, rs)
	}
}

// peekScalar returns the value of key in mapping n without reporting anything.
func peekScalar(n *yaml.Node, key string) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			if v := resolve(n.Content[i+1]); v.Kind == yaml.ScalarNode {
				return v.Value
			}
		}
	}
	return ""
}

// args decodes an args mapping into plain Go values (string, int, float64,
// bool, nil, []any, map[string]any) and keeps the nodes of each argument.
func (d *decoder) args(n *yaml.Node, where func() string) (map[string]any, fields) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if !d.isMapping(n, "args"+where()) {
		return nil, nil
	}
	args := map[string]any{}
	nodes := fields{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "argument names must be plain words%s", where())
			continue
		}
		if prev, dup := nodes[k.Value]; dup {
			d.errorf(k, "argument %q given twice%s (first at line %d)", k.Value, where(), prev.key.Line)
			continue
		}
		nodes[k.Value] = field{k, resolve(v)}
		if t := findUnquotedTemplate(v); t != nil {
			d.errorf(t, "argument %q%s: %s", k.Value, where(), quoteTemplates)
			args[k.Value] = nil
			continue
		}
		var val any
		if err := v.Decode(&val); err != nil {
			d.errorf(v, "argument %q%s: %v", k.Value, where(), err)
			args[k.Value] = nil
			continue
		}
		args[k.Value] = normalize(val)
	}
	return args, nodes
}

// normalize turns map[any]any (non-string YAML keys) into map[string]any
// so templates and JSON see one shape.
func normalize(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalize(e)
		}
		return t
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		for i, e := range t {
			t[i] = normalize(e)
		}
		return t
	}
	return v
}

func (d *decoder) approval(n *yaml.Node, where func() string) (*runbookmodel.Approval, fields) {
	n = resolve(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return &runbookmodel.Approval{}, fields{}
	}
	if !d.isMapping(n, "approval"+where()) {
		return nil, nil
	}
	aw := func() string { return " in the approval" + strings.Replace(where(), " in ", " of ", 1) }
	f := d.mapping(n, approvalFields, aw)
	return &runbookmodel.Approval{
		Approvers: d.strList(f, "approvers"),
		Required:  d.integer(f, "required"),
		Expires:   d.duration(f, "expires"),
	}, f
}

// when decodes a step's condition: an expression, or a mapping with the
// expression (`if`) and the words a person reads when the step is skipped
// (`because`). It returns them with their nodes (nil when not written).
func (d *decoder) when(n *yaml.Node, where func() string) (expr, because string, exprNode, becauseNode *yaml.Node) {
	n = resolve(n)
	of := strings.Replace(where(), " in ", " of ", 1)
	if n.Kind == yaml.SequenceNode {
		d.errorf(n, "when%s must be an expression or {if: <expression>, because: <why it is skipped>}, not a list", of)
		return "", "", nil, nil
	}
	if n.Kind != yaml.MappingNode || unquotedTemplate(n) {
		f := fields{"when": field{value: n}}
		return d.str(f, "when"), "", n, nil
	}
	f := d.mapping(n, whenFields, func() string { return " in the when" + of })
	if fl, ok := f["if"]; ok {
		exprNode = fl.value
		expr = d.str(f, "if")
	} else if !d.misspelled(n, "if") {
		d.errorf(n, "when%s has no if; write the condition as when: {if: <expression>, because: <why it is skipped>}", of)
	}
	if fl, ok := f["because"]; ok {
		becauseNode = fl.value
		because = strings.TrimSpace(d.str(f, "because"))
	}
	return expr, because, exprNode, becauseNode
}
