package concourse

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// WorkerData is one worker in result data (steps.<id>.result.workers[i],
// or the result of concourse.worker).
type WorkerData struct {
	Name string `json:"name"`
	// ID is the worker's ID under the target's workers.name template ("0"),
	// "" when the name does not follow it.
	ID string `json:"id"`
	// Ref is what to type after worker= to address exactly this worker:
	// the ID when there is one, else the full name.
	Ref        string   `json:"ref"`
	State      string   `json:"state"`
	Team       string   `json:"team"`
	Containers int      `json:"containers"`
	Volumes    int      `json:"volumes"`
	Platform   string   `json:"platform"`
	Tags       []string `json:"tags"`
	Version    string   `json:"version"`
	StartTime  int64    `json:"start_time"`
	AgeSeconds int64    `json:"age_seconds"`
	Age        string   `json:"age"`
	// Exists is false for a worker that is not registered.
	Exists bool `json:"exists"`
	// Ephemeral workers are removed by Concourse itself soon after they
	// stop heartbeating.
	Ephemeral bool `json:"ephemeral"`
	// AutoRemove says what Concourse does to the worker by itself
	// ("Concourse removes worker-1 by itself before 14:32 UTC unless it
	// heartbeats again": the target's stalled_worker_timeout, or an
	// ephemeral worker), "" when nothing. AutoRemoveAt is that time (unix
	// seconds, 0 when none) and AutoRemoveInSeconds how far it is (0 when
	// none, negative when it has passed).
	AutoRemove          string `json:"auto_remove"`
	AutoRemoveAt        int64  `json:"auto_remove_at"`
	AutoRemoveInSeconds int64  `json:"auto_remove_in_seconds"`
}

// WorkersData is the result of concourse.workers.
type WorkersData struct {
	Target   string         `json:"target"`
	Count    int            `json:"count"`
	Workers  []WorkerData   `json:"workers"`
	ByState  map[string]int `json:"by_state"`
	Running  []string       `json:"running"`
	Stalled  []string       `json:"stalled"`
	Landing  []string       `json:"landing"`
	Landed   []string       `json:"landed"`
	Retiring []string       `json:"retiring"`
}

func (d *WorkersData) names(state string) *[]string {
	switch state {
	case WorkerRunning:
		return &d.Running
	case WorkerStalled:
		return &d.Stalled
	case WorkerLanding:
		return &d.Landing
	case WorkerLanded:
		return &d.Landed
	case WorkerRetiring:
		return &d.Retiring
	}
	return nil
}

func (p *Provider) workerData(cl *Client, w Worker, now time.Time) WorkerData {
	d := since(now, w.Started())
	wd := WorkerData{
		Name: w.Name, ID: cl.naming.IDOf(w.Name), Ref: cl.naming.Ref(w.Name), State: w.State, Team: w.Team,
		Containers: w.ActiveContainers, Volumes: w.ActiveVolumes, Platform: w.Platform, Tags: listOrEmpty(w.Tags),
		Version: w.Version, StartTime: w.StartTime, AgeSeconds: seconds(d), Age: age(d), Exists: true, Ephemeral: w.Ephemeral,
	}
	if ar := cl.AutoRemoval(w, now); ar.Text != "" {
		wd.AutoRemove = ar.Text
		if !ar.Before.IsZero() {
			wd.AutoRemoveAt = ar.Before.Unix()
			wd.AutoRemoveInSeconds = int64(ar.Before.Sub(now).Round(time.Second) / time.Second)
		}
	}
	return wd
}

