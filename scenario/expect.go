package scenario

import (
	"fmt"
	"strings"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// check compares the state with x and returns one line per difference,
// each saying what was wanted and what was found.
func (e *env) check(x *Expect) []string {
	if x == nil {
		return nil
	}
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }

	var r *runmodel.Run
	if len(e.runs) > 0 {
		var err error
		if r, err = e.current(); err != nil {
			fail("reading the run: %v", err)
		}
	}
	if x.State != "" {
		switch {
		case r == nil && x.State != "none":
			fail("run state: want %s, got no run (replies: %s)", x.State, e.replies())
		case r != nil && x.State == "none":
			fail("run state: want no run, got %s", r.State)
		case r != nil && string(r.State) != x.State:
			got := string(r.State)
			if r.Error != "" {
				got += " (" + r.Error + ")"
			} else if !r.State.Terminal() {
				got = where(r)
			}
			fail("run state: want %s, got %s", x.State, got)
		}
	}
	if r != nil {
		out = append(out, checkRun(r, x)...)
	} else if x.At != "" || x.Error != "" || len(x.Steps) > 0 {
		fail("steps: want a run, got none (replies: %s)", e.replies())
	}
	for _, c := range x.Called {
		op, step, _ := strings.Cut(c, "@")
		if !e.rec.called(op, step) {
			fail("operation %s: want called, got not called (calls: %s)", c, e.callList())
		}
	}
	for _, c := range x.NotCalled {
		op, step, _ := strings.Cut(c, "@")
		if e.rec.called(op, step) {
			fail("operation %s: want not called, got called", c)
		}
	}
	thread := e.threadText()
	for _, s := range x.Thread {
		if !strings.Contains(thread, s) {
			fail("thread: want a message containing %q, got none", s)
		}
	}
	for _, s := range x.NotThread {
		if strings.Contains(thread, s) {
			fail("thread: want no message containing %q, got one", s)
		}
	}
	replies := strings.Join(e.chat.Ephemerals(), "\n")
	for _, s := range x.Replies {
		if !strings.Contains(replies, s) {
			fail("replies: want one containing %q, got: %s", s, e.replies())
		}
	}
	if x.World != nil {
		out = append(out, e.checkWorld(x.World)...)
	}
	for _, key := range sortedKeys(x.Database) {
		want := x.Database[key]
		t, ok := e.db.Table(key)
		switch {
		case !ok:
			fail("database table %s: want it, got no such table", key)
		case want.Rows != nil && t.Rows != *want.Rows:
			fail("database table %s: want %d rows, got %d", key, *want.Rows, t.Rows)
		}
	}
	return out
}

func checkRun(r *runmodel.Run, x *Expect) []string {
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if x.At != "" {
		at := ""
		if !r.State.Terminal() && r.Cursor >= 0 && r.Cursor < len(r.Steps) {
			at = r.Steps[r.Cursor].ID
		}
		if at != x.At {
			fail("run position: want at step %s, got %s", x.At, where(r))
		}
	}
	if x.Error != "" && !strings.Contains(r.Error, x.Error) {
		fail("run error: want it to contain %q, got %q", x.Error, r.Error)
	}
	for _, id := range sortedKeys(x.Steps) {
		want := x.Steps[id]
		var st *runmodel.StepState
		for i := range r.Steps {
			if r.Steps[i].ID == id {
				st = &r.Steps[i]
			}
		}
		if st == nil {
			fail("step %s: the runbook has no such step (steps: %s)", id, stepIDs(r))
			continue
		}
		if want.Status != "" && string(st.Status) != want.Status {
			got := string(st.Status)
			if st.Error != "" {
				got += " (error: " + st.Error + ")"
			} else if st.Summary != "" {
				got += " (" + st.Summary + ")"
			}
			fail("step %s: want %s, got %s", id, want.Status, got)
		}
		if want.Title != "" && st.Title != want.Title {
			fail("step %s title: want %q, got %q", id, want.Title, st.Title)
		}
		if want.Summary != "" && !strings.Contains(st.Summary, want.Summary) {
			fail("step %s summary: want it to contain %q, got %q", id, want.Summary, st.Summary)
		}
		if want.Error != "" && !strings.Contains(st.Error, want.Error) {
			fail("step %s error: want it to contain %q, got %q", id, want.Error, st.Error)
		}
		if want.By != "" && (st.By == nil || st.By.Name != want.By) {
			got := "nobody"
			if st.By != nil {
				got = st.By.Name
			}
			fail("step %s done by: want %s, got %s", id, want.By, got)
		}
		if len(want.ApprovedBy) > 0 {
			var got []string
			for _, u := range st.ApprovedBy {
				got = append(got, u.Name)
			}
			if strings.Join(got, ",") != strings.Join(want.ApprovedBy, ",") {
				fail("step %s approved by: want %s, got %s", id, strings.Join(want.ApprovedBy, ", "), orNone(strings.Join(got, ", ")))
			}
		}
	}
	return out
}

