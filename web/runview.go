package web

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// Page bounds: a page shows at most these many of a list; the rest is a
// paged list of its own (a 2,000-build plan is 40 pages of 50, not one
// 5 MB page).
const (
	listInline    = 50  // plan items, item results, table rows on the run page
	listPage      = 200 // on the paged list of one step
	timelineMax   = 500 // journal entries on the run page (the .md has them all)
	auditMax      = 500 // audit entries on the run page
	textMax       = 16 << 10
	detailMax     = 32 << 10
	runsPageSize  = 50
	incidentsMax  = 100
	activeRunsMax = 200
)

// runView is what the run page shows.
type runView struct {
	ID, Runbook, Title, Target, Requester string
	State, StateClass, Icon               string
	Started, Finished                     string
	Duration, ApprovalWait                string
	DryRun, Live                          bool
	Error                                 string
	// StoppedAt points at the step a failed run stopped at (the step
	// shows the error), in place of Error.
	StoppedAt     *stopView
	Params        []kv
	AlertInstance string
	// Channel is the binding the run is scoped to ("#payments-ci") and
	// ChannelScope what it binds ("team `payments` on `infra-prd`");
	// Teams are the teams whose things its changes concern.
	Channel, ChannelScope  string
	Teams                  []string
	Steps                  []stepView
	Gates                  []gateView
	Changes                []Change
	NoChanges              bool
	Timeline               []lineView
	TimelineCut            int
	Audit                  []auditView
	AuditCut               int
	Head                   string
	HeadCovers             bool
	Version                string
	Incident               *linkView
	MarkdownURL, EventsURL string
}

type kv struct{ K, V string }

// stopView is where a failed run stopped: the words and the step's anchor.
type stopView struct{ Words, Step string }

type linkView struct{ Text, URL string }

type stepView struct {
	N                    int
	ID, Title, Kind, Op  string
	Status, Class, Icon  string
	Started, Took        string
	Summary, Error, Note string
	Text, Detail         string
	Progress             string
	By, ApprovedBy       string
	Branch, Current      bool
	Table                *tableView
	Plan                 *planView
	Items                *itemsView
	Polls                int
}

type tableView struct {
	Columns []string
	Rows    [][]string
	More    int
	MoreURL string
}

type planView struct {
	Summary, Hash string
	Items         []opmodel.PlanItem
	Notes         []string
	Total, More   int
	MoreURL       string
}

type itemsView struct {
	Items        []opmodel.ItemResult
	Total, More  int
	Failed, Done int
	MoreURL      string
}

// gateView is one approval request of the run: opened, the votes cast on
// it (who, when, how), refused, withdrawn and voided ones with why, and
// how it was decided.
type gateView struct {
	Step, StepTitle string
	Opened          string
	PlanHash        string
	Summary         string
	Policy          string
	Expires         string
	Reason          string
	Open            bool
	Decision        string
	DecisionClass   string
	Decided         string
	Votes           []voteView
	Plan            *planView
}

type voteView struct {
	Who, What, When, Via, Why string
	Class                     string
}

type lineView struct {
	Time, Step, Text string
}

type auditView struct {
	Seq                               uint64
	Time, Actor, Action, Step, Detail string
	Via, PlanHash, Hash, HashShort    string
}

// runSnapshot is what one read of a run gives: the run, its journal and
// audit entries, and the audit head. The live updates share snapshots
// (package live.go): one read per change, however many people watch.
type runSnapshot struct {
	Run     *runmodel.Run
	Journal []runmodel.JournalEntry
	Audit   []runmodel.AuditEntry
	Head    runmodel.AuditHead
}

func (s *Server) readRun(ctx context.Context, id string) (*runSnapshot, error) {
	r, err := s.o.Runs.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	snap := &runSnapshot{Run: r}
	if snap.Journal, err = s.o.Journals.Journal(ctx, r.ID); err != nil {
		return nil, fmt.Errorf("reading the journal of %s: %w", r.ID, err)
	}
	if snap.Audit, err = s.o.Journals.AuditEntries(ctx, r.ID); err != nil {
		return nil, fmt.Errorf("reading the audit entries of %s: %w", r.ID, err)
	}
	if snap.Head, err = s.o.Journals.AuditHead(ctx); err != nil {
		return nil, fmt.Errorf("reading the audit head: %w", err)
	}
	return snap, nil
}

