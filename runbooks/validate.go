package runbooks

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"gopkg.in/yaml.v3"
)

var (
	runbookNameRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	identRe       = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
)

// kinds lists the step kinds in documentation order.
var kinds = []runbookmodel.Kind{runbookmodel.KindQuery, runbookmodel.KindAction, runbookmodel.KindApproval, runbookmodel.KindManual, runbookmodel.KindWait}

// classRead is the class of operations that change nothing, as the
// Catalog reports it.
const classRead = "read"

// OpNamer is optionally implemented by a Catalog. When it is, an unknown
// operation gets a "did you mean" hint from the catalog's names.
type OpNamer interface{ Names() []string }

// validator checks a decoded runbook and records errors in its decoder.
type validator struct {
	*decoder
	cat Catalog
	r   *rawRunbook
	// stepIndex maps a step id to the index of its first occurrence.
	stepIndex map[string]int
	stepIDs   []string
	params    map[string]bool
	paramList []string
	// badTarget is set when a goto/on_failure/on_timeout names no step;
	// the reachability check would then only add noise.
	badTarget bool
}

func (v *validator) validate() {
	v.stepIndex = map[string]int{}
	v.params = map[string]bool{}
	v.header()
	v.paramDecls()
	v.stepIDsAndKinds()
	for i := range v.r.steps {
		v.step(i)
	}
	v.flow()
}

func (v *validator) header() {
	r := v.r
	if f, ok := r.fields["name"]; (!ok && !v.misspelled(r.root, "name")) || (ok && r.rb.Name == "") {
		at := r.root
		if ok {
			at = f.value
		}
		v.errorf(at, "runbook has no name; add e.g. name: worker-stalled")
	} else if !runbookNameRe.MatchString(r.rb.Name) {
		v.errorf(f.value, "runbook name %q must be lowercase letters, digits and dashes, starting with a letter (e.g. worker-stalled)", r.rb.Name)
	}
	if f, ok := r.fields["steps"]; !ok {
		if !v.misspelled(r.root, "steps") {
			v.errorf(r.root, "runbook has no steps")
		}
	} else if len(r.rb.Steps) == 0 && len(resolve(f.value).Content) == 0 {
		v.errorf(f.value, "steps is empty; a runbook needs at least one step")
	}
}

func (v *validator) paramDecls() {
	for i, p := range v.r.rb.Params {
		rp := v.r.params[i]
		nameNode := rp.node
		if f, ok := rp.fields["name"]; ok {
			nameNode = f.value
		}
		switch {
		case p.Name == "":
			if !rp.fields.has("name") && !v.misspelled(rp.node, "name") {
				v.errorf(rp.node, "param %d has no name", i+1)
			} else if rp.fields.has("name") {
				v.errorf(nameNode, "param %d has an empty name", i+1)
			}
			continue
		case p.Name == EnvTarget:
			v.errorf(nameNode, "%q cannot be a param: the engine takes target=<concourse target> itself; use {{ .target }} or `target` in expressions", p.Name)
		case !identRe.MatchString(p.Name):
			v.errorf(nameNode, "param name %q must be lowercase letters, digits and underscores, starting with a letter (it is used as params.%s)", p.Name, strings.ReplaceAll(p.Name, "-", "_"))
		}
		if v.params[p.Name] {
			first := 0
			for j := range i {
				if v.r.rb.Params[j].Name == p.Name {
					first = v.r.params[j].node.Line
					break
				}
			}
			v.errorf(nameNode, "param %q declared twice (first at line %d)", p.Name, first)
			continue
		}
		v.params[p.Name] = true
		v.paramList = append(v.paramList, p.Name)

		var re *regexp.Regexp
		if f, ok := rp.fields["pattern"]; ok && p.Pattern != "" {
			var err error
			re, err = compilePattern(p.Pattern)
			if err != nil {
				v.errorf(f.value, "param %q: pattern is not a valid regular expression: %v", p.Name, err)
			}
		}
		if f, ok := rp.fields["enum"]; ok && len(p.Enum) == 0 {
			v.errorf(f.value, "param %q: enum is empty; list the allowed values or drop it", p.Name)
		}
		if f, ok := rp.fields["default"]; ok {
			if p.Required {
				v.errorf(f.key, "param %q is required and has a default; a default makes it optional, so drop one of them", p.Name)
			}
			if re != nil && !re.MatchString(p.Default) {
				v.errorf(f.value, "param %q: default %q does not match pattern %s", p.Name, p.Default, p.Pattern)
			}
			if len(p.Enum) > 0 && !slices.Contains(p.Enum, p.Default) {
				v.errorf(f.value, "param %q: default %q is not one of %s", p.Name, p.Default, strings.Join(p.Enum, ", "))
			}
		}
	}
}

