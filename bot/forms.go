package bot

import (
	"strings"

	"github.com/groundcrew/groundcrew/runbooks"
)

// runForm is the form that asks for what `/runbook run` of rb lacks, or
// nil when nothing required is missing. target is the target given ("":
// none), targets the configured ones; given the parameters typed (kept as
// the fields' values).
func runForm(rb *runbooks.Runbook, target string, targets []string, given map[string]string) *Form {
	f := Form{Title: "Run " + rb.Name, Command: "run " + rb.Name}
	missing := false
	if target == "" && len(targets) > 1 {
		f.Fields = append(f.Fields, FormField{Name: "target", Help: "the Concourse target", Required: true, Options: targets})
		missing = true
	} else if target != "" {
		f.Command += " target=" + target
	}
	for _, p := range rb.Params {
		v := strings.TrimSpace(given[p.Name])
		if v == "" {
			v = p.Default
		}
		if p.Required && v == "" {
			missing = true
		}
		f.Fields = append(f.Fields, FormField{Name: p.Name, Help: p.Description, Required: p.Required, Default: v, Options: p.Enum})
	}
	if !missing {
		return nil
	}
	return &f
}
