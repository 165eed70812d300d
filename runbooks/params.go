package runbooks

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// ErrInvalidParams is matched (errors.Is) by every error ValidateParams returns.
var ErrInvalidParams = errors.New("invalid parameters")

// ParamError is one problem with the parameters given to a run.
type ParamError struct {
	Param string
	Msg   string
}

// Error returns the message, which already names the parameter.
func (e *ParamError) Error() string { return e.Msg }

// Is makes errors.Is(err, ErrInvalidParams) true.
func (e *ParamError) Is(target error) bool { return target == ErrInvalidParams }

// ValidateParams checks the parameters given to a run of rb and returns
// the full set: every declared parameter is present, with its default (or
// "") when not given. An empty value counts as not given. Patterns are
// anchored. "target" is not a runbook parameter (the engine takes
// target=… itself) and is ignored here. All problems are reported at
// once, joined; each is a *ParamError.
func ValidateParams(rb *runbookmodel.Runbook, given map[string]string) (map[string]string, error) {
	var errs []error
	names := make([]string, 0, len(rb.Params)+1)
	for _, p := range rb.Params {
		names = append(names, p.Name)
	}
	known := append(slices.Clone(names), EnvTarget)

	unknown := make([]string, 0)
	for k := range given {
		if k != EnvTarget && !slices.Contains(names, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		if len(k) > 64 {
			errs = append(errs, &ParamError{Param: k, Msg: fmt.Sprintf("unknown parameter %s; params: %s", quoteShort(k), strings.Join(known, ", "))})
			continue
		}
		sep := "; "
		if hint := didYouMean(k, known); hint != "" {
			sep = hint + " "
		}
		errs = append(errs, &ParamError{Param: k, Msg: fmt.Sprintf("unknown parameter %q%sparams: %s",
			k, sep, strings.Join(known, ", "))})
	}

	out := make(map[string]string, len(rb.Params))
	for _, p := range rb.Params {
		val := strings.TrimSpace(given[p.Name])
		if val == "" {
			if p.Required {
				msg := fmt.Sprintf("missing required parameter %q", p.Name)
				if p.Description != "" {
					msg += " (" + p.Description + ")"
				}
				errs = append(errs, &ParamError{Param: p.Name, Msg: msg + "; add " + p.Name + "=…"})
				continue
			}
			out[p.Name] = p.Default
			continue
		}
		if err := CheckValue(p, val); err != nil {
			errs = append(errs, &ParamError{Param: p.Name, Msg: err.Error()})
			continue
		}
		if p.Pattern != "" {
			re, err := compilePattern(p.Pattern)
			if err != nil {
				// The loader rejects bad patterns; this is a hand-built Runbook.
				errs = append(errs, &ParamError{Param: p.Name, Msg: fmt.Sprintf("parameter %q: bad pattern %q: %v", p.Name, p.Pattern, err)})
				continue
			}
			if !re.MatchString(val) {
				errs = append(errs, &ParamError{Param: p.Name, Msg: fmt.Sprintf("parameter %q: %s does not match the pattern %s", p.Name, quoteShort(val), p.Pattern)})
				continue
			}
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, val) {
			errs = append(errs, &ParamError{Param: p.Name, Msg: fmt.Sprintf("parameter %q: %s is not one of %s%s",
				p.Name, quoteShort(val), strings.Join(p.Enum, ", "), didYouMean(val, p.Enum))})
			continue
		}
		out[p.Name] = val
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// quoteShort quotes a value for an error message, cut to 60 characters:
// a message never echoes a huge value.
func quoteShort(s string) string {
	r := []rune(s)
	if len(r) <= 60 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d characters)", string(r[:60]), len(r))
}