func (p *Provider) opWorkers() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.workers", Class: opmodel.ClassRead,
		Doc: "List workers with their state, containers and age (fly workers).",
		Args: []opmodel.ArgSpec{
			{Name: "state", Doc: "only workers in these states (running, stalled, landing, landed, retiring)"},
			{Name: "name", Doc: "only workers whose name matches this regular expression (anchored)"},
			{Name: "team", Doc: "only the workers these teams own (team workers; one or a list): a global worker is no team's"},
		},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			re, err := pattern(c.Args, "name")
			if err != nil {
				return opmodel.Result{}, err
			}
			sc := scopeOf(c)
			teams := c.Args.Strings("team")
			for _, t := range teams {
				if !sc.allows(t) {
					return opmodel.Result{}, sc.refuse(cl, "team=")
				}
			}
			want := c.Args.Strings("state")
			ws, err := cl.Workers(ctx)
			if err != nil {
				return opmodel.Result{}, err
			}
			now := p.opts.Now()
			byState := map[string]int{}
			data := WorkersData{Target: cl.Name(), Workers: []WorkerData{}, ByState: byState}
			table := &opmodel.Table{Columns: []string{"name", "state", "containers", "age"}, Noun: "workers"}
			for _, w := range ws {
				if !matchRe(re, w.Name) || (len(want) > 0 && !contains(want, w.State)) || !sc.worker(w) || (len(teams) > 0 && !contains(teams, w.Team)) {
					continue
				}
				byState[w.State]++
				if l := data.names(w.State); l != nil {
					*l = append(*l, w.Name)
				}
				data.Workers = append(data.Workers, p.workerData(cl, w, now))
				table.Rows = append(table.Rows, []string{w.Name, w.State, strconv.Itoa(w.ActiveContainers), age(since(now, w.Started()))})
			}
			data.Count = len(data.Workers)
			for _, s := range WorkerStates {
				byState[s] += 0
				l := data.names(s)
				*l = listOrEmpty(*l)
			}
			summary := countsLine(byState, WorkerStates)
			if summary == "" {
				// Of the workers the call may see: another team's are
				// neither named nor counted.
				seen := slices.DeleteFunc(ws, func(w Worker) bool { return !sc.worker(w) || (len(teams) > 0 && !contains(teams, w.Team)) })
				summary = noWorkersLine(c.Args.String("name"), want, seen)
				if len(teams) > 0 && len(seen) == 0 {
					summary = "no worker of " + teamList(teams)
				}
			}
			var auto []string
			for _, w := range data.Workers {
				if w.AutoRemove != "" && w.State == WorkerStalled {
					auto = append(auto, w.AutoRemove)
				}
			}
			return opmodel.Result{Summary: summary, Table: table, Data: data, Warn: byState[WorkerStalled] > 0, Detail: strings.Join(auto, "\n")}, nil
		},
	}
}

// noWorkersLine says that a listing matched no worker, speaking of what
// was asked only: one worker by name ("worker-1 is not registered",
// "worker-1 is running, not stalled"), a pattern, states — never "no
// workers registered" while others are.
func noWorkersLine(name string, states []string, ws []Worker) string {
	if name != "" && regexp.QuoteMeta(name) == name {
		for _, w := range ws {
			if w.Name == name {
				return fmt.Sprintf("%s is %s, not %s", name, w.State, strings.Join(states, " or "))
			}
		}
		return name + " is not registered"
	}
	if len(ws) == 0 {
		return "no workers registered"
	}
	var what []string
	if name != "" {
		what = append(what, "matches "+name)
	}
	if len(states) > 0 {
		what = append(what, "is "+strings.Join(states, " or "))
	}
	return fmt.Sprintf("no worker %s (%s registered)", strings.Join(what, " and "), plural(len(ws), "worker"))
}

func (p *Provider) opWorker() opmodel.Op {
	return opmodel.Op{
		Name: "concourse.worker", Class: opmodel.ClassRead,
		Doc:  "Read one worker; result.exists is false once it is gone (use in wait steps: until result.state == \"running\").",
		Args: []opmodel.ArgSpec{{Name: "name", Doc: "worker name", Required: true}},
		Do: func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
			cl, err := p.client(c)
			if err != nil {
				return opmodel.Result{}, err
			}
			name := c.Args.String("name")
			if name == "" {
				return opmodel.Result{}, errors.New("argument \"name\" is required: the worker's name as listed by concourse.workers")
			}
			w, err := cl.Worker(ctx, name)
			if errors.Is(err, ErrNotFound) {
				return opmodel.Result{
					Summary: fmt.Sprintf("%s is not registered", name),
					Data:    WorkerData{Name: name, ID: cl.naming.IDOf(name), Ref: cl.naming.Ref(name), Tags: []string{}},
				}, nil
			}
			if err != nil {
				return opmodel.Result{}, err
			}
			if sc := scopeOf(c); !sc.worker(w) {
				return opmodel.Result{}, sc.refuse(cl, "the worker's team:")
			}
			now := p.opts.Now()
			// (what Concourse does by itself is in the data, auto_remove:
			// a wait polls this every 30 s and need not repeat it)
			return opmodel.Result{
				Summary: fmt.Sprintf("%s is %s (%d containers, up %s)", w.Name, w.State, w.ActiveContainers, age(since(now, w.Started()))),
				Data:    p.workerData(cl, w, now), Warn: w.State == WorkerStalled,
			}, nil
		},
	}
}

