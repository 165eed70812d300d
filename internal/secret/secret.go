// Package secret holds credentials read from config files, files or the
// environment, in a type that never prints its value.
package secret

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// Secret is a credential. Its String, GoString, JSON and YAML forms are
// redacted, so it can sit in config structs that get logged or dumped.
type Secret string

const redacted = "<redacted>"

// Value returns the secret itself. Call it only where the secret is used.
func (s Secret) Value() string { return string(s) }

// IsSet reports whether the secret has a value.
func (s Secret) IsSet() bool { return s != "" }

// String implements fmt.Stringer.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString implements fmt.GoStringer (for %#v).
func (s Secret) GoString() string { return s.String() }

// MarshalJSON implements json.Marshaler.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + s.String() + `"`), nil }

// MarshalYAML implements yaml.Marshaler.
func (s Secret) MarshalYAML() (any, error) { return s.String(), nil }

// ErrConflict is returned when a secret is given in more than one way.
var ErrConflict = errors.New("secret given both inline and as a file")

// Resolve returns the secret from, in order of precedence: the environment
// variable env (when env is not empty and the variable is set), the file at
// path file, or the inline value. field names the config key for errors
// ("targets.infra-prd.password"). Trailing newlines of files are trimmed.
func Resolve(field string, inline Secret, file, env string) (Secret, error) {
	if env != "" {
		if v, ok := os.LookupEnv(env); ok && v != "" {
			return Secret(v), nil
		}
	}
	if file != "" && inline != "" {
		return "", fmt.Errorf("%s: %w: use either %s or %s_file", field, ErrConflict, field, field)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("%s_file: reading %s: %w", field, file, err)
		}
		v := strings.TrimRight(string(b), "\r\n")
		if v == "" {
			return "", fmt.Errorf("%s_file: %s is empty", field, file)
		}
		return Secret(v), nil
	}
	return inline, nil
}