// compilePattern compiles a param pattern anchored at both ends.
func compilePattern(p string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + p + `)$`)
}

// stepIDsAndKinds indexes the step ids first, so references to later
// steps can be told apart from references to steps that do not exist.
func (v *validator) stepIDsAndKinds() {
	for i, s := range v.r.rb.Steps {
		rs := v.r.steps[i]
		idField, hasID := rs.fields["id"]
		switch {
		case !hasID && v.misspelled(rs.node, "id"):
		case !hasID || s.ID == "":
			v.errorf(rs.node, "step %d has no id; add e.g. id: check_workers", i+1)
		case !identRe.MatchString(s.ID):
			v.errorf(idField.value, "step id %q must be lowercase letters, digits and underscores, starting with a letter (it is used as steps.%s)", s.ID, strings.ReplaceAll(s.ID, "-", "_"))
		}
		if s.ID != "" {
			if first, dup := v.stepIndex[s.ID]; dup {
				v.errorf(idField.value, "duplicate step id %q (first used at line %d)", s.ID, v.r.rb.Steps[first].Line)
			} else {
				v.stepIndex[s.ID] = i
				v.stepIDs = append(v.stepIDs, s.ID)
			}
		}
		kindField, hasKind := rs.fields["kind"]
		switch {
		case !hasKind && v.misspelled(rs.node, "kind"):
		case !hasKind || s.Kind == "":
			v.errorf(rs.node, "step %s has no kind; use one of %s", v.stepName(i), kindList())
		case !slices.Contains(kinds, s.Kind):
			names := strings.Split(kindList(), ", ")
			v.errorf(kindField.value, "unknown step kind %q%s (kinds: %s)", s.Kind, didYouMean(string(s.Kind), names), kindList())
		}
	}
}

func kindList() string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// stepName is the step's id in quotes, or its position when it has none.
func (v *validator) stepName(i int) string {
	if id := v.r.rb.Steps[i].ID; id != "" {
		return fmt.Sprintf("%q", id)
	}
	return fmt.Sprintf("%d", i+1)
}

// fieldRules says which optional fields each kind accepts; fields not
// listed for a kind are errors. Required fields are checked separately.
var fieldRules = map[string][]runbookmodel.Kind{
	"op":         {runbookmodel.KindQuery, runbookmodel.KindAction, runbookmodel.KindWait},
	"args":       {runbookmodel.KindQuery, runbookmodel.KindAction, runbookmodel.KindWait},
	"until":      {runbookmodel.KindWait},
	"interval":   {runbookmodel.KindWait},
	"timeout":    {runbookmodel.KindWait, runbookmodel.KindManual},
	"on_timeout": {runbookmodel.KindWait},
	"approval":   {runbookmodel.KindApproval, runbookmodel.KindAction},
}

