package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/postgres/pgsim"
	"github.com/groundcrew/groundcrew/model/textmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// DefaultTarget is the target scenarios run on when they name none; its
// default vars are those of the demo: {zone: infra-prd, target: infra}.
const DefaultTarget = "infra-prd"

// DefaultTick is how far one clock step of `advance` moves the fake clock.
const DefaultTick = 30 * time.Second

// Scenario is one scripted run of a runbook against a simulated world.
type Scenario struct {
	// Name is unique in its file; Runbook/Name identifies it in reports.
	Name        string
	Description string
	// Runbook is the runbook the scenario is about (for coverage and
	// reports); inputs may run others too.
	Runbook string
	// Tags classify the scenario ("main", "failure").
	Tags []string
	// File and Line locate the scenario.
	File string
	Line int

	Target string
	// FlyTarget is the target's fly_target ("": the target's name).
	FlyTarget string
	Vars      map[string]string
	// Workers maps worker IDs to names and hosts (the target's workers:).
	Workers concourse.WorkerNaming
	// World is the simulator's initial state.
	World WorldSpec
	// Database is the simulated Concourse database (nil: none, so
	// postgres.* operations fail as on a target without a database).
	Database *pgsim.DatabaseSpec
	// Approvals is the configured approval policy: `policy` gives its
	// default level, `approvals` every level, teams included (zero: the
	// engine's built-in default).
	Approvals policy.Config
	// Groups maps an approver group to its members (user names).
	Groups map[string][]string
	// Authority is the target's authority: "concourse" when the people's
	// Concourse roles (from the world's teams' auth) decide too.
	Authority string
	// Users maps chat users to their Concourse identities ("local:pam"),
	// as users: in groundcrew.yaml.
	Users map[string][]string
	// Tick is the clock step used by advance inputs.
	Tick time.Duration

	Inputs []Input
	// Expect is checked after the last input.
	Expect *Expect
}

// ID is "runbook/name", as reports show it.
func (s *Scenario) ID() string { return s.Runbook + "/" + s.Name }

