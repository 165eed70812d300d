package concourse

import (
	"fmt"
	"regexp"
	"strings"
	"text/template"
)

// WorkerNaming says how a target's workers are named and reached, as Go
// templates over .vars (the target's vars), .target (its name) and .id
// (the worker ID of the operations manual, e.g. 0); host also sees .name,
// jump and ssh also .name and .host. Every field is optional:
//
//	name: "caascad-ci-workers-{{.vars.target}}-{{.vars.zone}}-{{.id}}"
//	host: "{{.name}}.{{.vars.zone}}.caascad.com"
//	jump: "ssh -t cloud@bst.{{.vars.zone}}.caascad.com"
//
// Without name, `worker=` takes only full worker names; without host (and
// ssh), manual steps cannot show a shell command and say so. ssh alone
// works for workers without a host of their own:
// `kubectl -n concourse exec -it {{.name}} -- bash`.
type WorkerNaming struct {
	// Name turns an ID into the worker's name.
	Name string `yaml:"name" json:"name,omitempty"`
	// Host is the worker's host name for ssh.
	Host string `yaml:"host" json:"host,omitempty"`
	// Jump is the command prefix that runs a command on the jump host
	// (bastion); ssh goes through it.
	Jump string `yaml:"jump" json:"jump,omitempty"`
	// SSH is the command that opens a shell on the worker (default:
	// `<jump> ssh "<host>"`).
	SSH string `yaml:"ssh" json:"ssh,omitempty"`
}

// naming is a compiled WorkerNaming for one target.
type naming struct {
	target               string
	vars                 map[string]string
	name, host, jump, ss *template.Template
	idRe                 *regexp.Regexp // captures the id in a name; nil without a name template
}

const idMark = "\x00id\x00"

