package web

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// targetView is a target's page: its digests (the last one's text and
// the chart of the last 30), its open incidents and its recent runs.
type targetView struct {
	Name      string
	Digests   []digestView
	Incidents []incidentRow
	Runs      []runRow
	RunsURL   string
}

type digestView struct {
	Label, Posted, Text, ChartURL, Alt string
}

// targetRuns is how many recent runs a target's page lists.
const targetRuns = 20

func (s *Server) findTarget(name string) (Target, bool) {
	for _, t := range s.o.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// target serves /targets/<name>.
func (s *Server) target(w http.ResponseWriter, r *http.Request) {
	v, ref := s.authorize(r, "")
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	if !v.Site {
		s.refuse(w, &refusal{Title: "This link opens one page", Why: "It was given for a run or an incident, not for a target's page.", Hint: "Ask for access through the sign-in proxy."})
		return
	}
	t, ok := s.findTarget(r.PathValue("name"))
	if !ok {
		s.notFound(w, v, "No target "+strconv.Quote(r.PathValue("name"))+" is configured.")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	tv := targetView{Name: t.Name, RunsURL: s.link(v, "/", "", map[string]string{"target": t.Name})}
	now := s.o.Now()
	if s.o.Digests != nil {
		for i, d := range t.Digests {
			rec, err := s.o.Digests.LastDigest(ctx, d.Key)
			if err != nil {
				s.failed(w, v, "the digests of "+t.Name, err)
				return
			}
			if rec == nil || rec.Data == nil {
				tv.Digests = append(tv.Digests, digestView{Label: d.Label, Text: "No digest yet."})
				continue
			}
			dv := digestView{Label: d.Label, Posted: ts(rec.Posted), Text: s.redact(digest.Render(t.Name, *rec.Data, nil, now).Text)}
			if len(rec.Series) > 0 {
				dv.ChartURL = s.link(v, "/targets/"+t.Name+"/charts/"+strconv.Itoa(i), "", nil)
				dv.Alt = digest.ChartAlt(t.Name, rec.Series)
			}
			tv.Digests = append(tv.Digests, dv)
		}
	}
	if s.o.Incidents != nil {
		ins, err := s.o.Incidents.ListIncidents(ctx, incident.Query{Open: true})
		if err != nil {
			s.failed(w, v, "the incidents", err)
			return
		}
		for _, in := range ins {
			if in.Target != t.Name {
				continue
			}
			class, icon := incidentClass(in.State)
			tv.Incidents = append(tv.Incidents, incidentRow{ID: in.ID, URL: s.link(v, "/incidents/"+in.ID, IncidentScope(in.ID), nil),
				Title: s.redact(in.Title), State: string(in.State), Class: class, Icon: icon})
		}
	}
	runs, err := s.o.Runs.ListRuns(ctx, runmodel.RunQuery{Target: t.Name, Limit: targetRuns})
	if err != nil {
		s.failed(w, v, "the runs of "+t.Name, err)
		return
	}
	for _, run := range runs {
		tv.Runs = append(tv.Runs, s.runRowOf(v, run))
	}
	s.render(w, http.StatusOK, "target.html", page{Title: t.Name, Viewer: v, Body: tv})
}

// chart serves /targets/<name>/charts/<n>: the PNG of the n-th digest's
// last 30 points, drawn once per new point (drawing takes ~90 ms).
func (s *Server) chart(w http.ResponseWriter, r *http.Request) {
	v, ref := s.authorize(r, "")
	if ref != nil || !v.Site {
		w.WriteHeader(http.StatusForbidden)
		return
	}
	t, ok := s.findTarget(r.PathValue("name"))
	n, err := strconv.Atoi(r.PathValue("n"))
	if !ok || err != nil || n < 0 || n >= len(t.Digests) || s.o.Digests == nil {
		http.NotFound(w, r)
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	rec, err := s.o.Digests.LastDigest(ctx, t.Digests[n].Key)
	if err != nil || rec == nil || len(rec.Series) == 0 {
		http.NotFound(w, r)
		return
	}
	png, err := charts.get(ctx, t.Digests[n].Key, t.Name, rec.Series)
	if err != nil {
		s.o.Logger.Warn("web: drawing a digest chart", "target", t.Name, "err", err)
		http.Error(w, "the chart could not be drawn", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Cache-Control", "private, max-age=60")
	_, _ = w.Write(png)
}

// chartCache keeps the last drawing of each digest's chart.
type chartCache struct {
	mu sync.Mutex
	m  map[string]chartEntry
}

type chartEntry struct {
	last time.Time
	n    int
	png  []byte
}

var charts = &chartCache{m: map[string]chartEntry{}}

func (c *chartCache) get(_ context.Context, key, target string, pts []digest.Point) ([]byte, error) {
	last := pts[len(pts)-1].At
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.last.Equal(last) && e.n == len(pts) {
		return e.png, nil
	}
	png, err := digest.RenderChart(target, pts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) > 256 {
		clear(c.m)
	}
	c.m[key] = chartEntry{last: last, n: len(pts), png: png}
	c.mu.Unlock()
	return png, nil
}
