package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

// indexView is the index: what needs people now, then what finished.
type indexView struct {
	Incidents    []incidentRow
	IncidentsCut int
	Waiting      []runRow
	Active       []runRow
	ActiveCut    bool
	Finished     []runRow
	Older        string
	Newest       string
	Filter       filterView
	FilterError  string
	// Runbooks and TargetNames are the names the filter form suggests.
	Runbooks, TargetNames []string
	Targets               []linkView
	Token                 string
}

type incidentRow struct {
	ID, URL, Title, Target, State, Class, Icon, Age, Runs string
}

type filterView struct {
	Runbook, Target, State, Since string
	States                        []string
	Any                           bool
}

var finishedStates = []runmodel.RunState{runmodel.RunSucceeded, runmodel.RunFailed, runmodel.RunCancelled}

// index serves /: open incidents, gates and manual steps waiting for a
// person, the other active runs, then the finished runs, 50 a page,
// filtered by runbook, target, state and since.
func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	v, ref := s.authorize(r, "")
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	if !v.Site {
		s.refuse(w, &refusal{Title: "This link opens one page", Why: "It was given for a run or an incident, not for the list of all of them.", Hint: "Use the link of the page you were sent, or ask for access through the sign-in proxy."})
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	iv := indexView{Token: v.Token}
	if err := s.indexOpen(ctx, v, &iv); err != nil {
		s.failed(w, v, "the open incidents and active runs", err)
		return
	}
	q, fv, err := finishedQuery(r.URL.Query(), s.o.Now())
	iv.Filter = fv
	iv.Runbooks, iv.TargetNames = s.runbookNames(), s.targetNames()
	if err != nil {
		iv.FilterError = err.Error()
	} else if unknown := s.unknownName(ctx, fv); unknown != "" {
		iv.FilterError = unknown
	} else {
		q.Limit = runsPageSize + 1
		runs, err := s.o.Runs.ListRuns(ctx, q)
		if err != nil {
			s.failed(w, v, "the finished runs", err)
			return
		}
		if len(runs) > runsPageSize {
			last := runs[runsPageSize-1]
			runs = runs[:runsPageSize]
			extra := filterParams(fv)
			extra["after"] = strconv.FormatInt(last.CreatedAt.UnixNano(), 10) + "." + last.ID
			iv.Older = s.link(v, "/", "", extra)
		}
		if q.After.ID != "" {
			iv.Newest = s.link(v, "/", "", filterParams(fv))
		}
		for _, run := range runs {
			iv.Finished = append(iv.Finished, s.runRowOf(v, run))
		}
	}
	for _, t := range s.o.Targets {
		iv.Targets = append(iv.Targets, linkView{Text: t.Name, URL: s.link(v, "/targets/"+url.PathEscape(t.Name), "", nil)})
	}
	s.render(w, http.StatusOK, "index.html", page{Title: "groundcrew", Viewer: v, Body: iv})
}