// HasTag reports whether the scenario carries tag.
func (s *Scenario) HasTag(tag string) bool {
	for _, t := range s.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// WorldSpec is the initial simulator world: a preset ("demo", "empty") or
// an inline concoursesim.World in YAML.
type WorldSpec struct {
	Preset string
	// Inline is the YAML of a concoursesim.World (decoded strictly at run
	// time so errors carry the simulator's messages).
	Inline []byte
}

// Input is one thing that happens during the scenario, in order. Exactly
// one of the action fields is set.
type Input struct {
	// Line is where the input is written.
	Line int `yaml:"-"`
	// As is the chat user who acts (name and id), for run, command, react,
	// approve, done, skip and fail.
	As string `yaml:"as"`
	// In is the channel a run or command is typed in ("#payments-ci";
	// default the scenario's channel, bound to nothing).
	In string `yaml:"in"`
	// Run starts a run: "worker-stalled worker=0" (the text after
	// "/runbook run").
	Run string `yaml:"run"`
	// Command is any /runbook command text; {run} is replaced by the id of
	// the latest run ("approve {run} looks good").
	Command string `yaml:"command"`
	// React adds a reaction (✅, ❌, ⏭ or one of the short names the chat
	// adapters know, adapters/chatutil) to Step's message: the open approval request of
	// that step if there is one, else the step's own message. Without Step,
	// the message of whatever the run waits for.
	React string `yaml:"react"`
	Step  string `yaml:"step"`
	// Approve reacts ✅ (true) or ❌ (false) on the open approval request.
	Approve *bool `yaml:"approve"`
	// Done, Skip and Fail react ✅, ⏭ or ❌ on the named manual step.
	Done string `yaml:"done"`
	Skip string `yaml:"skip"`
	Fail string `yaml:"fail"`
	// Advance moves the shared clock forward in steps of Tick, letting the
	// engine poll wait steps and expire gates after each step.
	Advance Duration `yaml:"advance"`
	// World changes the simulated world (an operator acting outside chat).
	World *WorldAction `yaml:"world"`
	// Restart stops groundcrew and starts it again on the same store, as
	// after a crash or a deploy: runs, approvals and journals must survive.
	Restart bool `yaml:"restart"`
	// Expect checks the state at this point.
	Expect *Expect `yaml:"expect"`
}

// kind names the input's action, "" when none or several are set.
func (in *Input) kind() (string, int) {
	var set []string
	add := func(ok bool, name string) {
		if ok {
			set = append(set, name)
		}
	}
	add(in.Run != "", "run")
	add(in.Command != "", "command")
	add(in.React != "", "react")
	add(in.Approve != nil, "approve")
	add(in.Done != "", "done")
	add(in.Skip != "", "skip")
	add(in.Fail != "", "fail")
	add(in.Advance != 0, "advance")
	add(in.World != nil, "world")
	add(in.Restart, "restart")
	add(in.Expect != nil, "expect")
	if len(set) != 1 {
		return strings.Join(set, ", "), len(set)
	}
	return set[0], 1
}

// WorldAction changes the simulated world between inputs.
type WorldAction struct {
	// ResumeHeartbeat makes workers heartbeat again: a stalled worker
	// comes back running (someone restarted it); an unknown or pruned one
	// registers as running (a new or rebuilt VM).
	ResumeHeartbeat []string `yaml:"resume_heartbeat"`
	// StopHeartbeat makes workers stop heartbeating: they stall once the
	// simulator's heartbeat TTL (60s) has passed.
	StopHeartbeat []string `yaml:"stop_heartbeat"`
	// AddBuilds adds builds (concoursesim.Build fields).
	AddBuilds []BuildSpec `yaml:"add_builds"`
	// Fault makes the next matching API requests fail.
	Fault *FaultSpec `yaml:"fault"`
	// Database changes the simulated database.
	Database *DatabaseAction `yaml:"database"`
	// RemoveWorkers deletes workers as Concourse's own worker collector
	// does (--stalled-worker-timeout, an ephemeral worker that stopped
	// heartbeating): no API request is made.
	RemoveWorkers []string `yaml:"remove_workers"`
	// FinishBuilds ends every pending or started build of a pipeline (or
	// one of its jobs) with a status, as someone's fly abort-build loop,
	// or the builds running to their end, would.
	FinishBuilds []FinishBuildsSpec `yaml:"finish_builds"`
	// DestroyPipelines deletes pipelines ("team/pipeline"), as fly
	// destroy-pipeline does.
	DestroyPipelines []string `yaml:"destroy_pipelines"`
	// API makes requests to the Concourse API as another user, as someone
	// with fly would (fly pause-pipeline, land-worker, abort-build …).
	API []APICall `yaml:"api"`
}

// FinishBuildsSpec is one finish_builds entry.
type FinishBuildsSpec struct {
	Team     string `yaml:"team"` // default main
	Pipeline string `yaml:"pipeline"`
	Job      string `yaml:"job"`    // default: every job
	Status   string `yaml:"status"` // aborted, succeeded, failed or errored
}

// APICall is a request someone else sends to the Concourse API.
type APICall struct {
	// As is the user (a user of the world; default the world's second
	// user, so it is not the bot's).
	As     string `yaml:"as"`
	Method string `yaml:"method"`
	Path   string `yaml:"path"`
	Body   string `yaml:"body"`
}

// BuildSpec mirrors concoursesim.Build for add_builds.
type BuildSpec struct {
	Team     string   `yaml:"team"`
	Pipeline string   `yaml:"pipeline"`
	Job      string   `yaml:"job"`
	Status   string   `yaml:"status"`
	Count    int      `yaml:"count"`
	Worker   string   `yaml:"worker"`
	Age      Duration `yaml:"age"`
	Log      []string `yaml:"log"`
	Error    string   `yaml:"error"`
}

// FaultSpec mirrors concoursesim.Fault.
type FaultSpec struct {
	Method string   `yaml:"method"`
	Path   string   `yaml:"path"`
	Status int      `yaml:"status"`
	Body   string   `yaml:"body"`
	Times  int      `yaml:"times"`
	Delay  Duration `yaml:"delay"`
}

// DatabaseAction changes the simulated database.
type DatabaseAction struct {
	// Down makes every database operation fail (true) or work again (false).
	Down *bool `yaml:"down"`
	// Reap deletes the old logs of these tables (name or "team/pipeline"),
	// as Concourse's build reaper does: an older_than purge finds nothing.
	Reap []string `yaml:"reap"`
}

// Expect is what must hold at a checkpoint or at the end. Empty fields are
// not checked.
type Expect struct {
	// State is the latest run's state: running, awaiting_approval,
	// awaiting_manual, waiting, succeeded, failed or cancelled. "none"
	// means no run was started (e.g. the parameters were refused).
	State string `yaml:"state"`
	// At is the step the run is at (waiting for a person or a timer).
	At string `yaml:"at"`
	// Error is a substring of the run's error.
	Error string `yaml:"error"`
	// Steps maps step ids to their expected status, or to a mapping of
	// status, summary, error (substrings), by and approved_by.
	Steps map[string]StepExpect `yaml:"steps"`
	// Called lists operations that must have been called ("op", or
	// "op@step"); a destructive operation counts once it is applied, not
	// when only its plan was resolved.
	Called []string `yaml:"called"`
	// NotCalled lists operations that must not have been called.
	NotCalled []string `yaml:"not_called"`
	// Thread lists texts that must appear in some message of the run's
	// thread (any version of it, details included); NotThread texts must not.
	Thread    []string `yaml:"thread"`
	NotThread []string `yaml:"not_thread"`
	// Replies lists texts that must appear in a reply shown to one user
	// (refusals, command errors).
	Replies []string `yaml:"replies"`
	// World is the simulated Concourse after the inputs.
	World *WorldExpect `yaml:"world"`
	// Database maps a table ("pipeline_build_events_12") or its owner
	// ("team/pipeline") to expectations on the simulated database.
	Database map[string]TableExpect `yaml:"database"`
}

// StepExpect is the expected outcome of one step.
type StepExpect struct {
	Status     string   `yaml:"status"`
	Title      string   `yaml:"title"`
	Summary    string   `yaml:"summary"`
	Error      string   `yaml:"error"`
	By         string   `yaml:"by"`
	ApprovedBy []string `yaml:"approved_by"`
}

// UnmarshalYAML accepts a bare status ("succeeded") or a mapping.
func (s *StepExpect) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		s.Status = n.Value
		return nil
	}
	if err := checkKeys(n, "status", "title", "summary", "error", "by", "approved_by"); err != nil {
		return err
	}
	type plain StepExpect
	return n.Decode((*plain)(s))
}