func (v *validator) step(i int) {
	s := &v.r.rb.Steps[i]
	rs := v.r.steps[i]
	name := v.stepName(i)
	known := slices.Contains(kinds, s.Kind)
	if known {
		for fieldName, allowed := range fieldRules {
			if f, ok := rs.fields[fieldName]; ok && !slices.Contains(allowed, s.Kind) {
				hint := ""
				if fieldName == "on_timeout" && s.Kind == runbookmodel.KindManual {
					hint = "; when its timeout passes the step fails, so use on_failure"
				}
				v.errorf(f.key, "%s step %s cannot have %s (only %s steps can)%s", s.Kind, name, fieldName, kindNames(allowed), hint)
			}
		}
		v.required(i)
	}
	if f, ok := rs.fields["op"]; ok && s.Op != "" && known && slices.Contains(fieldRules["op"], s.Kind) {
		v.op(i, f)
	}
	if s.Approval != nil {
		v.approval(i)
	}
	if s.Timeout > 0 && s.Interval > 0 && s.Interval >= s.Timeout {
		v.errorf(rs.fields["interval"].value, "step %s: interval %s is not shorter than timeout %s, so the condition would be checked only once", name, s.Interval, s.Timeout)
	}
	v.targets(i)
	v.expressions(i)
	v.templates(i)
	v.because(i)
}

// because checks that a step's condition says in words why the step is
// skipped: without it people would read the expression. Its absence is a
// warning (the runbook loads; `groundcrew lint` reports it).
func (v *validator) because(i int) {
	s := &v.r.rb.Steps[i]
	rs := v.r.steps[i]
	if rs.when == nil {
		return
	}
	if strings.TrimSpace(s.When) == "" {
		if rs.because != nil {
			v.errorf(rs.when, "when of step %s: the if is empty; write the condition, or drop the when", v.stepName(i))
		}
		return
	}
	if s.Because == "" {
		at := rs.when
		if rs.because != nil {
			at = rs.because
		}
		v.warnf(at, "when of step %s has no because, so the thread would show the expression: "+
			"say in words why the step is skipped — when: {if: <the expression>, because: <why, e.g. the worker is running, not stalled>}", v.stepName(i))
	}
}

func kindNames(list []runbookmodel.Kind) string {
	names := make([]string, len(list))
	for i, k := range list {
		names[i] = string(k)
	}
	return strings.Join(names, " and ")
}

// required checks the fields each kind must have. A field that is
// present but has the wrong shape, or that an unknown field probably
// misspells, has been reported already.
func (v *validator) required(i int) {
	s := &v.r.rb.Steps[i]
	rs := v.r.steps[i]
	name := v.stepName(i)
	missing := func(fieldName, value string) bool {
		if _, ok := rs.fields[fieldName]; ok {
			return strings.TrimSpace(value) == "" && resolve(rs.fields[fieldName].value).Kind == yaml.ScalarNode
		}
		return !v.misspelled(rs.node, fieldName)
	}
	switch s.Kind {
	case runbookmodel.KindQuery, runbookmodel.KindAction, runbookmodel.KindWait:
		if missing("op", s.Op) {
			v.errorf(rs.node, "%s step %s has no op; add e.g. op: concourse.workers", s.Kind, name)
		}
	case runbookmodel.KindManual:
		if missing("text", s.Text) {
			v.errorf(rs.node, "manual step %s has no text; write the instructions for the person doing it", name)
		}
	}
	if s.Kind == runbookmodel.KindWait && missing("until", s.Until) {
		v.errorf(rs.node, "wait step %s has no until; add the condition to wait for, e.g. until: result.state == \"running\"", name)
	}
}

