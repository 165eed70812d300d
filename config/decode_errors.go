package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/model/textmodel"
)

// decodeErrors turns a YAML decoding error into Errors a person can act on:
// the line, the key or value at fault, the keys that are allowed there and
// a did-you-mean — never a Go type name ("field consol not found in type
// config.Chat").
func decodeErrors(file string, data []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			msg = "line " + m[1] + ": invalid YAML: " + m[2]
			// yaml.v3 names the line where the enclosing block starts.
			if p := problemLine(data); p > 0 && fmt.Sprint(p) != m[1] {
				msg = fmt.Sprintf("line %d: invalid YAML: %s (in the block that starts at line %s)", p, m[2], m[1])
			}
		}
		return Errors{{File: file, Msg: msg}}
	}
	var errs Errors
	for _, msg := range te.Errors {
		errs = append(errs, &Error{File: file, Msg: humanDecodeError(msg)})
	}
	return errs
}

var (
	yamlLine      = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownField  = regexp.MustCompile(`^line (\d+): field (\S+) not found in type (\S+)$`)
	cannotDecode  = regexp.MustCompile("^line (\\d+): cannot unmarshal (!!\\w+)(?: `(.*)`)? into (.+)$")
	alreadyIsSet  = regexp.MustCompile(`^line (\d+): mapping key "(.*)" already defined at line (\d+)$`)
	decodeTargets = sync.OnceValue(func() map[string]keyInfo { return keysOf(reflect.TypeOf(Config{})) })
)

// humanDecodeError rewrites one message of a yaml.TypeError.
func humanDecodeError(msg string) string {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		line, key, typ := m[1], m[2], m[3]
		info, ok := decodeTargets()[typ]
		if !ok {
			return fmt.Sprintf("line %s: unknown key %q", line, key)
		}
		where := ""
		if info.path != "" {
			where = " in " + info.path
		}
		hint := ""
		if s := textmodel.Suggest(key, info.keys); s != "" {
			hint = fmt.Sprintf("; did you mean %q?", s)
		}
		return fmt.Sprintf("line %s: unknown key %q%s%s (known keys: %s)", line, key, where, hint, strings.Join(info.keys, ", "))
	}
	if m := cannotDecode.FindStringSubmatch(msg); m != nil {
		line, tag, value, typ := m[1], m[2], m[3], m[4]
		found := map[string]string{"!!map": "a mapping (key: value)", "!!seq": "a list", "!!str": "the text", "!!int": "the number",
			"!!float": "the number", "!!bool": "the value", "!!null": "nothing"}[tag]
		if found == "" {
			found = "a value"
		}
		if value != "" {
			found += fmt.Sprintf(" %q", value)
		}
		return fmt.Sprintf("line %s: expected %s, found %s", line, expectedValue(typ), found)
	}
	if m := alreadyIsSet.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("line %s: key %q is given twice (first at line %s)", m[1], m[2], m[3])
	}
	return msg
}

// expectedValue says in words what a Go type accepts.
func expectedValue(typ string) string {
	switch {
	case typ == "time.Duration" || strings.HasSuffix(typ, ".Duration"):
		return "a duration (e.g. 30m, 1h)"
	case typ == "bool":
		return "true or false"
	case typ == "string" || strings.HasSuffix(typ, ".Secret"):
		return "a single value"
	case strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint"):
		return "a whole number"
	case strings.HasPrefix(typ, "float"):
		return "a number"
	case strings.HasPrefix(typ, "[]"):
		return "a list"
	case strings.HasPrefix(typ, "map["):
		return "a mapping (key: value)"
	}
	if info, ok := decodeTargets()[strings.TrimPrefix(typ, "*")]; ok {
		return "a mapping with the keys " + strings.Join(info.keys, ", ")
	}
	return "another kind of value"
}

// keyInfo is what a struct of the configuration accepts: its keys, and
// where it sits in the file ("chat.slack", "targets.<name>").
type keyInfo struct {
	path string
	keys []string
}

// keysOf maps every struct type reachable from t (by its Go name, as
// yaml.v3 reports it) to its YAML keys and its first path in the file.
func keysOf(t reflect.Type) map[string]keyInfo {
	out := map[string]keyInfo{}
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Map:
			walk(t.Elem(), join(path, "<name>"))
			return
		case reflect.Slice, reflect.Array:
			walk(t.Elem(), path+"[]")
			return
		case reflect.Struct:
		default:
			return
		}
		if _, seen := out[t.String()]; seen {
			return
		}
		var keys []string
		type sub struct {
			t    reflect.Type
			path string
		}
		var subs []sub
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			keys = append(keys, name)
			subs = append(subs, sub{f.Type, join(path, name)})
		}
		if len(keys) == 0 {
			return
		}
		sort.Strings(keys)
		out[t.String()] = keyInfo{path: path, keys: keys}
		for _, s := range subs {
			walk(s.t, s.path)
		}
	}
	walk(t, "")
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// problemLine returns the first line n such that the first n lines of data
// do not parse as YAML, or 0 (bounded to the first 2000 lines).
func problemLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var prefix []byte
	for i, l := range lines {
		if i >= 2000 {
			break
		}
		prefix = append(prefix, l...)
		var n yaml.Node
		if err := yaml.Unmarshal(prefix, &n); err != nil {
			return i + 1
		}
	}
	return 0
}