// workerNames reads the name argument (one name or a list).
func workerNames(a opmodel.Args) []string { return a.Strings("name") }

func workerItem(w Worker, now time.Time) opmodel.PlanItem {
	detail := fmt.Sprintf("%s, %d containers, up %s", w.State, w.ActiveContainers, age(since(now, w.Started())))
	if w.Team != "" {
		detail = "team " + w.Team + "'s, " + detail
	}
	return opmodel.PlanItem{
		Kind: "worker", ID: w.Name,
		// A global worker's team is "": the target's policy covers it.
		Attrs:  map[string]string{"state": w.State, opmodel.AttrTeam: w.Team},
		Detail: detail,
	}
}

// planWorkers resolves named workers, keeping those accept allows; the
// others become notes. When the call re-resolves an approved plan, each
// approved worker it no longer includes is said in Plan.Found: gone (no
// longer registered), or as moved says of its state now.
func (p *Provider) planWorkers(ctx context.Context, c opmodel.Call, op string, accept func(Worker) string, moved func(Worker) string) (opmodel.Plan, error) {
	cl, err := p.client(c)
	if err != nil {
		return opmodel.Plan{}, err
	}
	names := workerNames(c.Args)
	all := c.Args.Bool("all_stalled")
	if len(names) == 0 && !all {
		return opmodel.Plan{}, fmt.Errorf("%s: give name=<worker> (see concourse.workers)", op)
	}
	ws, err := cl.Workers(ctx)
	if err != nil {
		return opmodel.Plan{}, err
	}
	now := p.opts.Now()
	plan := opmodel.Plan{Op: op, Target: cl.Name()}
	byName := map[string]Worker{}
	sc := scopeOf(c)
	global := 0
	for _, w := range ws {
		byName[w.Name] = w
		if !all || w.State != WorkerStalled || contains(names, w.Name) || !sc.worker(w) {
			continue
		}
		if sc != nil && w.Team == "" {
			// A call scoped to teams changes only their own workers: a
			// global worker is no team's.
			global++
			continue
		}
		names = append(names, w.Name)
	}
	if global > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s of no team (global) not included: the run's channel may change only the workers of %s", plural(global, "stalled worker"), teamList(sc)))
	}
	for _, n := range names {
		w, ok := byName[n]
		if !ok {
			plan.Notes = append(plan.Notes, fmt.Sprintf("worker %s is not registered (already pruned or retired?); skipped", n))
			continue
		}
		if !sc.worker(w) {
			plan.Notes = append(plan.Notes, fmt.Sprintf("worker %s belongs to a team the run's channel may not act on; skipped", n))
			continue
		}
		if why := accept(w); why != "" {
			plan.Notes = append(plan.Notes, why)
			continue
		}
		plan.Items = append(plan.Items, workerItem(w, now))
		if ar := cl.AutoRemoval(w, now); ar.Text != "" {
			plan.Notes = append(plan.Notes, ar.Text)
		}
	}
	for _, it := range c.Gone(plan) {
		f := opmodel.Found{Kind: it.Kind, ID: it.ID, Text: cl.workerGone(it.ID), Gone: true}
		if w, ok := byName[it.ID]; ok {
			f.Text, f.Gone = moved(w), false
		}
		plan.Found = append(plan.Found, f)
	}
	return plan, nil
}

// autoRemovalNotes are the notes of a worker plan that say when Concourse
// removes a worker by itself.
func autoRemovalNotes(pl opmodel.Plan) []string {
	var out []string
	for _, n := range pl.Notes {
		if strings.HasPrefix(n, "Concourse removes ") || strings.HasPrefix(n, "Concourse should have removed ") {
			out = append(out, n)
		}
	}
	return out
}

