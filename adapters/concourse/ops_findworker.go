package concourse

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// FoundWorker is the result of concourse.find_worker: the worker a run is
// about, however it was named, with how to reach it.
type FoundWorker struct {
	WorkerData
	// Found is true when a worker was identified (typed, or picked because
	// it was the only one in the wanted state).
	Found bool `json:"found"`
	// How says how: "id" (worker=0), "name" (a full name) or "picked".
	How string `json:"how"`
	// Candidates are the workers in the wanted state (when picking).
	Candidates []string `json:"candidates"`
	// Host, SSH and ForgetHostKey come from the target's workers templates;
	// "" when the target has no host template, or when the host is unknown.
	Host          string `json:"host"`
	SSH           string `json:"ssh"`
	ForgetHostKey string `json:"forget_host_key"`
	// HostUnknown is true for a worker whose name the target's workers.name
	// template does not produce: the host template would make up a host
	// from its name, so there is none (and no ssh).
	HostUnknown bool `json:"host_unknown"`
	// Addr is the worker's Garden address as Concourse has it ("" when it
	// is not registered or has landed).
	Addr string `json:"addr"`
	// Connect is the instruction for a manual step (Markdown): the ssh
	// command and how to forget a changed host key; without a host
	// template, that the target has none and what to do instead; for an
	// unknown host, that it is unknown and how to find the machine.
	Connect string `json:"connect"`
}

func (p *Provider) opFindWorker() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.find_worker", Class: opmodel.ClassRead,
		Doc: "Identify the worker a run is about: by its ID under the target's workers.name template (0), by its full name, " +
			"or, when none is given, the only worker in the wanted state. Fails when a typed worker is not registered or several fit.",
		Args: []opmodel.ArgSpec{
			{Name: "worker", Doc: "the worker's ID (0) or full name; empty: pick the only worker in `state`"},
			{Name: "state", Doc: "states a picked worker may be in (default stalled)"},
			{Name: "allow_missing", Doc: "true: a typed worker that is not registered is fine (exists: false), e.g. one being provisioned"},
			{Name: "alert_instance", Doc: "the instance of the alert the run was started from (.run.alert_instance): the worker found must be that machine, else the step fails"},
		},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			typed := strings.TrimSpace(c.Args.String("worker"))
			states := c.Args.Strings("state")
			if len(states) == 0 {
				states = []string{WorkerStalled}
			}
			ws, err := cl.Workers(ctx)
			if err != nil {
				return opmodel.Result{}, err
			}
			// Another team's workers are not the run's channel's to see.
			ws = slices.DeleteFunc(ws, func(w Worker) bool { return !scopeOf(c).worker(w) })
			now := p.opts.Now()
			nm := cl.naming
			out := FoundWorker{Candidates: []string{}}
			out.Tags = []string{}
			byName := map[string]Worker{}
			for _, w := range ws {
				byName[w.Name] = w
				if contains(states, w.State) {
					out.Candidates = append(out.Candidates, w.Name)
				}
			}
			var name string
			switch {
			case typed != "":
				if _, ok := byName[typed]; ok {
					name, out.How = typed, "name"
					break
				}
				if nm.HasIDs() && nm.IDOf(typed) == "" {
					n, err := nm.NameOf(typed)
					if err != nil {
						return opmodel.Result{}, err
					}
					if _, ok := byName[n]; ok || c.Args.Bool("allow_missing") {
						name, out.How = n, "id"
						break
					}
				}
				if c.Args.Bool("allow_missing") {
					name, out.How = typed, "name"
					break
				}
				return opmodel.Result{}, fmt.Errorf("%s: %w", cl.Name(), missingWorker(nm, typed, ws))
			case len(out.Candidates) == 1:
				name, out.How = out.Candidates[0], "picked"
			case len(out.Candidates) == 0:
				return opmodel.Result{
					Summary: fmt.Sprintf("no %s worker on %s (%s); give worker=<ID or name> to look at another",
						strings.Join(states, " or "), cl.Name(), nonEmptyLine(workerCounts(ws), "no workers registered")),
					Data: out,
				}, nil
			default:
				var picks []string
				for _, n := range out.Candidates {
					w := byName[n]
					picks = append(picks, fmt.Sprintf("worker=%s (%s, %s %s)", nm.Ref(n), n, w.State, age(since(now, w.Started()))))
				}
				return opmodel.Result{}, fmt.Errorf("%d %s workers on %s; run again with one of: %s",
					len(out.Candidates), strings.Join(states, " or "), cl.Name(), strings.Join(picks, ", "))
			}
			if w, ok := byName[name]; ok {
				out.WorkerData = p.workerData(cl, w, now)
				out.Addr = w.Addr
			} else {
				out.WorkerData = WorkerData{Name: name, ID: nm.IDOf(name), Ref: nm.Ref(name), Tags: []string{}}
			}
			out.Found = true
			acc, err := nm.AccessOf(out.Name, out.ID)
			if err != nil {
				return opmodel.Result{}, err
			}
			out.Host, out.SSH, out.ForgetHostKey, out.HostUnknown = acc.Host, acc.SSH, acc.ForgetHostKey, acc.Unknown
			inst := strings.TrimSpace(c.Args.String("alert_instance"))
			if inst != "" && !sameMachine(inst, out.Name, out.Host) {
				return opmodel.Result{}, fmt.Errorf("%s: the alert is about %s, but the worker found (worker=%s) is %s, another machine: "+
					"nothing is done on a machine the alert is not about; check the route's params (alerts.routes) or type the command with the right worker=",
					cl.Name(), inst, nonEmptyLine(typed, "the only "+strings.Join(states, " or ")+" one"), out.Name)
			}
			if out.HostUnknown {
				out.Connect = unknownHostText(cl.Name(), cl.FlyTarget(), out, acc.Jump, inst)
			} else {
				out.Connect = connectText(cl.Name(), out, nm.jump != nil)
			}
			return opmodel.Result{Summary: foundSummary(out), Data: out, Warn: out.State == WorkerStalled}, nil
		},
	}
}

