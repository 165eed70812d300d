package opmodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// Class says what an operation may do. The engine forces an approval gate
// before every Destructive operation, whatever the runbook says.
type Class string

// Operation classes.
const (
	ClassRead        Class = "read"
	ClassWrite       Class = "write"
	ClassDestructive Class = "destructive"
)

// ArgSpec describes one argument of an operation.
type ArgSpec struct {
	Name     string
	Doc      string
	Required bool
}

// Op is an operation a provider registers with the engine.
//
// Read and write operations implement Do. Destructive operations implement
// Plan and Apply: Plan resolves the exact objects the call would touch (and
// must not change anything); Apply changes exactly the objects of the plan it
// is given, never re-deriving them from the arguments. Write operations may
// implement Plan too, so an interrupted call can be reconciled. A write or
// destructive call that fails before changing anything returns its error
// through Unchanged, so the run does not list it as attempted.
type Op struct {
	Name  string // "concourse.prune_worker"
	Class Class
	Doc   string
	Args  []ArgSpec
	Do    func(ctx context.Context, c Call) (Result, error)
	Plan  func(ctx context.Context, c Call) (Plan, error)
	Apply func(ctx context.Context, c Call, p Plan) (Result, error)
	// TeamRole is the Concourse role (owner, member, pipeline-operator,
	// viewer) a person needs on the team of what the call changes, on a
	// target whose authority is Concourse: what Concourse itself asks for
	// the same change; "" when Concourse roles do not apply.
	TeamRole string
	// Teams, set on write operations of a provider with teams (Concourse),
	// returns the teams whose things the call would change, without
	// changing anything: the engine checks who may act on them before the
	// call. A destructive operation says it in its plan (PlanItem.Team).
	Teams func(ctx context.Context, c Call) ([]string, error)
	// Owner, set on write and destructive operations of a provider with
	// teams, says whose things the operation can change, known before any
	// call: a channel bound to teams is offered only the runbooks whose
	// changes can be its teams' ("" is not said: offered).
	Owner Owner
}

// Owner says whose things a changing operation can change.
type Owner string

// Owners of the things an operation changes.
const (
	// OwnerTeam: always one team's (a build, a pipeline, a cache, a
	// pipeline's build logs).
	OwnerTeam Owner = "team"
	// OwnerWorker: a worker, a team's own (a team worker) or no team's (a
	// global worker): a team without workers of its own has none to change.
	OwnerWorker Owner = "worker"
	// OwnerNone: never a team's (the whole target's things).
	OwnerNone Owner = "none"
)

// Call is one invocation of an operation.
type Call struct {
	// Target is the Concourse target the run acts on ("infra-prd").
	Target string
	Args   Args
	RunID  string
	StepID string
	// Teams, when not nil, are the only Concourse teams the call may act
	// on or name (the run's channel is bound to them): operations refuse
	// another team and never suggest or list one. Nil: every team.
	Teams []string
	// Approved, when set, is the plan a person approved, and the call is
	// its re-resolution right before executing it: Plan says in
	// Plan.Found, for each object of Approved it no longer includes, what
	// it found instead (Call.Gone lists them).
	Approved *Plan
	// Progress, when set, shows how a long call is going in its step
	// message ("aborting 1,200 / 5,000 · 310/s"). The engine rate-limits
	// it; operations call Report, which is safe from any goroutine.
	Progress func(text string)
}

// Report passes a progress line to the engine (nothing when there is no
// Progress callback).
func (c Call) Report(text string) {
	if c.Progress != nil {
		c.Progress(text)
	}
}

// Args are resolved operation arguments (templates already rendered).
type Args map[string]any

// String returns the argument as a string ("" when absent).
func (a Args) String(k string) string {
	v, ok := a[k]
	if !ok || v == nil {
		return ""
	}
	switch t := v.(type) {
	case string:
		return t
	default:
		return fmt.Sprint(t)
	}
}

// Int returns the argument as an int, or def when absent or empty.
func (a Args) Int(k string, def int) (int, error) {
	v, ok := a[k]
	if !ok || v == nil || v == "" {
		return def, nil
	}
	switch t := v.(type) {
	case int:
		return t, nil
	case int64:
		return int(t), nil
	case float64:
		return int(t), nil
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return 0, fmt.Errorf("argument %q: %q is not a whole number", k, t)
		}
		return n, nil
	}
	return 0, fmt.Errorf("argument %q: %v is not a whole number", k, v)
}