func ts(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func hm(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("15:04:05")
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func runClass(s runmodel.RunState) (class, icon string) {
	switch s {
	case runmodel.RunSucceeded:
		return "ok", "✅"
	case runmodel.RunFailed:
		return "bad", "❌"
	case runmodel.RunCancelled:
		return "off", "🚫"
	case runmodel.RunAwaitingApproval:
		return "wait", "🔒"
	case runmodel.RunAwaitingManual:
		return "wait", "✋"
	case runmodel.RunWaiting:
		return "run", "⏳"
	}
	return "run", "▶️"
}

func stepClass(st *runmodel.StepState, ended bool) (class, icon, status string) {
	status = st.Status.Human()
	switch st.Status {
	case runmodel.StepSucceeded:
		if st.Warn {
			return "warn", "⚠️", status
		}
		return "ok", "✅", status
	case runmodel.StepFailed:
		return "bad", "❌", status
	case runmodel.StepSkipped:
		if st.Branch {
			return "off", "↷", "not taken"
		}
		return "off", "⏭", status
	case runmodel.StepCancelled:
		return "off", "🚫", status
	case runmodel.StepGated:
		return "wait", "🔒", status
	case runmodel.StepManual:
		return "wait", "✋", status
	case runmodel.StepWaiting:
		return "run", "⏳", status
	case runmodel.StepRunning, runmodel.StepExecuting:
		return "run", "▶️", status
	}
	if ended {
		return "off", "·", "not run"
	}
	return "todo", "·", status
}

// buildRun turns a snapshot into the run page's view for v.
func (s *Server) buildRun(snap *runSnapshot, v viewer) runView {
	r, now := snap.Run, s.o.Now()
	red := s.redact
	class, icon := runClass(r.State)
	rv := runView{ID: r.ID, Runbook: r.Runbook, Title: red(r.Title), Target: r.Target, Requester: r.Requester.Display(),
		State: r.State.Human(), StateClass: class, Icon: icon, Started: ts(r.CreatedAt), Finished: ts(r.FinishedAt),
		Duration: human.Duration(r.Duration(now)), DryRun: r.DryRun, Live: !r.State.Terminal(), Error: red(r.Error),
		AlertInstance: r.AlertInstance, Version: fmt.Sprint(r.UpdatedAt.UnixNano())}
	if s.o.Words.Stopped != nil {
		if step, words, ok := s.o.Words.Stopped(r); ok {
			// The step says the error in full; the top points at it.
			rv.Error, rv.StoppedAt = "", &stopView{Words: red(words), Step: step}
		}
	}
	if r.ApprovalWait >= time.Second {
		rv.ApprovalWait = human.Duration(r.ApprovalWait)
	}
	if r.Scope != nil {
		rv.Channel, rv.ChannelScope = r.Scope.Key, policy.ScopeOfRun(r.Scope).What()
	}
	rv.Teams = r.Teams()
	for k, val := range r.Params {
		rv.Params = append(rv.Params, kv{k, red(val)})
	}
	sort.Slice(rv.Params, func(i, j int) bool { return rv.Params[i].K < rv.Params[j].K })
	scope := RunScope(r.ID)
	base := "/runs/" + r.ID
	rv.MarkdownURL = s.link(v, base+".md", scope, nil)
	rv.EventsURL = s.link(v, base+"/events", scope, nil)
	for i := range r.Steps {
		rv.Steps = append(rv.Steps, s.buildStep(r, i, v))
	}
	rv.Gates = s.buildGates(snap, v)
	if s.o.Words.Changes != nil {
		for _, c := range s.o.Words.Changes(r, snap.Journal) {
			rv.Changes = append(rv.Changes, Change{Step: c.Step, Text: red(c.Text)})
		}
	}
	rv.NoChanges = len(rv.Changes) == 0 && !r.DryRun
	j := snap.Journal
	if len(j) > timelineMax {
		rv.TimelineCut = len(j) - timelineMax
		j = j[len(j)-timelineMax:]
	}
	for _, e := range j {
		text := string(e.Type)
		if s.o.Words.JournalLine != nil {
			text = s.o.Words.JournalLine(e, r)
		}
		rv.Timeline = append(rv.Timeline, lineView{Time: hm(e.Time), Step: e.Step, Text: red(text)})
	}
	a := snap.Audit
	if len(a) > auditMax {
		rv.AuditCut = len(a) - auditMax
		a = a[len(a)-auditMax:]
	}
	for _, e := range a {
		rv.Audit = append(rv.Audit, auditView{Seq: e.Seq, Time: ts(e.Time), Actor: e.Actor, Action: strings.ReplaceAll(string(e.Action), "_", " "),
			Step: e.Step, Detail: red(e.Detail), Via: e.Via, PlanHash: shortHash(e.PlanHash), Hash: e.Hash, HashShort: shortHash(e.Hash)})
	}
	if snap.Head.Count > 0 {
		rv.Head = snap.Head.String()
		rv.HeadCovers = len(snap.Audit) == 0 || snap.Audit[len(snap.Audit)-1].Seq <= snap.Head.Count
	}
	return rv
}

func (s *Server) buildStep(r *runmodel.Run, i int, v viewer) stepView {
	st := &r.Steps[i]
	red := s.redact
	class, icon, status := stepClass(st, r.State.Terminal())
	sv := stepView{N: i + 1, ID: st.ID, Title: red(nonEmpty(st.Title, st.ID)), Kind: string(st.Kind), Op: st.Op,
		Status: status, Class: class, Icon: icon, Started: hm(st.StartedAt), Summary: red(st.Summary),
		Error: red(st.Error), Note: red(st.Note), Branch: st.Branch, Polls: st.Polls,
		Current: !r.State.Terminal() && i == r.Cursor}
	if !st.StartedAt.IsZero() && !st.FinishedAt.IsZero() {
		sv.Took = human.Duration(st.FinishedAt.Sub(st.StartedAt))
	}
	if st.Kind == runbookmodel.KindManual || st.Text != "" {
		sv.Text = clip(red(strings.TrimSpace(st.Text)), textMax)
	}
	sv.Detail = clip(red(st.Detail), detailMax)
	if st.Status == runmodel.StepExecuting || st.Status == runmodel.StepRunning {
		sv.Progress = red(st.Progress)
	}
	if st.By != nil && !strings.Contains(st.Summary, st.By.Display()) {
		sv.By = st.By.Display()
	}
	var ap []string
	for _, u := range st.ApprovedBy {
		ap = append(ap, u.Display())
	}
	sv.ApprovedBy = strings.Join(ap, ", ")
	more := func(what string) string {
		return s.link(v, "/runs/"+r.ID+"/steps/"+st.ID, RunScope(r.ID), map[string]string{"list": what})
	}
	if st.Table != nil && len(st.Table.Rows) > 0 {
		tv := &tableView{Columns: st.Table.Columns}
		for _, row := range st.Table.Rows[:min(len(st.Table.Rows), listInline)] {
			tv.Rows = append(tv.Rows, redactAll(red, row))
		}
		if n := len(st.Table.Rows) - listInline; n > 0 {
			tv.More, tv.MoreURL = n, more("table")
		}
		sv.Table = tv
	}
	if st.Plan != nil && (r.Gate == nil || r.Gate.StepID != st.ID) {
		sv.Plan = s.planOf(st.Plan, st.PlanHash, more("plan"))
	}
	if len(st.Items) > 0 {
		iv := &itemsView{Total: len(st.Items)}
		for _, it := range st.Items {
			if it.Outcome == opmodel.OutcomeFailed {
				iv.Failed++
			} else {
				iv.Done++
			}
		}
		// the failed ones first: they are what a person looks for
		sorted := append([]opmodel.ItemResult(nil), st.Items...)
		sort.SliceStable(sorted, func(a, b int) bool {
			return sorted[a].Outcome == opmodel.OutcomeFailed && sorted[b].Outcome != opmodel.OutcomeFailed
		})
		for _, it := range sorted[:min(len(sorted), listInline)] {
			it.Reason = red(it.Reason)
			iv.Items = append(iv.Items, it)
		}
		if n := len(sorted) - listInline; n > 0 {
			iv.More, iv.MoreURL = n, more("items")
		}
		sv.Items = iv
	}
	return sv
}

func (s *Server) planOf(p *opmodel.Plan, hash, moreURL string) *planView {
	if hash == "" {
		hash = p.Hash()
	}
	pv := &planView{Summary: s.redact(p.Summary), Hash: hash, Total: len(p.Items), Notes: redactAll(s.redact, p.Notes)}
	for _, it := range p.Items[:min(len(p.Items), listInline)] {
		it.Detail = s.redact(it.Detail)
		pv.Items = append(pv.Items, it)
	}
	if n := len(p.Items) - listInline; n > 0 {
		pv.More, pv.MoreURL = n, moreURL
	}
	return pv
}

// buildGates reads the run's gates from its audit entries (every request,
// vote, refusal, withdrawal, voided approval and decision, with who, when
// and how) and the open gate from the run (its policy and expiry).
func (s *Server) buildGates(snap *runSnapshot, v viewer) []gateView {
	r := snap.Run
	var out []gateView
	cur := map[string]int{} // step → index in out of its latest gate
	summaries := map[string]string{}
	for _, e := range snap.Journal {
		if e.Type == runmodel.JGateOpened {
			summaries[e.Step+"|"+e.PlanHash] = e.Message
		}
	}
	title := func(step string) string {
		if st := r.Step(step); st != nil {
			return s.redact(nonEmpty(st.Title, st.ID))
		}
		return step
	}
	gateOf := func(step string) *gateView {
		i, ok := cur[step]
		if !ok {
			out = append(out, gateView{Step: step, StepTitle: title(step)})
			i = len(out) - 1
			cur[step] = i
		}
		return &out[i]
	}
	for _, e := range snap.Audit {
		if e.Step == "" {
			continue
		}
		who := nonEmpty(e.Actor, "groundcrew")
		vote := func(what, class string) {
			g := gateOf(e.Step)
			g.Votes = append(g.Votes, voteView{Who: "@" + strings.TrimPrefix(who, "@"), What: what, When: hm(e.Time), Via: e.Via, Why: s.redact(e.Detail), Class: class})
		}
		switch e.Action {
		case runmodel.ActionApprovalRequested:
			out = append(out, gateView{Step: e.Step, StepTitle: title(e.Step), Opened: ts(e.Time), PlanHash: e.PlanHash,
				Summary: s.redact(nonEmpty(summaries[e.Step+"|"+e.PlanHash], e.Detail))})
			cur[e.Step] = len(out) - 1
		case runmodel.ActionApprove:
			vote("approved", "ok")
		case runmodel.ActionReject:
			vote("rejected", "bad")
		case runmodel.ActionBreakGlass:
			vote("BREAK-GLASS approval", "warn")
		case runmodel.ActionVoteRefused:
			vote("not counted", "off")
		case runmodel.ActionVoteWithdrawn:
			vote("withdrew their vote", "off")
		case runmodel.ActionReactionRemoved:
			vote("removed a reaction (vote stands)", "off")
		case runmodel.ActionVoteVoided:
			vote("approval voided", "warn")
		case runmodel.ActionApprovalGranted, runmodel.ActionApprovalRejected, runmodel.ActionApprovalExpired, runmodel.ActionApprovalVoidDrift:
			g := gateOf(e.Step)
			g.Decided = ts(e.Time)
			g.Decision, g.DecisionClass = map[runmodel.AuditAction][2]string{
				runmodel.ActionApprovalGranted:   {"approved", "ok"},
				runmodel.ActionApprovalRejected:  {"rejected", "bad"},
				runmodel.ActionApprovalExpired:   {"expired", "off"},
				runmodel.ActionApprovalVoidDrift: {"void: the plan changed", "warn"},
			}[e.Action][0], map[runmodel.AuditAction]string{
				runmodel.ActionApprovalGranted: "ok", runmodel.ActionApprovalRejected: "bad",
				runmodel.ActionApprovalExpired: "off", runmodel.ActionApprovalVoidDrift: "warn"}[e.Action]
			switch d := s.redact(e.Detail); {
			case d == "":
			case strings.HasPrefix(d, strings.Fields(g.Decision)[0]):
				g.Decision = d // "approved by @carol", not "approved — approved by @carol"
			default:
				g.Decision += " — " + d
			}
		}
	}
	more := func(step string) string {
		return s.link(v, "/runs/"+r.ID+"/steps/"+step, RunScope(r.ID), map[string]string{"list": "plan"})
	}
	for i := range out {
		g := &out[i]
		if st := r.Step(g.Step); st != nil && st.Plan != nil && (g.PlanHash == "" || g.PlanHash == st.PlanHash) {
			g.Plan = s.planOf(st.Plan, st.PlanHash, more(g.Step))
		}
	}
	if g := r.Gate; g != nil && g.Decision == runmodel.GatePending {
		var gv *gateView
		if i, ok := cur[g.StepID]; ok && out[i].PlanHash == g.PlanHash {
			gv = &out[i]
		} else {
			out = append(out, gateView{Step: g.StepID, StepTitle: title(g.StepID), Opened: ts(g.RequestedAt), PlanHash: g.PlanHash})
			gv = &out[len(out)-1]
		}
		gv.Open = true
		gv.Policy = s.redact(policy.Describe(g.Policy, r.Requester.ID))
		gv.Expires = ts(g.ExpiresAt) + " (in " + human.Duration(g.ExpiresAt.Sub(s.o.Now())) + ")"
		gv.Reason = s.redact(g.Reason)
		if g.Plan != nil {
			gv.Plan = s.planOf(g.Plan, g.PlanHash, more(g.StepID))
			if gv.Summary == "" {
				gv.Summary = s.redact(g.Plan.Summary)
			}
		}
	}
	for i := range out {
		if out[i].Decision == "" && !out[i].Open {
			out[i].Decision, out[i].DecisionClass = "not decided", "off"
		}
	}
	return out
}

func redactAll(red func(string) string, xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = red(x)
	}
	return out
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%s more bytes: the Markdown export has the run; `groundcrew runs show <run> --format json` everything)", human.Count(len(s)-cut))
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