func foundSummary(f FoundWorker) string {
	var b strings.Builder
	if f.How == "picked" {
		fmt.Fprintf(&b, "the only %s worker: ", f.State)
	}
	b.WriteString(f.Name)
	if !f.Exists {
		b.WriteString(" is not registered")
	} else {
		fmt.Fprintf(&b, " is %s (%d containers, up %s)", f.State, f.Containers, f.Age)
	}
	fmt.Fprintf(&b, " · worker=%s", f.Ref)
	if f.AutoRemove != "" {
		// named just before: "…; Concourse removes it by itself before …"
		b.WriteString("; " + strings.Replace(f.AutoRemove, " "+f.Name+" ", " it ", 1))
	}
	return b.String()
}

// missingWorker says that a typed worker is not registered, what it could
// have meant and which workers are.
func missingWorker(nm *naming, typed string, ws []Worker) error {
	var b strings.Builder
	fmt.Fprintf(&b, "worker %s", typed)
	if nm.HasIDs() && nm.IDOf(typed) == "" {
		if n, err := nm.NameOf(typed); err == nil {
			fmt.Fprintf(&b, " (%s)", n)
		}
	} else if !nm.HasIDs() && isDigits(typed) {
		b.WriteString(" (this target has no workers.name template, so give the full worker name)")
	}
	var names []string
	for i, w := range ws {
		if i == 10 {
			names = append(names, fmt.Sprintf("… %d more", len(ws)-10))
			break
		}
		names = append(names, fmt.Sprintf("%s (%s)", w.Name, w.State))
	}
	reg := "no worker is registered"
	if len(names) > 0 {
		reg = "registered: " + strings.Join(names, ", ")
	}
	return fmt.Errorf("%s %w; %s", b.String(), ErrNotFound, reg)
}

func workerCounts(ws []Worker) string {
	counts := map[string]int{}
	for _, w := range ws {
		counts[w.State]++
	}
	return countsLine(counts, WorkerStates)
}

func nonEmptyLine(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// connectText is how a person opens a shell on the worker.
func connectText(target string, f FoundWorker, jump bool) string {
	if f.SSH == "" {
		return fmt.Sprintf("Target %s has no host template for its workers (`targets.%s.workers.host` in the config), "+
			"so groundcrew cannot show an ssh command: open a shell on `%s` the way your platform does (ssh, `docker exec`, `kubectl exec`).",
			target, target, f.Name)
	}
	if f.ForgetHostKey == "" {
		return fmt.Sprintf("Open a shell on the worker:\n```\n%s\n```", f.SSH)
	}
	via, where := "", ""
	if jump {
		via, where = ", through the jump host", " on the jump host"
	}
	return fmt.Sprintf("From your computer%s:\n```\n%s\n```\n"+
		"If ssh says `WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!`, remove the old fingerprint%s, then connect again:\n```\n%s\n```",
		via, f.SSH, where, f.ForgetHostKey)
}

// unknownHostText is the instruction for a worker whose host is unknown
// (Access.Unknown): no ssh command to a host made up from its name, but
// where to find the machine — the Garden address Concourse has for it, the
// alert's instance, the platform's inventory.
func unknownHostText(target, fly string, f FoundWorker, jump, instance string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "⚠️ The host of `%s` is unknown: its name does not follow target %s's worker naming (`targets.%s.workers.name`), "+
		"so groundcrew shows no ssh command rather than one to a host that may not exist.\n", f.Name, target, target)
	b.WriteString("Find the machine, then open a shell on it")
	if jump != "" {
		fmt.Fprintf(&b, " (through the jump host: `%s`)", jump)
	}
	b.WriteString(":")
	const forwarded = "the machine's own address, unless the worker registers through the TSA's forwarding (then it is the web node's)"
	if f.Addr != "" {
		fmt.Fprintf(&b, "\n• Concourse has its Garden address as `%s` (`fly -t '%s' workers --details` shows it too): %s;", f.Addr, fly, forwarded)
	} else {
		fmt.Fprintf(&b, "\n• `fly -t '%s' workers --details` shows its Garden address once it is registered: %s;", fly, forwarded)
	}
	if instance != "" {
		fmt.Fprintf(&b, "\n• the alert is about `%s`: Prometheus reaches the machine at that address;", instance)
	}
	b.WriteString("\n• or your platform's inventory (cloud console, Terraform state, CMDB).")
	return b.String()
}

// sameMachine reports whether an alert's instance ("worker-7:9100",
// "caascad-…-prd-7.infra-prd.caascad.com:9100") is the worker with this
// name and host: its host, port dropped, is the worker's name or host, or
// its short form is the worker's name. An address matches nothing (it
// cannot be told from a name).
func sameMachine(instance, name, host string) bool {
	h := instance
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	h = strings.ToLower(strings.Trim(h, "[]"))
	if h == "" {
		return false
	}
	name, host = strings.ToLower(name), strings.ToLower(host)
	if h == name || (host != "" && h == host) {
		return true
	}
	short, _, _ := strings.Cut(h, ".")
	return short == name && !isDigits(strings.ReplaceAll(h, ".", ""))
}