func stepIDs(r *runmodel.Run) string {
	ids := make([]string, 0, len(r.Steps))
	for _, st := range r.Steps {
		ids = append(ids, st.ID)
	}
	return strings.Join(ids, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}

func (e *env) checkWorld(w *WorldExpect) []string {
	var out []string
	fail := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	for _, name := range sortedKeys(w.Workers) {
		want := w.Workers[name]
		got := "gone"
		if ws, ok := e.sim.Worker(name); ok {
			got = ws.State
		}
		if got != want {
			fail("worker %s: want %s, got %s", name, want, got)
		}
	}
	if len(w.Builds) > 0 {
		all := e.sim.Builds()
		for _, b := range w.Builds {
			n := 0
			for _, s := range all {
				if s.Check || (b.Team != "" && s.Team != b.Team) || (b.Pipeline != "" && s.Pipeline != b.Pipeline) ||
					(b.Job != "" && s.Job != b.Job) || (b.Status != "" && s.Status != b.Status) {
					continue
				}
				n++
			}
			if n != *b.Count {
				fail("builds %s: want %d, got %d", describeBuilds(b), *b.Count, n)
			}
		}
	}
	for _, ref := range sortedKeys(w.Pipelines) {
		team, name, _ := strings.Cut(ref, "/")
		p, ok := e.sim.Pipeline(team, name)
		switch {
		case !ok:
			fail("pipeline %s: want it, got no such pipeline", ref)
		case w.Pipelines[ref].Paused != nil && p.Paused != *w.Pipelines[ref].Paused:
			fail("pipeline %s: want paused=%v, got paused=%v", ref, *w.Pipelines[ref].Paused, p.Paused)
		}
	}
	for _, ref := range sortedKeys(w.ResourceCaches) {
		parts := strings.SplitN(ref, "/", 3)
		got := e.sim.ResourceCaches(parts[0], parts[1], parts[2])
		if got != w.ResourceCaches[ref] {
			if got < 0 {
				fail("resource %s: want %d caches, got no such resource", ref, w.ResourceCaches[ref])
			} else {
				fail("resource %s: want %d caches, got %d", ref, w.ResourceCaches[ref], got)
			}
		}
	}
	for _, key := range sortedKeys(w.API) {
		method, p, _ := strings.Cut(key, " ")
		p, by, _ := strings.Cut(p, " by ")
		if got := e.sim.CountCallsBy(strings.TrimSpace(by), method, strings.TrimSpace(p)); got != w.API[key] {
			fail("API calls %s: want %d, got %d", key, w.API[key], got)
		}
	}
	return out
}

func describeBuilds(b BuildsExpect) string {
	var parts []string
	for _, kv := range [][2]string{{"team", b.Team}, {"pipeline", b.Pipeline}, {"job", b.Job}, {"status", b.Status}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(parts) == 0 {
		return "(all)"
	}
	return strings.Join(parts, " ")
}

// threadText is every version of every message posted, details included.
func (e *env) threadText() string {
	var b strings.Builder
	for _, p := range e.chat.Posts() {
		for _, m := range p.History {
			b.WriteString(m.Text)
			b.WriteString("\n")
			b.WriteString(m.Detail)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func (e *env) callList() string {
	var names []string
	seen := map[string]bool{}
	for _, c := range e.rec.Calls() {
		key := c.Op + "@" + c.Step
		if c.Phase == PhasePlan {
			key += " (plan only)"
		}
		if !seen[key] {
			seen[key] = true
			names = append(names, key)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
