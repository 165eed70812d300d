package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/groundcrew/groundcrew/internal/human"
)

// run serves /runs/<id> and /runs/<id>.md.
func (s *Server) run(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(r.PathValue("id"))
	id, md := strings.CutSuffix(id, ".md")
	v, ref := s.authorize(r, RunScope(id))
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	snap, err := s.cache.get(ctx, id)
	if err != nil {
		s.readFailed(w, v, "run "+id, err)
		return
	}
	if md {
		if s.o.Words.Markdown == nil {
			s.notFound(w, v, "This server has no Markdown renderer.")
			return
		}
		s.markdown(w, snap.Run.ID, s.redact(s.o.Words.Markdown(snap.Run, snap.Journal)))
		return
	}
	rv := s.buildRun(snap, v)
	rv.Incident = s.runIncident(r, snap, v)
	p := page{Title: snap.Run.Runbook + " on " + snap.Run.Target + " — " + snap.Run.ID, Viewer: v, Body: rv}
	if rv.Live && s.o.Changes != nil {
		p.Live = rv.EventsURL
	}
	s.render(w, http.StatusOK, "run.html", p)
}

// stepList serves one step's long list, paged: its plan, item results or
// table (?list=plan|items|table&page=N).
func (s *Server) stepList(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(r.PathValue("id"))
	v, ref := s.authorize(r, RunScope(id))
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	run, err := s.o.Runs.GetRun(ctx, id)
	if err != nil {
		s.readFailed(w, v, "run "+id, err)
		return
	}
	st := run.Step(r.PathValue("step"))
	if st == nil {
		s.notFound(w, v, "Run "+run.ID+" has no step "+strconv.Quote(r.PathValue("step"))+".")
		return
	}
	what := r.URL.Query().Get("list")
	lv := listView{RunID: run.ID, RunURL: s.link(v, "/runs/"+run.ID, RunScope(run.ID), nil), Step: s.redact(nonEmpty(st.Title, st.ID)), What: what}
	var n int
	plan := st.Plan
	if run.Gate != nil && run.Gate.StepID == st.ID && run.Gate.Plan != nil {
		plan = run.Gate.Plan
	}
	switch what {
	case "plan":
		if plan != nil {
			n = len(plan.Items)
			lv.Hash = nonEmpty(st.PlanHash, plan.Hash())
			if run.Gate != nil && run.Gate.StepID == st.ID {
				lv.Hash = run.Gate.PlanHash
			}
		}
	case "items":
		n = len(st.Items)
	case "table":
		if st.Table != nil {
			n = len(st.Table.Rows)
			lv.Columns = st.Table.Columns
		}
	default:
		s.notFound(w, v, "Ask for list=plan, items or table.")
		return
	}
	pages := max(1, (n+listPage-1)/listPage)
	pg, _ := strconv.Atoi(r.URL.Query().Get("page"))
	pg = min(max(pg, 1), pages)
	lo, hi := (pg-1)*listPage, min(pg*listPage, n)
	lv.Page, lv.Pages, lv.Total, lv.From, lv.To = pg, pages, human.Count(n), lo+1, hi
	if n == 0 {
		lv.From = 0
	}
	for i := lo; i < hi; i++ {
		switch what {
		case "plan":
			it := plan.Items[i]
			lv.Rows = append(lv.Rows, []string{it.Kind, s.redact(it.ID), s.redact(it.Detail)})
		case "items":
			it := st.Items[i]
			lv.Rows = append(lv.Rows, []string{s.redact(it.ID), string(it.Outcome), s.redact(it.Reason)})
		case "table":
			lv.Rows = append(lv.Rows, redactAll(s.redact, st.Table.Rows[i]))
		}
	}
	switch what {
	case "plan":
		lv.Columns = []string{"kind", "id", "detail"}
	case "items":
		lv.Columns = []string{"id", "outcome", "reason"}
	}
	link := func(p int) string {
		return s.link(v, "/runs/"+run.ID+"/steps/"+st.ID, RunScope(run.ID), map[string]string{"list": what, "page": strconv.Itoa(p)})
	}
	if pg > 1 {
		lv.Prev = link(pg - 1)
	}
	if pg < pages {
		lv.Next = link(pg + 1)
	}
	s.render(w, http.StatusOK, "list.html", page{Title: lv.Step + " — " + run.ID, Viewer: v, Body: lv})
}

// listView is one page of a step's long list.
type listView struct {
	RunID, RunURL, Step, What, Hash string
	Columns                         []string
	Rows                            [][]string
	Page, Pages, From, To           int
	Total                           string
	Prev, Next                      string
}