func planItemNames(pl opmodel.Plan) []string {
	out := make([]string, 0, len(pl.Items))
	for _, it := range pl.Items {
		out = append(out, it.ID)
	}
	return out
}

func (p *Provider) opPruneWorker() opmodel.Op {
	const op = "concourse.prune_worker"
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc: "Prune workers that are not running (fly prune-worker): stalled, landing, landed or retiring.",
		Args: []opmodel.ArgSpec{
			{Name: "name", Doc: "worker name, or a list of names"},
			{Name: "all_stalled", Doc: "true to prune every stalled worker (fly prune-worker --all-stalled)"},
		},
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			pl, err := p.planWorkers(ctx, c, op, func(w Worker) string {
				if w.State == WorkerRunning {
					return fmt.Sprintf("worker %s is running; Concourse refuses to prune running workers (land it or stop its process first); skipped", w.Name)
				}
				return ""
			}, func(w Worker) string {
				return w.Name + " is running again: it heartbeats again (Concourse refuses to prune a running worker)"
			})
			if err != nil {
				return pl, err
			}
			pl.Summary = "nothing to prune"
			if !pl.Empty() {
				pl.Summary = fmt.Sprintf("prune %s: %s", plural(len(pl.Items), "worker"), strings.Join(planItemNames(pl), ", "))
				// what Concourse does by itself meanwhile, where the request
				// is listed (the gate, /runbook status, escalations)
				if auto := autoRemovalNotes(pl); len(auto) == 1 && len(pl.Items) == 1 {
					pl.Summary += " — " + auto[0]
				}
			}
			return pl, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			res, d, err := p.applyWorkers(ctx, c, pl, "prune", func(cl *Client, it opmodel.PlanItem) error {
				return cl.PruneWorker(ctx, it.ID)
			}, func(w *Worker, found bool) (bool, string) {
				if found {
					return false, "still listed after the prune"
				}
				return true, "pruned"
			})
			res.Data = PruneData{d, d.Done}
			return res, err
		},
	}
}

func (p *Provider) opLandWorker() opmodel.Op {
	const op = "concourse.land_worker"
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc:  "Land workers (fly land-worker): they take no new work and become landed once their builds finish; restart the worker process to bring one back.",
		Args: []opmodel.ArgSpec{{Name: "name", Doc: "worker name, or a list of names", Required: true}},
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			pl, err := p.planWorkers(ctx, c, op, func(w Worker) string {
				switch w.State {
				case WorkerLanded, WorkerLanding:
					return fmt.Sprintf("worker %s is already %s; skipped", w.Name, w.State)
				case WorkerRetiring:
					return fmt.Sprintf("worker %s is retiring; landing it would not help; skipped", w.Name)
				}
				return ""
			}, func(w Worker) string {
				if w.State == WorkerRetiring {
					return w.Name + " is retiring now (someone retired it): landing it would not help"
				}
				return w.Name + " is already " + w.State
			})
			if err != nil {
				return pl, err
			}
			pl.Summary = "nothing to land"
			if !pl.Empty() {
				pl.Summary = fmt.Sprintf("land %s: %s", plural(len(pl.Items), "worker"), strings.Join(planItemNames(pl), ", "))
			}
			return pl, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			res, d, err := p.applyWorkers(ctx, c, pl, "land", func(cl *Client, it opmodel.PlanItem) error {
				return cl.LandWorker(ctx, it.ID, it.Attrs["team"])
			}, func(w *Worker, found bool) (bool, string) {
				if !found {
					return false, "no longer registered"
				}
				return w.State == WorkerLanding || w.State == WorkerLanded, "now " + w.State
			})
			res.Data = LandData{d, d.Done}
			return res, err
		},
	}
}