func compileNaming(target string, vars map[string]string, n WorkerNaming) (*naming, error) {
	out := &naming{target: target, vars: vars}
	parse := func(field, text string) (*template.Template, error) {
		if strings.TrimSpace(text) == "" {
			return nil, nil
		}
		t, err := template.New(field).Option("missingkey=error").Parse(text)
		if err != nil {
			return nil, fmt.Errorf("target %q: workers.%s: %v", target, field, err)
		}
		return t, nil
	}
	var err error
	if out.name, err = parse("name", n.Name); err != nil {
		return nil, err
	}
	if out.host, err = parse("host", n.Host); err != nil {
		return nil, err
	}
	if out.jump, err = parse("jump", n.Jump); err != nil {
		return nil, err
	}
	if out.ss, err = parse("ssh", n.SSH); err != nil {
		return nil, err
	}
	if out.name != nil {
		probe, err := out.render(out.name, "name", map[string]any{"id": idMark})
		if err != nil {
			return nil, err
		}
		if !strings.Contains(probe, idMark) {
			return nil, fmt.Errorf("target %q: workers.name %q does not use {{.id}}", target, n.Name)
		}
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(probe), regexp.QuoteMeta(idMark), `([A-Za-z0-9_.-]+?)`) + "$"
		out.idRe = regexp.MustCompile(re)
		// render a sample so a missing var fails at start, not mid-incident
		if _, err := out.NameOf("0"); err != nil {
			return nil, err
		}
	}
	for _, t := range []*template.Template{out.host, out.jump, out.ss} {
		if t == nil {
			continue
		}
		if _, err := out.render(t, t.Name(), map[string]any{"id": "0", "name": "w", "host": "h"}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (n *naming) render(t *template.Template, field string, data map[string]any) (string, error) {
	vars := n.vars
	if vars == nil {
		vars = map[string]string{}
	}
	data["vars"], data["target"] = vars, n.target
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("target %q: workers.%s: %v", n.target, field, err)
	}
	return b.String(), nil
}

// HasIDs reports whether the target maps IDs to names.
func (n *naming) HasIDs() bool { return n != nil && n.name != nil }

// NameOf renders the name of worker id.
func (n *naming) NameOf(id string) (string, error) {
	if !n.HasIDs() {
		return "", fmt.Errorf("target %s has no workers.name template", n.target)
	}
	return n.render(n.name, "name", map[string]any{"id": id})
}

// IDOf returns the ID in a worker's name ("" when the name does not follow
// the template). The ID addresses exactly this worker: NameOf(IDOf(x)) == x.
func (n *naming) IDOf(name string) string {
	if !n.HasIDs() {
		return ""
	}
	m := n.idRe.FindStringSubmatch(name)
	if m == nil {
		return ""
	}
	for _, v := range m[2:] {
		if v != m[1] {
			return ""
		}
	}
	if back, err := n.NameOf(m[1]); err != nil || back != name {
		return ""
	}
	return m[1]
}

// Ref is what to type after worker= to address exactly this worker: its ID
// when the target maps IDs to names, else its full name.
func (n *naming) Ref(name string) string {
	if id := n.IDOf(name); id != "" {
		return id
	}
	return name
}

// Access is how to reach a worker: host, ssh command, and the command that
// forgets a changed host key where ssh runs.
type Access struct {
	Host          string
	SSH           string
	ForgetHostKey string
	// Unknown is set, with no host and no ssh, for a worker whose name the
	// target's workers.name template does not produce: see AccessOf.
	Unknown bool
	// Jump is, for an Unknown worker, the jump host command when it is the
	// same for every worker ("" otherwise, or without a jump template).
	Jump string
}

// AccessOf renders the host and shell commands of a worker. Without a host
// template there is no host and no ssh; an ssh template alone (e.g.
// `kubectl -n concourse exec -it {{.name}} -- bash`) still gives the shell
// command. When the target names its workers (workers.name) and this
// worker's name is not one the template produces (worker-7 on a target
// whose workers are caascad-ci-workers-infra-infra-prd-<id>), its host is
// unknown: the host and ssh templates describe the template's workers, and
// rendering them for another name makes up a host
// (worker-7.infra-prd.caascad.com) that may not exist.
func (n *naming) AccessOf(name, id string) (Access, error) {
	var a Access
	if n == nil || (n.host == nil && n.ss == nil) {
		return a, nil
	}
	if n.HasIDs() && n.IDOf(name) == "" {
		a.Unknown, a.Jump = true, n.fixedJump()
		return a, nil
	}
	var err error
	if n.host != nil {
		if a.Host, err = n.render(n.host, "host", map[string]any{"id": id, "name": name}); err != nil {
			return a, err
		}
	}
	jump := ""
	if n.jump != nil {
		if jump, err = n.render(n.jump, "jump", map[string]any{"id": id, "name": name, "host": a.Host}); err != nil {
			return a, err
		}
		jump = strings.TrimSpace(jump) + " "
	}
	if n.ss != nil {
		if a.SSH, err = n.render(n.ss, "ssh", map[string]any{"id": id, "name": name, "host": a.Host}); err != nil {
			return a, err
		}
	} else {
		a.SSH = fmt.Sprintf("%sssh %q", jump, a.Host)
	}
	if a.Host != "" {
		a.ForgetHostKey = fmt.Sprintf("%sssh-keygen -R %q", jump, a.Host)
	}
	return a, nil
}

// fixedJump is the jump command when it does not depend on the worker (the
// manual's `ssh -t "cloud@bst.<zone>.caascad.com"`), else "".
func (n *naming) fixedJump() string {
	if n.jump == nil {
		return ""
	}
	a, errA := n.render(n.jump, "jump", map[string]any{"id": "0", "name": "a", "host": "a.example"})
	b, errB := n.render(n.jump, "jump", map[string]any{"id": "1", "name": "b", "host": "b.example"})
	if errA != nil || errB != nil || a != b {
		return ""
	}
	return strings.TrimSpace(a)
}

// Validate checks the templates against the target's vars (config check).
func (n WorkerNaming) Validate(target string, vars map[string]string) error {
	_, err := compileNaming(target, vars, n)
	return err
}

// ManualWorkerNaming is the operations manual's scheme: worker 0 of target
// vars {target: infra, zone: infra-prd} is caascad-ci-workers-infra-infra-prd-0,
// reached through the zone's bastion. The demo and the scenarios use it.
func ManualWorkerNaming() WorkerNaming {
	return WorkerNaming{
		Name: "caascad-ci-workers-{{.vars.target}}-{{.vars.zone}}-{{.id}}",
		Host: "{{.name}}.{{.vars.zone}}.caascad.com",
		Jump: `ssh -t "cloud@bst.{{.vars.zone}}.caascad.com"`,
	}
}

// WorkerNamer returns the name of worker id under each target's
// workers.name template (ok false for a target without one, or whose
// templates do not compile). Alert routes use it so that workerID gives an
// ID only for a host the template names.
func WorkerNamer(targets []TargetConfig) func(target, id string) (string, bool) {
	byName := map[string]*naming{}
	for _, tc := range targets {
		if nm, err := compileNaming(tc.Name, tc.Vars, tc.Workers); err == nil && nm.HasIDs() {
			byName[tc.Name] = nm
		}
	}
	return func(target, id string) (string, bool) {
		nm, ok := byName[target]
		if !ok {
			return "", false
		}
		name, err := nm.NameOf(id)
		return name, err == nil
	}
}