// Bool returns the argument as a bool.
func (a Args) Bool(k string) bool {
	switch t := a[k].(type) {
	case bool:
		return t
	case string:
		b, _ := strconv.ParseBool(strings.TrimSpace(t))
		return b
	}
	return false
}

// Duration returns the argument as a duration ("24h", "90m"), or def.
func (a Args) Duration(k string, def time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(a.String(k))
	if s == "" {
		return def, nil
	}
	if strings.HasSuffix(s, "d") {
		n, err := strconv.Atoi(strings.TrimSuffix(s, "d"))
		if err == nil {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("argument %q: %q is not a duration (e.g. 30m, 24h, 7d)", k, s)
	}
	return d, nil
}

// Strings returns a list argument; a string is split on commas and spaces.
func (a Args) Strings(k string) []string {
	switch t := a[k].(type) {
	case []string:
		return t
	case []any:
		out := make([]string, 0, len(t))
		for _, v := range t {
			out = append(out, fmt.Sprint(v))
		}
		return out
	case string:
		return strings.FieldsFunc(t, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	}
	return nil
}

// AttrTeam is the attribute of a plan item that names the Concourse team
// the item belongs to (a pipeline's, a build's, a team worker's); a global
// worker, a database table have none. It is hashed like every attribute:
// an approval binds to the teams of its plan.
const AttrTeam = "team"

// PlanItem is one object a gated operation will touch.
type PlanItem struct {
	Kind string `json:"kind"` // "worker", "build", "pipeline", "table"
	ID   string `json:"id"`   // the exact identity: worker name, build id, table name
	// Attrs are facts the approval binds to (team, pipeline, state); they are
	// part of the plan hash.
	Attrs map[string]string `json:"attrs,omitempty"`
	// Detail is for humans ("stalled, 236 containers, last seen 41 min ago");
	// it is not hashed, so a changing age does not void an approval.
	Detail string `json:"detail,omitempty"`
}

// Team returns the Concourse team the item belongs to ("" for none: a
// global worker, a table).
func (it PlanItem) Team() string { return it.Attrs[AttrTeam] }

// Plan is the resolved effect of a gated call.
type Plan struct {
	Op     string     `json:"op"`
	Target string     `json:"target"`
	Items  []PlanItem `json:"items"`
	// Summary is one line for humans ("prune 1 worker"). Not hashed.
	Summary string `json:"summary"`
	// Notes are warnings and context for humans. Not hashed.
	Notes []string `json:"notes,omitempty"`
	// Found says what a re-resolution (Call.Approved) found of the
	// approved objects it no longer includes. Not hashed.
	Found []Found `json:"found,omitempty"`
}

// Hash is the hex SHA-256 of what the plan binds: op, target and items
// (kind, id, attrs), in a canonical order.
func (p Plan) Hash() string {
	type item struct {
		Kind  string     `json:"k"`
		ID    string     `json:"i"`
		Attrs [][]string `json:"a,omitempty"`
	}
	items := make([]item, 0, len(p.Items))
	for _, it := range p.Items {
		keys := make([]string, 0, len(it.Attrs))
		for k := range it.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var attrs [][]string
		for _, k := range keys {
			attrs = append(attrs, []string{k, it.Attrs[k]})
		}
		items = append(items, item{it.Kind, it.ID, attrs})
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].Kind != items[j].Kind {
			return items[i].Kind < items[j].Kind
		}
		return items[i].ID < items[j].ID
	})
	b, _ := json.Marshal(struct {
		Op     string `json:"op"`
		Target string `json:"target"`
		Items  []item `json:"items"`
	}{p.Op, p.Target, items})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Teams returns the Concourse teams the plan's items belong to, sorted,
// each once ("" not included).
func (p Plan) Teams() []string {
	var out []string
	for _, it := range p.Items {
		if t := it.Team(); t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

// Teamless reports whether some item of the plan belongs to no team (a
// global worker, a table): the target's policy, not a team's, covers it.
func (p Plan) Teamless() bool {
	for _, it := range p.Items {
		if it.Team() == "" {
			return true
		}
	}
	return false
}

// Empty reports whether the plan touches nothing.
func (p Plan) Empty() bool { return len(p.Items) == 0 }

// Table is tabular output rendered in the thread.
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
	// Noun names what the rows are, in the plural ("builds"): a step whose
	// table and details are those of an earlier step of the run says "the
	// same 4 builds as step 1/6 above" instead of posting them again. ""
	// reads "rows".
	Noun string `json:"noun,omitempty"`
}

// ItemResult is the outcome for one object of a bulk operation.
type ItemResult struct {
	ID      string      `json:"id"`
	Outcome ItemOutcome `json:"outcome"`
	Reason  string      `json:"reason,omitempty"`
}

// ItemOutcome is what a write or destructive call did to one item of its
// plan. Stored as a string.
type ItemOutcome string

// Item outcomes.
const (
	OutcomeSucceeded   ItemOutcome = "succeeded"
	OutcomeAlreadyDone ItemOutcome = "already_done" // nothing to do: the item was already in the wanted state
	OutcomeFailed      ItemOutcome = "failed"
)

// Result is what an operation returns.
type Result struct {
	// Summary is one line shown next to the step title ("3 running, 1 stalled").
	Summary string `json:"summary"`
	Table   *Table `json:"table,omitempty"`
	// Detail is long text shown one tap away.
	Detail string `json:"detail,omitempty"`
	// Data is exposed to later steps as steps.<id>.result. It must marshal
	// to JSON: the engine stores it and later steps see the decoded form.
	Data  any          `json:"data,omitempty"`
	Items []ItemResult `json:"items,omitempty"`
	// Warn marks a result that needs attention (shown with ⚠).
	Warn bool `json:"warn,omitempty"`
}

// Failed returns the items that failed.
func (r Result) Failed() []ItemResult {
	var out []ItemResult
	for _, it := range r.Items {
		if it.Outcome == OutcomeFailed {
			out = append(out, it)
		}
	}
	return out
}

// Provider is a set of operations (Concourse, PostgreSQL, core).
type Provider interface {
	Ops() []Op
}

// Registry holds the operations the engine may call. It implements
// runbooks.Catalog. It is safe for concurrent use.
type Registry struct {
	mu  sync.RWMutex
	ops map[string]Op
}

// NewRegistry returns a registry with the given providers' operations.
func NewRegistry(providers ...Provider) (*Registry, error) {
	r := &Registry{ops: map[string]Op{}}
	for _, p := range providers {
		if err := r.Register(p.Ops()...); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Register adds operations; it refuses duplicates and inconsistent ops.
func (r *Registry) Register(ops ...Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, op := range ops {
		if op.Name == "" || !strings.Contains(op.Name, ".") {
			return fmt.Errorf("operation %q: name must be provider.op", op.Name)
		}
		if _, dup := r.ops[op.Name]; dup {
			return fmt.Errorf("operation %q registered twice", op.Name)
		}
		switch op.Class {
		case ClassRead, ClassWrite:
			if op.Do == nil {
				return fmt.Errorf("operation %q: %s operations need Do", op.Name, op.Class)
			}
		case ClassDestructive:
			if op.Plan == nil || op.Apply == nil {
				return fmt.Errorf("operation %q: destructive operations need Plan and Apply", op.Name)
			}
		default:
			return fmt.Errorf("operation %q: unknown class %q", op.Name, op.Class)
		}
		r.ops[op.Name] = op
	}
	return nil
}

// Get returns an operation by name.
func (r *Registry) Get(name string) (Op, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	op, ok := r.ops[name]
	return op, ok
}

// List returns all operations sorted by name.
func (r *Registry) List() []Op {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Op, 0, len(r.ops))
	for _, op := range r.ops {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the operation names, sorted (for "did you mean").
func (r *Registry) Names() []string {
	ops := r.List()
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = op.Name
	}
	return out
}

// Lookup implements runbooks.Catalog.
func (r *Registry) Lookup(name string) (runbookmodel.OpInfo, bool) {
	op, ok := r.Get(name)
	if !ok {
		return runbookmodel.OpInfo{}, false
	}
	info := runbookmodel.OpInfo{Name: op.Name, Class: string(op.Class)}
	for _, a := range op.Args {
		info.Args = append(info.Args, runbookmodel.ArgInfo{Name: a.Name, Required: a.Required})
	}
	return info, true
}
