package scenario

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/adapters/chatutil"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// channel is where scenario runs happen.
var channel = chatmodel.Conversation{Platform: "scenario", Channel: "C-ops"}

func user(name string) chatmodel.User { return chatmodel.User{ID: name, Name: name} }

// apply performs one input and returns what went wrong.
func (e *env) apply(in *Input) []string {
	kind, _ := in.kind()
	var err error
	switch kind {
	case "run":
		err = e.startRun(in)
	case "command":
		err = e.command(in.As, in.In, in.Command)
	case "react":
		err = e.react(in.As, in.Step, chatutil.IntentOf(in.React), false)
	case "approve":
		intent := chatmodel.IntentApprove
		if !*in.Approve {
			intent = chatmodel.IntentReject
		}
		err = e.react(in.As, "", intent, true)
	case "done":
		err = e.react(in.As, in.Done, chatmodel.IntentDone, false)
	case "skip":
		err = e.react(in.As, in.Skip, chatmodel.IntentSkip, false)
	case "fail":
		err = e.react(in.As, in.Fail, chatmodel.IntentFail, false)
	case "advance":
		err = e.advance(in.Advance.D())
	case "world":
		err = e.changeWorld(in.World)
	case "restart":
		err = e.restart()
	case "expect":
		var out []string
		for _, f := range e.check(in.Expect) {
			out = append(out, "checkpoint: "+f)
		}
		return out
	}
	if err != nil {
		return []string{err.Error()}
	}
	return nil
}

func (e *env) handle(ev chatmodel.Event) error {
	if err := e.eng.Handle(e.ctx, ev); err != nil {
		return fmt.Errorf("the engine refused the event: %w", err)
	}
	return e.idle()
}

// startRun types "/runbook run …" and remembers the run it started.
func (e *env) startRun(in *Input) error {
	before := map[string]bool{}
	runs, err := e.store.ListRuns(e.ctx, runmodel.RunQuery{})
	if err != nil {
		return err
	}
	for _, r := range runs {
		before[r.ID] = true
	}
	if err := e.handle(chatmodel.Event{Kind: chatmodel.EventCommand, User: user(in.As), Conversation: typedIn(in.In), Text: "run " + in.Run}); err != nil {
		return err
	}
	runs, err = e.store.ListRuns(e.ctx, runmodel.RunQuery{})
	if err != nil {
		return err
	}
	for _, r := range runs {
		if !before[r.ID] {
			e.runs = append(e.runs, r.ID)
		}
	}
	return nil // a refused run is checked by expect (state: none, replies)
}

// typedIn is the conversation of a command typed in channel ("": the
// scenario's).
func typedIn(ch string) chatmodel.Conversation {
	if ch == "" {
		return channel
	}
	return chatmodel.Conversation{Platform: channel.Platform, Channel: ch}
}

// command types any /runbook command; {run} is the latest run's id.
func (e *env) command(as, in, text string) error {
	if strings.Contains(text, "{run}") {
		if len(e.runs) == 0 {
			return fmt.Errorf("command %q: {run} names the latest run, but no run was started", text)
		}
		text = strings.ReplaceAll(text, "{run}", e.runs[len(e.runs)-1])
	}
	return e.handle(chatmodel.Event{Kind: chatmodel.EventCommand, User: user(as), Conversation: typedIn(in), Text: text})
}

// current returns the latest run.
func (e *env) current() (*runmodel.Run, error) {
	if len(e.runs) == 0 {
		return nil, fmt.Errorf("no run was started (replies: %s)", e.replies())
	}
	return e.store.GetRun(e.ctx, e.runs[len(e.runs)-1])
}

// where says what a run waits for, for error messages.
func where(r *runmodel.Run) string {
	if r.State.Terminal() {
		msg := "the run is " + string(r.State)
		if r.Error != "" {
			msg += " (" + r.Error + ")"
		}
		return msg
	}
	if r.Cursor >= 0 && r.Cursor < len(r.Steps) {
		st := r.Steps[r.Cursor]
		return fmt.Sprintf("the run is %s at step %s (%s)", r.State, st.ID, st.Status)
	}
	return "the run is " + string(r.State)
}

// react adds a reaction to the message of step (or of whatever the run
// waits for). gate requires an open approval request.
func (e *env) react(as, step string, intent chatmodel.Intent, gate bool) error {
	r, err := e.current()
	if err != nil {
		return err
	}
	var ref chatmodel.MessageRef
	switch {
	case gate || (step == "" && r.Gate != nil && r.Gate.Decision == runmodel.GatePending):
		if r.Gate == nil || r.Gate.Decision != runmodel.GatePending {
			return fmt.Errorf("no approval request is open: %s", where(r))
		}
		if step != "" && r.Gate.StepID != step {
			return fmt.Errorf("the open approval request is for step %s, not %s", r.Gate.StepID, step)
		}
		ref = r.Gate.Message
	case step == "":
		if r.State != runmodel.RunAwaitingManual {
			return fmt.Errorf("the run waits for no person: %s", where(r))
		}
		ref = r.Steps[r.Cursor].Message
	default:
		if r.Gate != nil && r.Gate.Decision == runmodel.GatePending && gateCovers(r, step) {
			ref = r.Gate.Message
			break
		}
		var st *runmodel.StepState
		for i := range r.Steps {
			if r.Steps[i].ID == step {
				st = &r.Steps[i]
			}
		}
		if st == nil {
			return fmt.Errorf("the runbook has no step %q", step)
		}
		if st.Status != runmodel.StepManual {
			return fmt.Errorf("step %s is not waiting for a person (it is %s); %s", step, st.Status, where(r))
		}
		ref = st.Message
	}
	if ref.IsZero() {
		return fmt.Errorf("the message to react to was never posted; %s", where(r))
	}
	return e.handle(chatmodel.Event{Kind: chatmodel.EventReaction, User: user(as), Message: ref, Intent: intent,
		Conversation: chatmodel.Conversation{Platform: channel.Platform, Channel: ref.Channel, Thread: ref.Thread}})
}

