package scenario

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/postgres/pgsim"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// common holds the settings a file gives all its scenarios and a scenario
// may override.
type common struct {
	Target    string                  `yaml:"target"`
	Vars      map[string]string       `yaml:"vars"`
	FlyTarget string                  `yaml:"fly_target"`
	Workers   *concourse.WorkerNaming `yaml:"workers"`
	World     yaml.Node               `yaml:"world"`
	WorldFile string                  `yaml:"world_file"`
	Database  yaml.Node               `yaml:"database"`
	Policy    *runmodel.Policy        `yaml:"policy"`
	Approvals *policy.Config          `yaml:"approvals"`
	Channels  *policy.Channels        `yaml:"channels"`
	Authority string                  `yaml:"authority"`
	Users     map[string][]string     `yaml:"users"`
	Groups    map[string][]string     `yaml:"groups"`
	Tick      Duration                `yaml:"tick"`
}

type fileRaw struct {
	Runbook     string        `yaml:"runbook"`
	Description string        `yaml:"description"`
	C           common        `yaml:",inline"`
	Scenarios   []scenarioRaw `yaml:"scenarios"`
}

type scenarioRaw struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Runbook     string   `yaml:"runbook"`
	Tags        []string `yaml:"tags"`
	C           common   `yaml:",inline"`
	Inputs      []Input  `yaml:"inputs"`
	Expect      *Expect  `yaml:"expect"`
}

// States an expectation may name ("none": no run was started).
var knownStates = []string{"none", "running", "awaiting_approval", "awaiting_manual", "waiting", "succeeded", "failed", "cancelled"}

// Step statuses an expectation may name.
var knownStatuses = []string{"pending", "running", "executing", "awaiting_approval", "awaiting_manual", "waiting", "succeeded", "failed", "skipped", "cancelled"}

// MaxFileSize is the largest scenario (or world) file read.
const MaxFileSize = 1 << 20

// Parse decodes one scenario file. file names it in errors; fsys (may be
// nil) resolves world_file paths relative to the file. Every problem found
// is reported, each prefixed with file:line.
func Parse(file string, data []byte, fsys fs.FS) ([]*Scenario, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: the file is %d KiB; the limit for a scenario file is %d KiB", file, (len(data)+1023)>>10, MaxFileSize>>10)
	}
	var raw fileRaw
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	lines := scenarioLines(&root)
	p := &parser{file: file, fsys: fsys}
	if len(raw.Scenarios) == 0 {
		p.errf(1, "no scenarios: add a `scenarios:` list")
	}
	var out []*Scenario
	seen := map[string]int{}
	for i := range raw.Scenarios {
		sr := &raw.Scenarios[i]
		line := 1
		var inputLines []int
		if i < len(lines) {
			line, inputLines = lines[i].line, lines[i].inputs
		}
		sc := p.scenario(&raw, sr, line, inputLines)
		if sc == nil {
			continue
		}
		if prev, dup := seen[sc.Name]; dup {
			p.errf(line, "scenario %q is already defined on line %d", sc.Name, prev)
			continue
		}
		seen[sc.Name] = line
		out = append(out, sc)
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return out, nil
}

type parser struct {
	file string
	fsys fs.FS
	errs []error
}

func (p *parser) errf(line int, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%s:%d: %s", p.file, line, fmt.Sprintf(format, args...)))
}

