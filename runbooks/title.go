package runbooks

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"

	"github.com/groundcrew/groundcrew/model/textmodel"
)

// Step titles are rendered when their step starts, against the run's state
// at that moment: params, vars, target, run, and the results of the steps
// before it. Before that — the run's first message, a dry run's plan,
// `/runbook show` — a result is not there yet and the title shows its
// fallback: `{{ .steps.worker.result.name | default "the worker" }}` reads
// "the worker" until the worker step has run. Load-time validation
// requires that fallback (checkTitleFallbacks).

// noValue is what text/template prints for a missing value.
const noValue = "<no value>"

// templateAction matches one {{ … }} action.
var templateAction = regexp.MustCompile(`\{\{-?\s*(.*?)\s*-?\}\}`)

// RenderTitle renders a step title (or any one-line label) for people: it
// never fails and never shows "<no value>". A step result that is not
// there yet is empty, so `default` gives the title's fallback; a title that
// still cannot be rendered shows "…" in place of each of its {{ }}.
//
// What a title prints from outside — a parameter someone typed, a name
// Concourse gave — reads as itself in chat: a value with Markdown in it
// (`pipeline=.*`) is shown as a code span (textmodel.Literal), unless the
// author put it in one already.
func RenderTitle(text string, env Env) string {
	if !strings.Contains(text, "{{") {
		return text
	}
	if t, err := titleTemplate(text, false); err == nil {
		var b strings.Builder
		if err := t.Execute(&b, map[string]any(withMissingVars(text, env))); err == nil {
			if out := b.String(); !strings.Contains(out, noValue) && !strings.Contains(out, missingVarMark) {
				return oneLine(out)
			}
		}
	}
	if out, ok := renderLenient(text, env); ok {
		return oneLine(out)
	}
	return oneLine(templateAction.ReplaceAllString(text, "…"))
}

// titleTemplates caches parsed titles, strict and lenient.
var titleTemplates sync.Map // titleKey -> *template.Template

type titleKey struct {
	text    string
	lenient bool
}

// literalFunc is the function every printing action of a title ends with.
const literalFunc = "literal"

// titleTemplate parses a title and makes each action that prints a value
// end with `| literal`, except inside a code span the title's own text
// opens (`{{ .params.worker }}` between backticks stays as it is).
func titleTemplate(text string, lenient bool) (*template.Template, error) {
	key := titleKey{text, lenient}
	if t, ok := titleTemplates.Load(key); ok {
		return t.(*template.Template), nil
	}
	t := template.New("").Funcs(templateFuncs).Funcs(template.FuncMap{literalFunc: literal})
	if lenient {
		t = t.Option("missingkey=zero").Funcs(lenientFuncs)
	} else {
		t = t.Option("missingkey=error")
	}
	t, err := t.Parse(text)
	if err != nil {
		return nil, err
	}
	inCode := false
	markLiterals(t.Tree, t.Tree.Root, &inCode)
	titleTemplates.Store(key, t)
	return t, nil
}

// literal is textmodel.Literal for any printed value; a missing one
// prints as text/template prints it, which RenderTitle looks for.
func literal(v any) string {
	if v == nil {
		return noValue
	}
	return textmodel.Literal(fmt.Sprint(v))
}

// markLiterals walks a title's nodes in order, tracking whether the text
// so far has opened a code span.
func markLiterals(tree *parse.Tree, list *parse.ListNode, inCode *bool) {
	if list == nil {
		return
	}
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			if strings.Count(string(n.Text), "`")%2 == 1 {
				*inCode = !*inCode
			}
		case *parse.ActionNode:
			if len(n.Pipe.Decl) == 0 && !*inCode {
				id := parse.NewIdentifier(literalFunc).SetTree(tree).SetPos(n.Pos)
				n.Pipe.Cmds = append(n.Pipe.Cmds, &parse.CommandNode{NodeType: parse.NodeCommand, Pos: n.Pos, Args: []parse.Node{id}})
			}
		case *parse.IfNode:
			markBranch(tree, &n.BranchNode, inCode)
		case *parse.WithNode:
			markBranch(tree, &n.BranchNode, inCode)
		case *parse.RangeNode:
			markBranch(tree, &n.BranchNode, inCode)
		}
	}
}

func markBranch(tree *parse.Tree, b *parse.BranchNode, inCode *bool) {
	other := *inCode
	markLiterals(tree, b.List, inCode)
	markLiterals(tree, b.ElseList, &other)
}

// renderLenient renders text with missing map keys read as nil and the
// results of steps that have none yet read as empty maps.
func renderLenient(text string, env Env) (string, bool) {
	t, err := titleTemplate(text, true)
	if err != nil {
		return "", false
	}
	data := make(map[string]any, len(env))
	for k, v := range env {
		data[k] = v
	}
	if steps, ok := env[EnvSteps].(map[string]any); ok {
		pending := make(map[string]any, len(steps))
		for id, s := range steps {
			st, ok := s.(map[string]any)
			if !ok || st["result"] != nil {
				pending[id] = s
				continue
			}
			cp := make(map[string]any, len(st)+1)
			for k, v := range st {
				cp[k] = v
			}
			cp["result"] = map[string]any{}
			pending[id] = cp
		}
		data[EnvSteps] = pending
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", false
	}
	out := b.String()
	if strings.Contains(out, noValue) {
		return "", false
	}
	return out, true
}

// oneLine joins the lines of a rendered title and trims it.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// lenientFuncs replace the functions that fail on a value not there yet.
var lenientFuncs = template.FuncMap{"index": lenientIndex}

// lenientIndex is index that gives nil for a nil collection, a missing key
// or an index out of range: {{ (index .steps.p.result.by_pipeline 0).pipeline | default "the pipeline" }}.
func lenientIndex(item any, keys ...any) any {
	v := reflect.ValueOf(item)
	for _, k := range keys {
		for v.IsValid() && v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		if !v.IsValid() {
			return nil
		}
		switch v.Kind() {
		case reflect.Map:
			kv := reflect.ValueOf(k)
			if !kv.IsValid() || !kv.Type().AssignableTo(v.Type().Key()) {
				return nil
			}
			v = v.MapIndex(kv)
		case reflect.Slice, reflect.Array, reflect.String:
			i, ok := toInt(k)
			if !ok || i < 0 || i >= v.Len() {
				return nil
			}
			v = v.Index(i)
		default:
			return nil
		}
	}
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

func toInt(k any) (int, bool) {
	switch t := k.(type) {
	case int:
		return t, true
	case int64:
		return int(t), true
	case float64:
		return int(t), t == float64(int(t))
	}
	return 0, false
}
