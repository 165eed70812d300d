package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/internal/human"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// incidentView is what the incident page shows.
type incidentView struct {
	ID, Title, Target, State, StateClass, Icon string
	Opened, Resolved, Duration, Since          string
	AckedBy, Acked, Silenced, Source           string
	Command                                    string
	Evidence                                   []string
	EvidenceAsOf                               string
	Timeline                                   []incidentEntry
	Runs                                       []runRow
	MarkdownURL, EventsURL                     string
	Live                                       bool
}

type incidentEntry struct {
	Time, Kind, Actor, Text string
	Evidence                []string
}

// runRow is a run in a list.
type runRow struct {
	ID, URL, Runbook, Target, By, State, Class, Icon, Started, Took, Step string
}

func (s *Server) runRowOf(v viewer, r *runmodel.Run) runRow {
	class, icon := runClass(r.State)
	row := runRow{ID: r.ID, URL: s.link(v, "/runs/"+r.ID, RunScope(r.ID), nil), Runbook: r.Runbook, Target: r.Target,
		By: r.Requester.Display(), State: r.State.Human(), Class: class, Icon: icon,
		Started: r.CreatedAt.UTC().Format("2006-01-02 15:04"), Took: human.Duration(r.Duration(s.o.Now()))}
	if !r.State.Terminal() && r.Cursor < len(r.Steps) {
		st := r.Steps[r.Cursor]
		row.Step = s.redact(nonEmpty(st.Title, st.ID))
	}
	if r.DryRun {
		row.Runbook += " (dry run)"
	}
	return row
}

func incidentClass(st incident.State) (class, icon string) {
	switch st {
	case incident.StateAcknowledged:
		return "wait", "👀"
	case incident.StateResolved:
		return "ok", "✅"
	}
	return "bad", "🚨"
}

