package bot_test

import (
	"strings"
	"testing"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// FuzzParse: no command text makes Parse panic; what it accepts has a
// known verb and run ids in lower case, a declared command's sub-verb and
// arity are its spec's, and errors are short sentences.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "help", "list", "show worker-stalled", "run worker-stalled target=infra-prd worker=0 --dry-run",
		`run prune who="alice bob" note='x y'`, "approve R-5FB1 looks fine", "approve r-5fb1 --break-glass prod is down now",
		"reject r-5fb1 not now", "done r-5fb1", "skip r-5fb1 note", "fail r-5fb1", "cancel r-5fb1 wrong target",
		"status", "status r-5fb1", "digest infra-prd", "summary", "summary thread r-5fb1", "lsit", `run x a="unclosed`,
		"run x a=b a=c", "run x =v", "run x who=\u202eevil", "“quoted” run", "run\tx\u00a0y=z",
		"incidents", "INCIDENT show I-1", "incidents ack", "incidents unacked page 2", "incidnets",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := bot.ParseWith(text, []chatmodel.CommandSpec{incidentsSpec})
		if err != nil {
			var ue *chatmodel.UserError
			if !asUserError(err, &ue) {
				t.Fatalf("Parse(%q) returned a non-user error: %v", text, err)
			}
			if len(ue.Msg) > 2000 {
				t.Fatalf("Parse(%q): error of %d bytes", text, len(ue.Msg))
			}
			return
		}
		if c.Verb == "" {
			t.Fatalf("Parse(%q): empty verb", text)
		}
		if in := c.Invocation; in != nil {
			switch {
			case in.Command != incidentsSpec.Name || string(c.Verb) != in.Command:
				t.Fatalf("ParseWith(%q): invocation of %q, verb %q", text, in.Command, c.Verb)
			case in.Sub == "" && len(in.Args) > incidentsSpec.MaxArgs, in.Sub != "" && len(in.Args) != 1:
				t.Fatalf("ParseWith(%q): %d arguments for %q", text, len(in.Args), in.Sub)
			}
			return
		}
		if c.Verb.TakesRun() && c.Name != strings.ToLower(c.Name) {
			t.Fatalf("Parse(%q): run id %q not lower case", text, c.Name)
		}
	})
}

func asUserError(err error, ue **chatmodel.UserError) bool {
	u, ok := err.(*chatmodel.UserError)
	*ue = u
	return ok
}