func (p *Provider) opRetireWorker() opmodel.Op {
	const op = "concourse.retire_worker"
	return opmodel.Op{
		Name: op, Class: opmodel.ClassDestructive,
		Doc:  "Retire workers: they take no new work and are deleted once their builds finish (for workers that will not come back with the same disk).",
		Args: []opmodel.ArgSpec{{Name: "name", Doc: "worker name, or a list of names", Required: true}},
		Plan: func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
			pl, err := p.planWorkers(ctx, c, op, func(w Worker) string {
				if w.State == WorkerRetiring {
					return fmt.Sprintf("worker %s is already retiring; skipped", w.Name)
				}
				return ""
			}, func(w Worker) string {
				return w.Name + " is already " + w.State
			})
			if err != nil {
				return pl, err
			}
			pl.Summary = "nothing to retire"
			if !pl.Empty() {
				pl.Summary = fmt.Sprintf("retire %s: %s", plural(len(pl.Items), "worker"), strings.Join(planItemNames(pl), ", "))
			}
			return pl, nil
		},
		Apply: func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
			res, d, err := p.applyWorkers(ctx, c, pl, "retire", func(cl *Client, it opmodel.PlanItem) error {
				return cl.RetireWorker(ctx, it.ID, it.Attrs["team"])
			}, func(w *Worker, found bool) (bool, string) {
				if !found {
					return true, "retired and removed"
				}
				return w.State == WorkerRetiring, "now " + w.State
			})
			res.Data = RetireData{d, d.Done}
			return res, err
		},
	}
}

// WorkerChangeData is the result data common to prune, land and retire.
type WorkerChangeData struct {
	Done        []string `json:"done"`
	AlreadyDone []string `json:"already_done"`
	Failed      []string `json:"failed"`
	// States are the workers' states read back after the change (no entry
	// for a worker that is gone).
	States map[string]string `json:"states"`
}

// PruneData is the result of concourse.prune_worker.
type PruneData struct {
	WorkerChangeData
	Pruned []string `json:"pruned"`
}

// LandData is the result of concourse.land_worker.
type LandData struct {
	WorkerChangeData
	Landed []string `json:"landed"`
}

// RetireData is the result of concourse.retire_worker.
type RetireData struct {
	WorkerChangeData
	Retired []string `json:"retired"`
}

// applyWorkers runs act on each plan item, then lists the workers once to
// verify each outcome with check. The caller wraps the data in its type.
func (p *Provider) applyWorkers(ctx context.Context, c opmodel.Call, pl opmodel.Plan, verb string,
	act func(*Client, opmodel.PlanItem) error, check func(w *Worker, found bool) (bool, string)) (opmodel.Result, WorkerChangeData, error) {
	data := WorkerChangeData{Done: []string{}, AlreadyDone: []string{}, Failed: []string{}, States: map[string]string{}}
	cl, err := p.client(c)
	if err != nil {
		return opmodel.Result{}, data, err
	}
	res := opmodel.Result{}
	done := map[string]bool{}
	for _, it := range pl.Items {
		err := act(cl, it)
		var se *StatusError
		switch {
		case err == nil:
			done[it.ID] = true
		case errors.Is(err, ErrNotFound) && verb != "land":
			res.Items = append(res.Items, itemResult(it.ID, opmodel.OutcomeAlreadyDone, "already gone"))
		case errors.As(err, &se) && se.Code == http.StatusBadRequest && verb == "prune":
			res.Items = append(res.Items, itemResult(it.ID, opmodel.OutcomeFailed,
				"Concourse refused: "+se.Reason()+" (its heartbeat resumed since the plan; nothing was pruned)"))
		default:
			res.Items = append(res.Items, itemResult(it.ID, opmodel.OutcomeFailed, err.Error()))
		}
	}
	if len(done) > 0 {
		items, err := p.verifyWorkers(ctx, cl, pl, done, verb, check, data.States)
		if err != nil {
			return opmodel.Result{}, data, err
		}
		res.Items = append(res.Items, items...)
	}
	counts := map[opmodel.ItemOutcome]int{}
	for _, it := range res.Items {
		switch it.Outcome {
		case opmodel.OutcomeSucceeded:
			data.Done = append(data.Done, it.ID)
		case opmodel.OutcomeAlreadyDone:
			data.AlreadyDone = append(data.AlreadyDone, it.ID)
		default:
			data.Failed = append(data.Failed, it.ID)
		}
		counts[it.Outcome]++
	}
	past := pastTense(verb)
	res.Summary = fmt.Sprintf("%s %s", past, plural(counts[opmodel.OutcomeSucceeded], "worker"))
	if n := counts[opmodel.OutcomeSucceeded]; n > 0 && n <= 3 {
		res.Summary += ": " + strings.Join(data.Done, ", ")
	}
	if n := counts[opmodel.OutcomeAlreadyDone]; n > 0 {
		res.Summary += fmt.Sprintf("; %d already gone", n)
	}
	if n := counts[opmodel.OutcomeFailed]; n > 0 {
		res.Warn = true
		res.Summary += fmt.Sprintf("; %d failed", n)
		if counts[opmodel.OutcomeSucceeded] == 0 && counts[opmodel.OutcomeAlreadyDone] == 0 {
			return res, data, fmt.Errorf("%s: %s failed for every worker: %s", cl.Name(), verb, res.Failed()[0].Reason)
		}
	}
	return res, data, nil
}