// incident serves /incidents/<id> and /incidents/<id>.md.
func (s *Server) incident(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(r.PathValue("id"))
	id, md := strings.CutSuffix(id, ".md")
	v, ref := s.authorize(r, IncidentScope(id))
	if ref != nil {
		s.refuse(w, ref)
		return
	}
	if s.o.Incidents == nil {
		s.notFound(w, v, "This bot keeps no incidents.")
		return
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	in, err := s.o.Incidents.GetIncident(ctx, id)
	if errors.Is(err, incident.ErrNotFound) {
		err = chatmodel.ErrNotFound
	}
	if err != nil {
		s.readFailed(w, v, "incident "+id, err)
		return
	}
	runs, err := s.incidentRuns(ctx, in)
	if err != nil {
		s.failed(w, v, "the runs of incident "+in.ID, err)
		return
	}
	if md {
		s.markdown(w, in.ID, s.redact(incident.Markdown(in, runs, s.o.Now())))
		return
	}
	iv := s.buildIncident(in, runs, v)
	p := page{Title: "Incident " + in.ID + " — " + in.Title, Viewer: v, Body: iv}
	if iv.Live && s.o.Changes != nil {
		p.Live = iv.EventsURL
	}
	s.render(w, http.StatusOK, "incident.html", p)
}

// buildIncident turns an incident and the runs of its thread into its
// page's view for v.
func (s *Server) buildIncident(in *incident.Incident, runs []*runmodel.Run, v viewer) incidentView {
	now := s.o.Now()
	class, icon := incidentClass(in.State)
	scope := IncidentScope(in.ID)
	iv := incidentView{ID: in.ID, Title: s.redact(in.Title), Target: in.Target, State: string(in.State), StateClass: class, Icon: icon,
		Opened: ts(in.OpenedAt), Resolved: ts(in.ResolvedAt), Duration: human.Duration(in.Duration(now)),
		Source: s.redact(strings.TrimPrefix(incident.SourceLine(in), "Source: ")), MarkdownURL: s.link(v, "/incidents/"+in.ID+".md", scope, nil),
		EventsURL: s.link(v, "/incidents/"+in.ID+"/events", scope, nil)}
	iv.Live = incidentEnded(in, runs, now) == ""
	if !in.Since.IsZero() && in.Since.Before(in.OpenedAt) {
		iv.Since = ts(in.Since)
	}
	if in.AckedBy != nil {
		iv.AckedBy, iv.Acked = in.AckedBy.Display(), ts(in.AckedAt)
	}
	if in.State != incident.StateResolved && in.Silenced(now) {
		iv.Silenced = "until " + ts(in.SilencedUntil)
		if in.SilencedBy != nil {
			iv.Silenced += " by " + in.SilencedBy.Display()
		}
	}
	if in.State != incident.StateResolved {
		iv.Command = s.redact(in.Command())
		iv.Evidence = redactAll(s.redact, in.Evidence)
		iv.EvidenceAsOf = ts(in.UpdatedAt)
	}
	for _, e := range in.Timeline {
		iv.Timeline = append(iv.Timeline, incidentEntry{Time: ts(e.Time), Kind: e.Kind, Actor: e.Actor, Text: s.redact(e.Text), Evidence: redactAll(s.redact, e.Evidence)})
	}
	for _, run := range runs {
		iv.Runs = append(iv.Runs, s.runRowOf(v, run))
	}
	return iv
}

// incidentEnded says why an incident's page can no longer change ("" while
// it can): it is resolved, past the window in which it reopens when its
// alerts fire again, and no run of its thread is active.
func incidentEnded(in *incident.Incident, runs []*runmodel.Run, now time.Time) string {
	if in.State != incident.StateResolved || now.Before(in.ResolvedAt.Add(incident.ReopenWindow)) {
		return ""
	}
	for _, r := range runs {
		if !r.State.Terminal() {
			return ""
		}
	}
	return "the incident is resolved"
}

// incidentEvents serves /incidents/<id>/events: the incident page's body,
// sent at once and after each change of the incident, of a run of its
// thread or a run started in its thread, until the incident cannot change
// any more (incidentEnded).
func (s *Server) incidentEvents(w http.ResponseWriter, r *http.Request) {
	id := strings.ToLower(r.PathValue("id"))
	if s.o.Incidents == nil {
		http.Error(w, "this bot keeps no incidents", http.StatusNotFound)
		return
	}
	keys := []string{hubKey("incident", id)}
	s.events(w, r, IncidentScope(id), "incident", keys, func(ctx context.Context, v viewer) (*liveState, error) {
		in, err := s.o.Incidents.GetIncident(ctx, id)
		if err != nil {
			return nil, err
		}
		runs, err := s.incidentRuns(ctx, in)
		if err != nil {
			return nil, err
		}
		now := s.o.Now()
		// the version: the incident as stored and its runs' last changes
		h := fnv.New64a()
		if err := json.NewEncoder(h).Encode(in); err != nil {
			return nil, err
		}
		st := &liveState{keys: []string{hubKey("incident", id)}, ended: incidentEnded(in, runs, now),
			body: func() ([]byte, error) {
				var b bytes.Buffer
				err := s.tmpl.ExecuteTemplate(&b, "incident-body", s.buildIncident(in, runs, v))
				return b.Bytes(), err
			}}
		if !in.Root.IsZero() {
			st.keys = append(st.keys, hubKey("thread", in.Root.ID))
		}
		for _, run := range runs {
			fmt.Fprint(h, "|", run.ID, run.UpdatedAt.UnixNano())
			if !run.State.Terminal() {
				st.keys = append(st.keys, hubKey("run", run.ID))
			}
		}
		st.version = strconv.FormatUint(h.Sum64(), 36)
		if reopen := in.ResolvedAt.Add(incident.ReopenWindow); in.State == incident.StateResolved && now.Before(reopen) {
			st.recheck = reopen // it cannot reopen after: read it once more then
		}
		return st, nil
	})
}

// incidentRuns are the runs of an incident's thread, oldest first.
func (s *Server) incidentRuns(ctx context.Context, in *incident.Incident) ([]*runmodel.Run, error) {
	if in.Root.IsZero() {
		return nil, nil
	}
	runs, err := s.o.Runs.ListRuns(ctx, runmodel.RunQuery{Thread: in.Root.ID, Limit: 200})
	if err != nil {
		return nil, err
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].CreatedAt.Before(runs[j].CreatedAt) })
	return runs, nil
}

// runIncident is the incident whose thread the run is in, as a link (nil
// when none or when it cannot be read: the run page stands without it).
func (s *Server) runIncident(r *http.Request, snap *runSnapshot, v viewer) *linkView {
	c := snap.Run.Conversation
	if s.o.Incidents == nil || c.Thread == "" {
		return nil
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	in, err := s.o.Incidents.IncidentByMessage(ctx, chatmodel.MessageRef{Platform: c.Platform, Channel: c.Channel, ID: c.Thread})
	if err != nil || in == nil {
		return nil
	}
	_, icon := incidentClass(in.State)
	return &linkView{Text: icon + " incident " + in.ID + " — " + s.redact(in.Title), URL: s.link(v, "/incidents/"+in.ID, IncidentScope(in.ID), nil)}
}