// op checks the operation against the catalog: it exists, its class fits
// the step kind, and the arguments match.
func (v *validator) op(i int, f field) {
	s := &v.r.rb.Steps[i]
	rs := v.r.steps[i]
	if v.cat == nil {
		return
	}
	info, ok := v.cat.Lookup(s.Op)
	if !ok {
		hint := ""
		if n, ok := v.cat.(OpNamer); ok {
			hint = didYouMean(s.Op, n.Names())
		}
		v.errorf(f.value, "unknown operation %q in step %s%s", s.Op, v.stepName(i), hint)
		return
	}
	if (s.Kind == runbookmodel.KindQuery || s.Kind == runbookmodel.KindWait) && info.Class != classRead {
		fix := "use kind: action"
		if s.Kind == runbookmodel.KindWait {
			fix = "a wait step can only poll a read operation"
		}
		v.errorf(f.value, "%s step %s uses %s operation %q; %s", s.Kind, v.stepName(i), info.Class, s.Op, fix)
	}
	argNames := make([]string, len(info.Args))
	for j, a := range info.Args {
		argNames[j] = a.Name
	}
	for _, a := range info.Args {
		if _, given := s.Args[a.Name]; a.Required && !given {
			at := f.value
			if af, ok := rs.fields["args"]; ok {
				at = af.key
			}
			v.errorf(at, "operation %q needs argument %q (step %s)", s.Op, a.Name, v.stepName(i))
		}
	}
	keys := make([]string, 0, len(rs.args))
	for k := range rs.args {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return rs.args[keys[a]].key.Line < rs.args[keys[b]].key.Line })
	for _, k := range keys {
		if !slices.Contains(argNames, k) {
			list := "it takes no arguments"
			if len(argNames) > 0 {
				list = "arguments: " + strings.Join(argNames, ", ")
			}
			v.errorf(rs.args[k].key, "unknown argument %q for operation %q%s (%s)", k, s.Op, didYouMean(k, argNames), list)
		}
	}
}

func (v *validator) approval(i int) {
	a := v.r.rb.Steps[i].Approval
	f := v.r.steps[i].approval
	name := v.stepName(i)
	if rf, ok := f["required"]; ok && a.Required < 1 {
		v.errorf(rf.value, "approval of step %s: required must be at least 1", name)
	}
	groups := false
	for j, ap := range a.Approvers {
		if strings.TrimSpace(ap) == "" {
			v.errorf(resolve(f["approvers"].value).Content[j], "approval of step %s: empty approver", name)
		}
		if strings.HasPrefix(ap, "group:") {
			groups = true
		}
	}
	if rf, ok := f["required"]; ok && len(a.Approvers) > 0 && !groups && a.Required > len(a.Approvers) {
		v.errorf(rf.value, "approval of step %s needs %d approvals but lists only %d approvers", name, a.Required, len(a.Approvers))
	}
}

// targets checks goto, on_failure and on_timeout.
func (v *validator) targets(i int) {
	rs := v.r.steps[i]
	allowed := map[string][]string{
		"goto":       {runbookmodel.TargetEnd},
		"on_failure": {runbookmodel.TargetFail, runbookmodel.TargetContinue, runbookmodel.TargetEnd},
		"on_timeout": {runbookmodel.TargetFail, runbookmodel.TargetContinue},
	}
	for _, fieldName := range []string{"goto", "on_failure", "on_timeout"} {
		f, ok := rs.fields[fieldName]
		if !ok {
			continue
		}
		target := f.value.Value
		if f.value.Kind != yaml.ScalarNode || f.value.Tag == "!!null" || slices.Contains(allowed[fieldName], target) {
			continue
		}
		if _, ok := v.stepIndex[target]; ok {
			continue
		}
		v.badTarget = true
		specials := strings.Join(allowed[fieldName], ", ")
		if slices.Contains([]string{runbookmodel.TargetFail, runbookmodel.TargetEnd, runbookmodel.TargetContinue}, target) {
			v.errorf(f.value, "%s of step %s cannot be %q; use a step id or %s", fieldName, v.stepName(i), target, specials)
			continue
		}
		candidates := append(slices.Clone(v.stepIDs), allowed[fieldName]...)
		v.errorf(f.value, "%s of step %s: no step with id %q%s (use a step id or %s)", fieldName, v.stepName(i), target, didYouMean(target, candidates), specials)
	}
}