func (p *parser) scenario(f *fileRaw, sr *scenarioRaw, line int, inputLines []int) *Scenario {
	n := len(p.errs)
	sc := &Scenario{
		Name: strings.TrimSpace(sr.Name), Description: sr.Description, Runbook: sr.Runbook, Tags: sr.Tags,
		File: p.file, Line: line, Target: sr.C.Target, FlyTarget: cmp.Or(sr.C.FlyTarget, f.C.FlyTarget), Vars: sr.C.Vars, Groups: sr.C.Groups,
		Tick: DefaultTick, Inputs: sr.Inputs, Expect: sr.Expect,
	}
	if sc.Name == "" {
		p.errf(line, "scenario has no name")
	}
	if sc.Runbook == "" {
		sc.Runbook = f.Runbook
	}
	if sc.Runbook == "" {
		p.errf(line, "scenario %q: no runbook: set `runbook:` at the top of the file or in the scenario", sc.Name)
	}
	if sc.Target == "" {
		sc.Target = f.C.Target
	}
	if sc.Vars == nil {
		sc.Vars = f.C.Vars
	}
	workers := sr.C.Workers
	if workers == nil {
		workers = f.C.Workers
	}
	if sc.Target == "" {
		sc.Target = DefaultTarget
		if sc.Vars == nil {
			sc.Vars = map[string]string{"zone": "infra-prd", "target": "infra"}
		}
		if workers == nil {
			m := concourse.ManualWorkerNaming()
			workers = &m
		}
	}
	if workers != nil {
		sc.Workers = *workers
		if err := sc.Workers.Validate(sc.Target, sc.Vars); err != nil {
			p.errf(line, "scenario %q: workers: %v", sc.Name, err)
		}
	}
	if sc.Groups == nil {
		sc.Groups = f.C.Groups
	}
	switch {
	case sr.C.Policy != nil:
		sc.Approvals = policy.Config{Default: *sr.C.Policy}
	case sr.C.Approvals != nil:
		sc.Approvals = *sr.C.Approvals
	case f.C.Policy != nil:
		sc.Approvals = policy.Config{Default: *f.C.Policy}
	case f.C.Approvals != nil:
		sc.Approvals = *f.C.Approvals
	}
	sc.Authority, sc.Users = cmp.Or(sr.C.Authority, f.C.Authority), sr.C.Users
	if sc.Users == nil {
		sc.Users = f.C.Users
	}
	if sc.Authority != "" && sc.Authority != "concourse" {
		p.errf(line, "scenario %q: authority %q: leave it out or write concourse", sc.Name, sc.Authority)
	}
	switch {
	case sr.C.Channels != nil:
		sc.Approvals.Channels = *sr.C.Channels
	case f.C.Channels != nil:
		sc.Approvals.Channels = *f.C.Channels
	}
	if sr.C.Policy != nil && sr.C.Approvals != nil || f.C.Policy != nil && f.C.Approvals != nil {
		p.errf(line, "scenario %q: give `policy` (the default level) or `approvals` (every level), not both", sc.Name)
	}
	switch {
	case sr.C.Tick != 0:
		sc.Tick = sr.C.Tick.D()
	case f.C.Tick != 0:
		sc.Tick = f.C.Tick.D()
	}
	world, worldFile, worldLine := nodeOrNil(&sr.C.World), sr.C.WorldFile, line
	if world == nil && worldFile == "" {
		world, worldFile = nodeOrNil(&f.C.World), f.C.WorldFile
	}
	if world != nil {
		worldLine = world.Line
	}
	sc.World = p.world(world, worldFile, worldLine)
	db := nodeOrNil(&sr.C.Database)
	if db == nil {
		db = nodeOrNil(&f.C.Database)
	}
	sc.Database = p.database(db)
	for i := range sc.Inputs {
		if i < len(inputLines) {
			sc.Inputs[i].Line = inputLines[i]
		} else {
			sc.Inputs[i].Line = line
		}
		p.input(&sc.Inputs[i])
	}
	if sc.Expect == nil {
		p.errf(line, "scenario %q has no `expect:`; a scenario that checks nothing proves nothing", sc.Name)
	} else {
		p.expect(line, sc.Expect)
	}
	if len(p.errs) > n {
		return nil
	}
	return sc
}

// nodeOrNil returns n, or nil when the field was not written.
func nodeOrNil(n *yaml.Node) *yaml.Node {
	if n.Kind == 0 {
		return nil
	}
	return n
}

