package runbooks

import (
	"regexp"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// Target vars (targets.<name>.vars) are optional values the built-in
// runbooks' instructions use ({{ .vars.zone }}). A step whose text uses
// one the target does not set still renders: the value reads
// "<zone: not set in the target's vars>", never a template error.

// varRefRe matches `.vars.zone` and `index .vars "cloud"`.
var varRefRe = regexp.MustCompile(`\.vars\.([A-Za-z_][A-Za-z0-9_]*)|index\s+\.vars\s+"([A-Za-z_][A-Za-z0-9_]*)"`)

// MissingVar is what a target var that is not set renders as.
func MissingVar(name string) string { return "<" + name + missingVarMark }

const missingVarMark = ": not set in the target's vars>"

// withMissingVars returns env with a placeholder for every `.vars.X` that
// text uses and env lacks (env itself is not changed).
func withMissingVars(text string, env Env) Env {
	if !strings.Contains(text, ".vars.") {
		return env
	}
	vars := map[string]any{}
	switch t := env[EnvVars].(type) {
	case map[string]any:
		vars = t
	case map[string]string:
		for k, v := range t {
			vars[k] = v
		}
	case nil:
	default:
		return env // not a map: let the template say what is wrong
	}
	var missing []string
	for _, m := range varRefRe.FindAllStringSubmatch(text, -1) {
		if m[1] == "" {
			continue // index .vars "x" gives "" when unset: no error
		}
		if _, ok := vars[m[1]]; !ok {
			missing = append(missing, m[1])
		}
	}
	if len(missing) == 0 {
		return env
	}
	out := make(Env, len(env))
	for k, v := range env {
		out[k] = v
	}
	vs := make(map[string]any, len(vars)+len(missing))
	for k, v := range vars {
		vs[k] = v
	}
	for _, n := range missing {
		vs[n] = MissingVar(n)
	}
	out[EnvVars] = vs
	return out
}

// VarsUsed lists the target vars the runbook's templates read as
// {{ .vars.X }} (titles, texts, arguments; `index .vars "X"` reads "" when
// unset and is left to the template), sorted: what `config check` expects
// every target to set.
func VarsUsed(rb *runbookmodel.Runbook) []string {
	seen := map[string]bool{}
	scan := func(text string) {
		for _, m := range varRefRe.FindAllStringSubmatch(text, -1) {
			if m[1] != "" { // index .vars "x" reads "" when unset: the template decides
				seen[m[1]] = true
			}
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			scan(t)
		case map[string]any:
			for _, e := range t {
				walk(e)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	for _, f := range rb.FollowUp {
		scan(f)
	}
	for _, s := range rb.Steps {
		scan(s.Title)
		scan(s.Text)
		walk(s.Args)
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