// gateCovers reports whether the open gate answers for step: the gated
// step itself, or an approval step merged into it.
func gateCovers(r *runmodel.Run, step string) bool {
	if r.Gate.StepID == step {
		return true
	}
	for i := 0; i+1 < len(r.Spec.Steps); i++ {
		if r.Spec.Steps[i].ID == step && r.Spec.Steps[i+1].ID == r.Gate.StepID {
			return true
		}
	}
	return false
}

// advance moves the shared clock in steps of the scenario's tick, letting
// the engine act after each step.
func (e *env) advance(d time.Duration) error {
	for d > 0 {
		step := min(d, e.sc.Tick)
		e.clock.Advance(step)
		d -= step
		e.eng.Tick(e.ctx)
		if err := e.idle(); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) changeWorld(w *WorldAction) error {
	for _, name := range w.ResumeHeartbeat {
		e.sim.ResumeHeartbeat(name) // registers the worker when it is new or was pruned
	}
	for _, name := range w.StopHeartbeat {
		if err := e.sim.StopHeartbeat(name); err != nil {
			return fmt.Errorf("world.stop_heartbeat: %w", err)
		}
	}
	if len(w.AddBuilds) > 0 {
		bs := make([]concoursesim.Build, 0, len(w.AddBuilds))
		for _, b := range w.AddBuilds {
			bs = append(bs, concoursesim.Build{Team: b.Team, Pipeline: b.Pipeline, Job: b.Job, Status: b.Status, Count: b.Count,
				Worker: b.Worker, Age: concoursesim.Duration(b.Age), Log: b.Log, Error: b.Error})
		}
		if err := e.sim.AddBuilds(bs...); err != nil {
			return fmt.Errorf("world.add_builds: %w", err)
		}
	}
	if f := w.Fault; f != nil {
		e.sim.InjectFault(concoursesim.Fault{Method: f.Method, Path: f.Path, Status: f.Status, Body: f.Body, Times: f.Times, Delay: f.Delay.D()})
	}
	if d := w.Database; d != nil && d.Down != nil {
		e.db.SetDown(*d.Down)
	}
	if d := w.Database; d != nil {
		for _, t := range d.Reap {
			if e.db == nil {
				return fmt.Errorf("world.database.reap: the scenario has no database")
			}
			if err := e.db.Reap(t); err != nil {
				return fmt.Errorf("world.database.reap: %w", err)
			}
		}
	}
	for _, name := range w.RemoveWorkers {
		if err := e.sim.RemoveWorker(name); err != nil {
			return fmt.Errorf("world.remove_workers: %w", err)
		}
	}
	for _, f := range w.FinishBuilds {
		team := f.Team
		if team == "" {
			team = "main"
		}
		n, err := e.sim.FinishBuilds(team, f.Pipeline, f.Job, f.Status)
		if err != nil {
			return fmt.Errorf("world.finish_builds: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("world.finish_builds: %s/%s has no pending or started build", team, f.Pipeline)
		}
	}
	for _, ref := range w.DestroyPipelines {
		team, name, ok := strings.Cut(ref, "/")
		if !ok {
			team, name = "main", ref
		}
		if err := e.sim.DestroyPipeline(team, name); err != nil {
			return fmt.Errorf("world.destroy_pipelines: %w", err)
		}
	}
	for _, c := range w.API {
		if err := e.outsideCall(c); err != nil {
			return fmt.Errorf("world.api %s %s: %w", c.Method, c.Path, err)
		}
	}
	return nil
}

// outsideCall sends a request to the simulated Concourse as another user
// (someone with fly), outside the engine. A refused request (4xx, 5xx) is
// an error: the scenario meant it to happen.
func (e *env) outsideCall(c APICall) error {
	as := c.As
	if as == "" {
		as = e.outsider
	}
	var body io.Reader
	if c.Body != "" {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequestWithContext(e.ctx, c.Method, e.sim.URL()+c.Path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+e.sim.Token(as))
	if c.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.sim.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("the simulated Concourse answered %d to %s: %s", resp.StatusCode, as, strings.TrimSpace(string(msg)))
	}
	return nil
}

// replies returns the ephemeral replies, joined for messages.
func (e *env) replies() string {
	rs := e.chat.Ephemerals()
	if len(rs) == 0 {
		return "none"
	}
	return strings.Join(rs, " | ")
}
