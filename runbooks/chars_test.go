package runbooks

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckValue(t *testing.T) {
	plain := runbookmodel.Param{Name: "who"}
	tests := []struct {
		name, val string
		p         runbookmodel.Param
		want      string // "" = accepted
	}{
		{"ordinary text", "alice — on call ✅ ⚠️ été", plain, ""},
		{"emoji with joiner and selector", "👩‍💻", runbookmodel.Param{Name: "who", Allow: []string{textmodel.CharsFormat}}, ""},
		{"bidi override", "invoice\u202egnp.exe", plain, `parameter "who": character 8 is U+202E RIGHT-TO-LEFT OVERRIDE (format)`},
		{"zero width space", "w-\u200b0", plain, `character 3 is U+200B ZERO WIDTH SPACE (format)`},
		{"newline", "a\nb", plain, `character 2 is U+000A LINE FEED (newline); values are single lines of printable text. A runbook may allow it with allow: [newline]`},
		{"newline allowed", "a\nb", runbookmodel.Param{Name: "who", Allow: []string{textmodel.CharsNewline}}, ""},
		{"escape sequence", "\x1b[31mred", plain, `U+001B ESCAPE (control)`},
		{"nul never", "a\x00", runbookmodel.Param{Name: "who", Allow: textmodel.CharClasses}, "NUL, which is never allowed"},
		{"invalid utf-8", "a\xffb", plain, "not valid UTF-8"},
		{"too long", strings.Repeat("x", MaxParamLength+1), plain, `the value is 1025 characters long; the limit is 1024 (a runbook may raise it with max_length)`},
		{"exactly the limit", strings.Repeat("é", MaxParamLength), plain, ""},
		{"raised limit", strings.Repeat("x", 5000), runbookmodel.Param{Name: "who", MaxLength: 5000}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckValue(tt.p, tt.val)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// One huge value is refused with the limit, and the message does not echo it.
func TestValidateParams_HugeValueNotEchoed(t *testing.T) {
	rb := &runbookmodel.Runbook{Name: "x", Params: []runbookmodel.Param{{Name: "who"}, {Name: "w", Pattern: "w-[0-9]"}}}
	_, err := ValidateParams(rb, map[string]string{"who": strings.Repeat("a", 1_000_000)})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200)
	assert.Contains(t, err.Error(), "the limit is 1024")
	_, err = ValidateParams(rb, map[string]string{"w": strings.Repeat("b", 900)})
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 200)
	assert.Contains(t, err.Error(), "… (900 characters)")
}

func TestParse_FileTooLarge(t *testing.T) {
	data := []byte("name: big\n# " + strings.Repeat("x", MaxFileSize) + "\n")
	_, err := Parse("big.yaml", data, testCatalog())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "big.yaml: the file is 257 KiB; the limit for a runbook file is 256 KiB")
	lib, err := NewLibrary(testCatalog(), Source{Name: "dir", FS: fstest.MapFS{"big.yaml": {Data: data}}})
	require.Error(t, err)
	require.NotNil(t, lib)
	_, broken := lib.Broken("big")
	assert.True(t, broken)
}