func (p *parser) world(n *yaml.Node, file string, line int) WorldSpec {
	switch {
	case n != nil && file != "":
		p.errf(line, "set either world or world_file, not both")
	case file != "":
		if p.fsys == nil {
			p.errf(line, "world_file %q: no directory to read it from", file)
			return WorldSpec{}
		}
		data, err := fs.ReadFile(p.fsys, path.Join(path.Dir(p.file), file))
		if err != nil {
			p.errf(line, "world_file: %v", err)
			return WorldSpec{}
		}
		return WorldSpec{Inline: data}
	case n == nil:
		return WorldSpec{Preset: "demo"}
	case n.Kind == yaml.ScalarNode:
		switch n.Value {
		case "demo", "empty":
			return WorldSpec{Preset: n.Value}
		}
		p.errf(n.Line, "world %q: use demo, empty or a mapping (a concoursesim World)", n.Value)
	case n.Kind == yaml.MappingNode:
		data, err := yaml.Marshal(n)
		if err != nil {
			p.errf(n.Line, "world: %v", err)
			return WorldSpec{}
		}
		return WorldSpec{Inline: data}
	default:
		p.errf(n.Line, "world: use demo, empty or a mapping (a concoursesim World)")
	}
	return WorldSpec{}
}

func (p *parser) database(n *yaml.Node) *pgsim.DatabaseSpec {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		switch {
		case n.Value == "demo":
			return pgsim.Demo()
		case n.Value == "none" || n.Tag == "!!null":
			return nil // explicitly none, overriding the file's
		}
		p.errf(n.Line, "database %q: use demo, none or a mapping with tables", n.Value)
		return nil
	}
	data, err := yaml.Marshal(n)
	if err != nil {
		p.errf(n.Line, "database: %v", err)
		return nil
	}
	var spec pgsim.DatabaseSpec
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		p.errf(n.Line, "database (lines relative to it): %v", err)
		return nil
	}
	for i, t := range spec.Tables {
		switch t.Kind {
		case "", "pipeline":
			if t.Team == "" || t.Pipeline == "" {
				p.errf(n.Line, "database.tables[%d]: a pipeline table needs team and pipeline", i)
			}
		case "team":
			if t.Team == "" {
				p.errf(n.Line, "database.tables[%d]: a team table needs team", i)
			}
		case "check":
		default:
			p.errf(n.Line, "database.tables[%d]: kind %q is not pipeline, team or check", i, t.Kind)
		}
	}
	return &spec
}

// actorInputs are the input kinds done by a chat user.
var actorInputs = map[string]bool{"run": true, "command": true, "react": true, "approve": true, "done": true, "skip": true, "fail": true}

func (p *parser) input(in *Input) {
	kind, n := in.kind()
	switch {
	case n == 0:
		p.errf(in.Line, "input does nothing: use one of run, command, react, approve, done, skip, fail, advance, world, expect")
		return
	case n > 1:
		p.errf(in.Line, "input has several actions (%s); write one per list item", kind)
		return
	}
	if actorInputs[kind] && in.As == "" {
		p.errf(in.Line, "%s: say who does it with `as: <user>`", kind)
	}
	if !actorInputs[kind] && in.As != "" {
		p.errf(in.Line, "%s: `as` does not apply", kind)
	}
	if in.In != "" && kind != "run" && kind != "command" {
		p.errf(in.Line, "%s: `in` (the channel) applies to run and command only", kind)
	}
	if in.Step != "" && kind != "react" {
		p.errf(in.Line, "%s: `step` applies to react only (done/skip/fail name the step themselves)", kind)
	}
	if kind == "react" {
		if i := chatutil.IntentOf(in.React); i != chatmodel.IntentApprove && i != chatmodel.IntentReject && i != chatmodel.IntentSkip {
			p.errf(in.Line, "react %q: use %s", in.React, reactionChoices())
		}
	}
	if in.Expect != nil {
		p.expect(in.Line, in.Expect)
	}
	if w := in.World; w != nil {
		for _, b := range w.AddBuilds {
			if b.Pipeline == "" || b.Job == "" {
				p.errf(in.Line, "world.add_builds: each build needs pipeline and job")
			}
		}
		if w.Fault != nil && w.Fault.Status == 0 && w.Fault.Delay == 0 {
			p.errf(in.Line, "world.fault: set status (e.g. 500) or delay")
		}
		for _, f := range w.FinishBuilds {
			if f.Pipeline == "" {
				p.errf(in.Line, "world.finish_builds: each entry needs pipeline")
			}
			if !contains([]string{"aborted", "succeeded", "failed", "errored"}, f.Status) {
				p.errf(in.Line, "world.finish_builds: status %q: use aborted, succeeded, failed or errored", f.Status)
			}
		}
		for _, c := range w.API {
			if c.Method == "" || !strings.HasPrefix(c.Path, "/") {
				p.errf(in.Line, "world.api: each request needs method and path (/api/v1/…)")
			}
		}
	}
}