func pastTense(verb string) string {
	return map[string]string{"prune": "pruned", "land": "landed", "retire": "retired"}[verb]
}

// WorkerVerifyTimeout bounds how long a prune, land or retire is verified
// by listing the workers again. The list is served from the web node's
// worker cache, refreshed by database notifications: on Concourse 8.2.5 a
// pruned worker stayed listed for about a second after the 200.
const WorkerVerifyTimeout = 15 * time.Second

// workerVerifyDelay is the first pause between two listings; it doubles
// up to workerVerifyMaxDelay.
const (
	workerVerifyDelay    = 250 * time.Millisecond
	workerVerifyMaxDelay = 2 * time.Second
)

// verifyWorkers lists the workers until check accepts every changed one,
// with backoff between listings, for at most WorkerVerifyTimeout. A worker
// the list caught up with late says how long it lagged ("pruned; Concourse
// listed it for 1.8 s more"); one still wrong at the end fails with what
// was seen. One listing serves every worker of the call.
func (p *Provider) verifyWorkers(ctx context.Context, cl *Client, pl opmodel.Plan, done map[string]bool, verb string,
	check func(w *Worker, found bool) (bool, string), states map[string]string) ([]opmodel.ItemResult, error) {
	start, realStart := cl.now(), time.Now()
	waiting := map[string]string{} // name -> last reason
	for _, it := range pl.Items {
		if done[it.ID] {
			waiting[it.ID] = ""
		}
	}
	outcome := map[string]opmodel.ItemResult{}
	delay := workerVerifyDelay
	for round := 0; len(waiting) > 0; round++ {
		if round > 0 {
			if err := cl.sleep(ctx, delay); err != nil {
				return nil, fmt.Errorf("verifying the %s: %w", verb, err)
			}
			delay = min(delay*2, workerVerifyMaxDelay)
		}
		ws, err := cl.Workers(ctx)
		if err != nil {
			return nil, fmt.Errorf("verifying the %s: %w", verb, err)
		}
		byName := map[string]*Worker{}
		for i := range ws {
			byName[ws[i].Name] = &ws[i]
		}
		lag := cl.now().Sub(start)
		if real := time.Since(realStart); real > lag {
			lag = real
		}
		for name := range waiting {
			w, found := byName[name]
			if found {
				states[name] = w.State
			} else {
				delete(states, name)
			}
			ok, why := check(w, found)
			if !ok {
				waiting[name] = why
				continue
			}
			if round > 0 {
				why += fmt.Sprintf("; Concourse listed it as before for %s more", secondsText(lag))
				if verb == "prune" {
					why = fmt.Sprintf("pruned; Concourse listed it for %s more", secondsText(lag))
				}
			}
			outcome[name] = itemResult(name, opmodel.OutcomeSucceeded, why)
			delete(waiting, name)
		}
		if len(waiting) > 0 && lag >= WorkerVerifyTimeout {
			for name, why := range waiting {
				outcome[name] = itemResult(name, opmodel.OutcomeFailed, fmt.Sprintf("%s (checked for %s)", why, secondsText(lag)))
			}
			break
		}
	}
	var out []opmodel.ItemResult
	for _, it := range pl.Items {
		if r, ok := outcome[it.ID]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// secondsText says a short duration in seconds, to a tenth below 10 s
// ("1.8 s", "12 s").
func secondsText(d time.Duration) string {
	if d < 10*time.Second {
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return strconv.Itoa(int(d.Round(time.Second).Seconds())) + " s"
}
