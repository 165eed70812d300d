package runbooks

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/template"
	"time"
)

// templates caches parsed templates by source text. A parsed template is
// safe for concurrent Execute.
var templates sync.Map // string -> *template.Template

// Render executes text as a Go text/template against env. A reference to a
// missing map key (a typo in a param name, a step that has not run) is an
// error, not "<no value>".
func Render(text string, env Env) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := parseTemplate(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, map[string]any(withMissingVars(text, env))); err != nil {
		return "", fmt.Errorf("rendering template: %w", tmplError{err})
	}
	return b.String(), nil
}

// RenderArgs renders every string in args (recursively through maps and
// lists) with Render and returns a new map; args is not modified. Rendered
// values stay strings: `{{ .params.limit }}` gives "5", which the
// operation's Args helpers (Int, Duration, …) convert. Non-string values
// (numbers, bools written in YAML) are kept as they are.
func RenderArgs(args map[string]any, env Env) (map[string]any, error) {
	if args == nil {
		return nil, nil
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		r, err := renderValue(v, env)
		if err != nil {
			return nil, fmt.Errorf("argument %q: %w", k, err)
		}
		out[k] = r
	}
	return out, nil
}

func renderValue(v any, env Env) (any, error) {
	switch t := v.(type) {
	case string:
		return Render(t, env)
	case map[string]any:
		return RenderArgs(t, env)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := renderValue(e, env)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i+1, err)
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// parseTemplate returns the cached parsed form of text.
func parseTemplate(text string) (*template.Template, error) {
	if t, ok := templates.Load(text); ok {
		return t.(*template.Template), nil
	}
	t, err := newTemplate(text)
	if err != nil {
		return nil, err
	}
	templates.Store(text, t)
	return t, nil
}

func newTemplate(text string) (*template.Template, error) {
	t, err := template.New("").Option("missingkey=error").Funcs(templateFuncs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parsing template: %w", tmplError{err})
	}
	return t, nil
}

// tmplExecPrefix matches text/template's location prefix, which names our
// anonymous template and repeats what the caller already says.
var tmplExecPrefix = regexp.MustCompile(`^template: :(\d+)(?::\d+)?: (?:executing "" at )?`)

// tmplError shortens text/template's messages to
// `line 1: <.params.x>: map has no entry for key "x"`.
type tmplError struct{ err error }

func (e tmplError) Error() string {
	msg := e.err.Error()
	if m := tmplExecPrefix.FindStringSubmatch(msg); m != nil {
		msg = "line " + m[1] + ": " + msg[len(m[0]):]
	}
	return msg
}

func (e tmplError) Unwrap() error { return e.err }

// templateFuncs are the functions available in templates, besides Go's
// builtins (index, printf, eq, and, or, not, …).
var templateFuncs = template.FuncMap{
	"join":     tmplJoin,
	"default":  tmplDefault,
	"upper":    strings.ToUpper,
	"lower":    strings.ToLower,
	"quote":    shellQuote,
	"duration": tmplDuration,
	"len":      tmplLen,
	"unset":    tmplUnset,
}

// tmplJoin joins a list with sep: {{ .steps.w.result.names | join ", " }}.
func tmplJoin(sep string, list any) (string, error) {
	switch t := list.(type) {
	case nil:
		return "", nil
	case []string:
		return strings.Join(t, sep), nil
	case string:
		return t, nil
	}
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
		return "", fmt.Errorf("join: %s is not a list", describe(list))
	}
	parts := make([]string, v.Len())
	for i := range parts {
		parts[i] = fmt.Sprint(v.Index(i).Interface())
	}
	return strings.Join(parts, sep), nil
}

// tmplDefault returns v unless it is empty (nil, "", 0, false, empty
// list/map), else def: {{ .params.reason | default "no reason given" }}.
func tmplDefault(def, v any) any {
	if isEmpty(v) {
		return def
	}
	return v
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// tmplLen is len that treats nil as empty instead of failing.
func tmplLen(v any) (int, error) {
	if v == nil {
		return 0, nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Slice, reflect.Map, reflect.Array, reflect.Chan:
		return rv.Len(), nil
	}
	return 0, fmt.Errorf("len: %s has no length", describe(v))
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes s for a POSIX shell, leaving plain words as they are:
// worker-1 stays worker-1, "a b" becomes 'a b', it's becomes 'it'\”s'.
func shellQuote(v any) string {
	s := fmt.Sprint(v)
	if v == nil {
		s = ""
	}
	if shellSafe.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tmplDuration formats a number of seconds (or a time.Duration) the way
// people write it: 7500 → "2h 5m", 90 → "1m 30s", 93600 → "1d 2h".
func tmplDuration(v any) (string, error) {
	var secs float64
	switch t := v.(type) {
	case time.Duration:
		secs = t.Seconds()
	case float64:
		secs = t
	case float32:
		secs = float64(t)
	case int:
		secs = float64(t)
	case int64:
		secs = float64(t)
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
		if err != nil {
			return "", fmt.Errorf("duration: %q is not a number of seconds", t)
		}
		secs = f
	default:
		return "", fmt.Errorf("duration: %s is not a number of seconds", describe(v))
	}
	return humanDuration(time.Duration(math.Round(secs)) * time.Second), nil
}

// humanDuration formats d with its two largest units.
func humanDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	units := []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}}
	var parts []string
	for _, u := range units {
		if d >= u.size {
			n := d / u.size
			d -= n * u.size
			parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
		} else if len(parts) > 0 {
			// Keep the two parts adjacent: "1h 0m" reads worse than "1h".
			break
		}
		if len(parts) == 2 {
			break
		}
	}
	if len(parts) == 0 {
		return "0s"
	}
	out := strings.Join(parts, " ")
	if neg {
		out = "-" + out
	}
	return out
}