// indexOpen fills what needs people now.
func (s *Server) indexOpen(ctx context.Context, v viewer, iv *indexView) error {
	now := s.o.Now()
	if s.o.Incidents != nil {
		ins, err := s.o.Incidents.ListIncidents(ctx, incident.Query{Open: true})
		if err != nil {
			return err
		}
		// nobody acknowledged first, then oldest first
		sort.SliceStable(ins, func(i, j int) bool {
			a, b := ins[i].State == incident.StateOpen, ins[j].State == incident.StateOpen
			if a != b {
				return a
			}
			return ins[i].OpenedAt.Before(ins[j].OpenedAt)
		})
		if len(ins) > incidentsMax {
			iv.IncidentsCut = len(ins) - incidentsMax
			ins = ins[:incidentsMax]
		}
		for _, in := range ins {
			class, icon := incidentClass(in.State)
			state := "not acknowledged"
			if in.AckedBy != nil {
				state = "acknowledged by " + in.AckedBy.Display()
			}
			if in.Silenced(now) {
				state += " · 🔕 silenced"
			}
			iv.Incidents = append(iv.Incidents, incidentRow{ID: in.ID, URL: s.link(v, "/incidents/"+in.ID, IncidentScope(in.ID), nil),
				Title: s.redact(in.Title), Target: in.Target, State: state, Class: class, Icon: icon, Age: human.Duration(in.Duration(now))})
		}
	}
	active, err := s.o.Runs.ListRuns(ctx, runmodel.RunQuery{Active: true, Limit: activeRunsMax + 1})
	if err != nil {
		return err
	}
	if len(active) > activeRunsMax {
		active, iv.ActiveCut = active[:activeRunsMax], true
	}
	for _, run := range active {
		row := s.runRowOf(v, run)
		if run.State == runmodel.RunAwaitingApproval || run.State == runmodel.RunAwaitingManual {
			if run.Gate != nil && run.Gate.Decision == runmodel.GatePending {
				n := 0
				for _, vote := range run.Gate.Votes {
					if vote.Approve {
						n++
					}
				}
				row.Step += fmt.Sprintf(" · %d approval%s so far · expires in %s", n, plural(n), human.Duration(run.Gate.ExpiresAt.Sub(now)))
			}
			iv.Waiting = append(iv.Waiting, row)
			continue
		}
		iv.Active = append(iv.Active, row)
	}
	// the longest waiting first
	slices.Reverse(iv.Waiting)
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func (s *Server) runbookNames() []string {
	if s.o.Runbooks == nil {
		return nil
	}
	return s.o.Runbooks()
}

func (s *Server) targetNames() []string {
	out := make([]string, 0, len(s.o.Targets))
	for _, t := range s.o.Targets {
		out = append(out, t.Name)
	}
	return out
}

// unknownName says why a filter naming a runbook or a target that is
// neither configured nor the runbook or target of any run kept is refused
// ("" when it is not), with the closest known name. A runbook removed from
// the library, a target no longer configured: their runs are still
// listed. Whether a run has it is one look-up in the store's index of
// that filter.
func (s *Server) unknownName(ctx context.Context, fv filterView) string {
	check := func(what, name string, known []string, q runmodel.RunQuery) string {
		if name == "" || known == nil || slices.Contains(known, name) {
			return ""
		}
		q.Limit = 1
		runs, err := s.o.Runs.ListRuns(ctx, q)
		if err != nil || len(runs) > 0 {
			return "" // a store error is said by the listing itself
		}
		msg := fmt.Sprintf("There is no %s %q, and no run of one.", what, name)
		if sug := textmodel.Suggest(name, known); sug != "" {
			return fmt.Sprintf("%s Did you mean %q?", msg, sug)
		}
		return fmt.Sprintf("%s The %ss are: %s.", msg, what, strings.Join(known, ", "))
	}
	if why := check("runbook", fv.Runbook, s.runbookNames(), runmodel.RunQuery{Runbook: fv.Runbook}); why != "" {
		return why
	}
	return check("target", fv.Target, s.targetNames(), runmodel.RunQuery{Target: fv.Target})
}

// finishedQuery reads the filters of the finished runs.
func finishedQuery(p url.Values, now time.Time) (runmodel.RunQuery, filterView, error) {
	fv := filterView{Runbook: strings.TrimSpace(p.Get("runbook")), Target: strings.TrimSpace(p.Get("target")),
		State: p.Get("state"), Since: strings.TrimSpace(p.Get("since"))}
	for _, st := range finishedStates {
		fv.States = append(fv.States, string(st))
	}
	fv.Any = fv.Runbook != "" || fv.Target != "" || fv.State != "" || fv.Since != ""
	q := runmodel.RunQuery{Runbook: fv.Runbook, Target: fv.Target, States: finishedStates}
	if fv.State != "" {
		if !slices.Contains(fv.States, fv.State) {
			return q, fv, fmt.Errorf("state %q: use one of %s", fv.State, strings.Join(fv.States, ", "))
		}
		q.States = []runmodel.RunState{runmodel.RunState(fv.State)}
	}
	if fv.Since != "" {
		t, err := parseSince(fv.Since, now)
		if err != nil {
			return q, fv, err
		}
		q.Since = t
	}
	if a := p.Get("after"); a != "" {
		ns, id, ok := strings.Cut(a, ".")
		n, err := strconv.ParseInt(ns, 10, 64)
		if !ok || err != nil || id == "" || len(id) > 64 {
			return q, fv, fmt.Errorf("the page address is cut short: start again from the newest")
		}
		q.After = runmodel.RunCursor{CreatedAt: time.Unix(0, n), ID: id}
	}
	return q, fv, nil
}

func filterParams(fv filterView) map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{"runbook": fv.Runbook, "target": fv.Target, "state": fv.State, "since": fv.Since} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// parseSince reads since: a duration back from now ("24h", "7d") or a date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if v, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(v); err == nil && days > 0 && days < 100000 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("since %q: write a duration back from now (24h, 7d) or a date (2026-11-30)", s)
}
