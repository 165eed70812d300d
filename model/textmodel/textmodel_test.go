package textmodel_test

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/groundcrew/groundcrew/model/textmodel"
)

func TestSanitize(t *testing.T) {
	assert.Equal(t, "ok ✅ ⚠️ 👩‍💻 été\n\tx", textmodel.Sanitize("ok ✅ ⚠️ 👩‍💻 été\n\tx"))
	assert.Equal(t, "invoice<U+202E>gnp.exe", textmodel.Sanitize("invoice\u202egnp.exe"))
	assert.Equal(t, "a<U+200B>b<U+001B>[31m<U+200D>c", textmodel.Sanitize("a\u200bb\x1b[31m\u200dc"))
	assert.Equal(t, "a\uFFFDb", textmodel.Sanitize("a\xffb"))
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"opp", []string{"id", "op", "args", "when"}, "op"},
		{"wroker", []string{"worker", "target"}, "worker"},
		{"stesp", []string{"name", "title", "params", "steps"}, "steps"},
		{"on_fail", []string{"id", "op", "on_failure", "on_timeout"}, ""},
		{"colour", []string{"name", "note"}, ""},
		{"workers", []string{"concourse.workers", "core.echo"}, "concourse.workers"},
		{"x", []string{"x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			assert.Equal(t, tt.want, textmodel.Suggest(tt.word, tt.candidates))
		})
	}
}

// FuzzSanitize: the output of Sanitize is valid UTF-8, has no bidi
// control, zero-width space or control character but line breaks and
// tabs, and sanitizing twice changes nothing.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"plain", "a\u202eb", "👩‍💻 ⚠️", "\x1b[31m", "a\xffb", "\u200d\u200d", "\u2028x\u2029"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := textmodel.Sanitize(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200b || r == 0xfeff {
				t.Fatalf("Sanitize(%q) = %q keeps U+%04X", s, out, r)
			}
		}
		if again := textmodel.Sanitize(out); again != out {
			t.Fatalf("Sanitize is not idempotent: %q → %q → %q", s, out, again)
		}
	})
}

func TestLiteral(t *testing.T) {
	for in, want := range map[string]string{
		"":              "",
		"deploy":        "deploy",
		"my_pipeline":   "my_pipeline",
		"caascad-ci-0":  "caascad-ci-0",
		".*":            "`.*`",
		"*prod*":        "`*prod*`",
		"_tmp_":         "`_tmp_`",
		"a _b":          "`a _b`",
		"~x~":           "`~x~`",
		"[x](http://e)": "`[x](http://e)`",
		"a`b":           "`` a`b ``",
		"a``b*":         "``` a``b* ```",
	} {
		assert.Equal(t, want, textmodel.Literal(in), in)
	}
}
