package runbooks

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// FuzzParseRunbook: no file makes the loader or the validator panic; what
// loads has a name and steps, and its parameters validate their defaults.
func FuzzParseRunbook(f *testing.F) {
	for _, dir := range []string{"testdata/good", "testdata/bad", "builtin"} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(p) == ".yaml" {
				if data, err := os.ReadFile(p); err == nil {
					f.Add(data)
				}
			}
			return nil
		})
	}
	cat := testCatalog()
	f.Fuzz(func(t *testing.T, data []byte) {
		rb, err := Parse("fuzz.yaml", data, cat)
		if err != nil {
			return
		}
		if rb.Name == "" || len(rb.Steps) == 0 {
			t.Fatalf("loaded a runbook without name or steps: %+v", rb)
		}
		given := map[string]string{}
		for _, p := range rb.Params {
			given[p.Name] = p.Default
		}
		_, _ = ValidateParams(rb, given)
	})
}

// FuzzCheckValue: CheckValue never panics, and a value it accepts under
// the default rules has no unusual character.
func FuzzCheckValue(f *testing.F) {
	for _, s := range []string{"w-0", "a\u202eb", "x\ny", "\x00", "👩‍💻"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckValue(runbookmodel.Param{Name: "p"}, s) != nil {
			return
		}
		for _, r := range s {
			if textmodel.CharClass(r) != "" {
				t.Fatalf("accepted %q with %s", s, textmodel.CharName(r))
			}
		}
	})
}
