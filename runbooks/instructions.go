package runbooks

import (
	"regexp"
	"strings"
)

// A command a person is asked to paste must work as shown. When it needs a
// value the target's configuration does not give — a target var
// ({{ .vars.cloud }}, rendered MissingVar), the worker's ID that only the
// target's workers.name template gives ({{ unset "workers.name"
// "WORKER_ID" }}) — RenderInstructions does not show it with a
// placeholder: the line says which setting is missing instead.

// tmplUnset is the template function for a value only the target's
// configuration can give: path is the setting under targets.<target>
// ("workers.name"), what names the value ("WORKER_ID"). It renders a
// placeholder RenderInstructions recognises:
//
//	{{ .steps.worker.result.id | default (unset "workers.name" "WORKER_ID") }}
func tmplUnset(path, what string) string { return "<" + what + ": needs the target's " + path + ">" }

// unfilledRe matches MissingVar and tmplUnset placeholders.
var unfilledRe = regexp.MustCompile(`<([^<>:]+): (?:not set in the target's vars|needs the target's ([A-Za-z0-9_.]+))>`)

// RenderInstructions renders a manual step's text (Render) and keeps
// unusable commands out of it: a line of a fenced code block that holds a
// placeholder (a var the target does not set, a value only its config
// gives) becomes a shell comment naming the setting to add
// (`# not shown: it needs targets.infra-prd.vars.cloud`); a placeholder in
// prose names the setting; and a last line lists what to set.
func RenderInstructions(text string, env Env) (string, error) {
	out, err := Render(text, env)
	if err != nil || !unfilledRe.MatchString(out) {
		return out, err
	}
	target, _ := env[EnvTarget].(string)
	setting := func(m []string) string {
		if m[2] == "" {
			return "targets." + target + ".vars." + m[1]
		}
		return "targets." + target + "." + m[2]
	}
	var missing []string
	seen := map[string]bool{}
	note := func(s string) {
		if !seen[s] {
			seen[s] = true
			missing = append(missing, "`"+s+"`")
		}
	}
	lines := strings.Split(out, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		ms := unfilledRe.FindAllStringSubmatch(l, -1)
		if len(ms) == 0 {
			continue
		}
		var needs []string
		for _, m := range ms {
			note(setting(m))
			needs = append(needs, setting(m))
		}
		if fenced {
			indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
			lines[i] = indent + "# not shown: this command needs " + strings.Join(needs, " and ") + " (not set)"
			continue
		}
		lines[i] = unfilledRe.ReplaceAllStringFunc(l, func(s string) string {
			m := unfilledRe.FindStringSubmatch(s)
			return "<" + m[1] + ": set " + setting(m) + ">"
		})
	}
	out = strings.Join(lines, "\n")
	return strings.TrimRight(out, "\n") + "\n⚠️ A command that needs " + strings.Join(missing, ", ") +
		" is not shown: set it in groundcrew.yaml (`groundcrew config check` says what each target lacks).", nil
}