func (p *parser) expect(line int, e *Expect) {
	if e.State != "" && !contains(knownStates, e.State) {
		p.errf(line, "expect.state %q: use one of %s", e.State, strings.Join(knownStates, ", "))
	}
	for _, id := range sortedKeys(e.Steps) {
		if st := e.Steps[id].Status; st != "" && !contains(knownStatuses, st) {
			p.errf(line, "expect.steps.%s: status %q: use one of %s", id, st, strings.Join(knownStatuses, ", "))
		}
	}
	if w := e.World; w != nil {
		for _, name := range sortedKeys(w.Workers) {
			switch w.Workers[name] {
			case "gone", "running", "stalled", "landing", "landed", "retiring":
			default:
				p.errf(line, "expect.world.workers.%s: %q: use gone, running, stalled, landing, landed or retiring", name, w.Workers[name])
			}
		}
		for i, b := range w.Builds {
			if b.Count == nil {
				p.errf(line, "expect.world.builds[%d]: count is required", i)
			}
		}
		for _, k := range sortedKeys(w.Pipelines) {
			if !strings.Contains(k, "/") {
				p.errf(line, "expect.world.pipelines: %q: write team/pipeline", k)
			}
		}
		for _, k := range sortedKeys(w.ResourceCaches) {
			if strings.Count(k, "/") != 2 {
				p.errf(line, "expect.world.resource_caches: %q: write team/pipeline/resource", k)
			}
		}
		for _, k := range sortedKeys(w.API) {
			if m, _, ok := strings.Cut(k, " "); !ok || m != strings.ToUpper(m) {
				p.errf(line, "expect.world.api: %q: write \"METHOD /path\"", k)
			}
		}
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

type scenarioLine struct {
	line   int
	inputs []int
}

// scenarioLines finds the line of each scenario and of each of its inputs.
func scenarioLines(root *yaml.Node) []scenarioLine {
	doc := root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	seq := mapValue(doc, "scenarios")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]scenarioLine, 0, len(seq.Content))
	for _, item := range seq.Content {
		sl := scenarioLine{line: item.Line}
		if ins := mapValue(item, "inputs"); ins != nil && ins.Kind == yaml.SequenceNode {
			for _, in := range ins.Content {
				sl.inputs = append(sl.inputs, in.Line)
			}
		}
		out = append(out, sl)
	}
	return out
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// isWorldFile reports whether p is a world for world_file (*.world.yaml),
// not a scenario file.
func isWorldFile(p string) bool {
	return strings.HasSuffix(p, ".world.yaml") || strings.HasSuffix(p, ".world.yml")
}

// LoadFS parses every *.yaml and *.yml file under fsys (recursively, in
// lexical order), except worlds (*.world.yaml) and hidden files and
// directories. It returns the scenarios of the valid files and every
// problem found.
func LoadFS(fsys fs.FS) ([]*Scenario, error) {
	var (
		out  []*Scenario
		errs []error
	)
	err := fs.WalkDir(fsys, ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			return nil
		}
		if strings.HasPrefix(de.Name(), ".") && p != "." {
			if de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if de.IsDir() {
			return nil
		}
		if ext := path.Ext(p); ext != ".yaml" && ext != ".yml" || isWorldFile(p) {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
			return nil
		}
		scs, err := Parse(p, data, fsys)
		if err != nil {
			errs = append(errs, err)
			return nil
		}
		out = append(out, scs...)
		return nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, errors.Join(errs...)
}

// reactionChoices lists the reactions a scenario may write: those of the
// chat adapters (chatutil), by symbol and short name.
func reactionChoices() string {
	var sym, names []string
	for _, i := range []chatmodel.Intent{chatmodel.IntentApprove, chatmodel.IntentReject, chatmodel.IntentSkip} {
		sym = append(sym, chatutil.Symbol(i))
		names = append(names, chatutil.Name(i))
	}
	return strings.Join(sym, ", ") + " (or " + strings.Join(names, ", ") + ")"
}