// WorldExpect is the expected state of the simulated Concourse.
type WorldExpect struct {
	// Workers maps a worker name to its state, or "gone" (pruned/retired).
	Workers map[string]string `yaml:"workers"`
	// Builds counts job builds by status and optional filters.
	Builds []BuildsExpect `yaml:"builds"`
	// Pipelines maps "team/pipeline" to paused: true|false.
	Pipelines map[string]PipelineExpect `yaml:"pipelines"`
	// ResourceCaches maps "team/pipeline/resource" to its number of cached
	// versions.
	ResourceCaches map[string]int `yaml:"resource_caches"`
	// API maps "METHOD /path" (a trailing * matches a prefix), or
	// "METHOD /path by user", to how many such requests the simulator
	// received (from that user).
	API map[string]int `yaml:"api"`
}

// BuildsExpect is a count of job builds.
type BuildsExpect struct {
	Team     string `yaml:"team"`
	Pipeline string `yaml:"pipeline"`
	Job      string `yaml:"job"`
	Status   string `yaml:"status"`
	Count    *int   `yaml:"count"`
}

// PipelineExpect is the expected state of a pipeline.
type PipelineExpect struct {
	Paused *bool `yaml:"paused"`
}

// TableExpect is the expected state of a simulated build-log table.
type TableExpect struct {
	Rows *int64 `yaml:"rows"`
}

// Duration is written "30s", "21m", "1h30m" or "2d".
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration (e.g. 30s, 21m, 2h, 2d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a duration (e.g. 30s, 21m, 2h, 2d)", s)
	}
	return v, nil
}

// checkKeys rejects unknown keys of a mapping node (custom unmarshalers do
// not inherit the decoder's strictness).
func checkKeys(n *yaml.Node, allowed ...string) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: expected a mapping", n.Line)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, a := range allowed {
			ok = ok || a == k.Value
		}
		if !ok {
			msg := fmt.Sprintf("line %d: unknown field %q", k.Line, k.Value)
			if s := closest(k.Value, allowed); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			}
			return fmt.Errorf("%s (fields: %s)", msg, strings.Join(allowed, ", "))
		}
	}
	return nil
}

// closest returns the candidate nearest to s when it is a likely typo, or "".
func closest(s string, candidates []string) string { return textmodel.Suggest(s, candidates) }

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
