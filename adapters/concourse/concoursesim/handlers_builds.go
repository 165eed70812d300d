package concoursesim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// page is atc.Page: limit and the from/to bounds (build ids, or unix
// seconds compared with start_time when timestamps is set).
type page struct {
	limit      int
	from, to   *int
	timestamps bool
}

func parsePage(q url.Values) (page, bool) {
	p := page{limit: 100, timestamps: q.Get("timestamps") != ""}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, false
		}
		p.limit = n
	}
	for key, dst := range map[string]**int{"from": &p.from, "to": &p.to} {
		if v := q.Get(key); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return p, false
			}
			*dst = &n
		}
	}
	return p, true
}

// listBuilds answers a builds list with Concourse's ordering and Link
// pagination. keep selects the candidate builds; rangeErr is the status
// for from > to (500 on /api/v1/builds, 404 elsewhere).
func (c *reqCtx) listBuilds(keep func(*simBuild) bool, rangeErr int) {
	pg, ok := parsePage(c.r.URL.Query())
	if !ok {
		c.w.WriteHeader(http.StatusBadRequest)
		return
	}
	var cands []*simBuild // newest first
	for i := len(c.st.builds) - 1; i >= 0; i-- {
		b := c.st.builds[i]
		if !b.check && keep(b) {
			cands = append(cands, b)
		}
	}
	if pg.timestamps {
		var out []apiBuild
		for _, b := range cands {
			if len(out) >= pg.limit {
				break
			}
			st := unix(b.start)
			if b.start.IsZero() || (pg.from != nil && st < int64(*pg.from)) || (pg.to != nil && st > int64(*pg.to)) {
				continue
			}
			out = append(out, presentBuild(b))
		}
		writeJSON(c.w, http.StatusOK, nonNil(out))
		return
	}
	var sel []*simBuild
	switch {
	case pg.from == nil && pg.to == nil:
		sel = take(cands, pg.limit, func(*simBuild) bool { return true })
	case pg.from == nil:
		sel = take(cands, pg.limit, func(b *simBuild) bool { return b.id <= *pg.to })
	case pg.to == nil:
		asc := reversed(cands)
		sel = reversed(take(asc, pg.limit, func(b *simBuild) bool { return b.id >= *pg.from }))
	default:
		if *pg.from > *pg.to {
			c.w.WriteHeader(rangeErr)
			return
		}
		// Concourse returns a bounded range in ascending order.
		sel = take(reversed(cands), pg.limit, func(b *simBuild) bool { return b.id >= *pg.from && b.id <= *pg.to })
	}
	if len(sel) > 0 {
		newest, oldest := sel[0], sel[len(sel)-1]
		if newest.id < oldest.id {
			newest, oldest = oldest, newest
		}
		var links []string
		for _, b := range cands { // newest first: the first older one is next
			if b.id < oldest.id {
				links = append(links, c.link("to", b.id, pg.limit, "next"))
				break
			}
		}
		for i := len(cands) - 1; i >= 0; i-- {
			if cands[i].id > newest.id {
				links = append(links, c.link("from", cands[i].id, pg.limit, "previous"))
				break
			}
		}
		if len(links) > 0 {
			c.w.Header().Set("Link", strings.Join(links, ", "))
		}
	}
	out := make([]apiBuild, 0, len(sel))
	for _, b := range sel {
		out = append(out, presentBuild(b))
	}
	writeJSON(c.w, http.StatusOK, out)
}

func (c *reqCtx) link(key string, id, limit int, rel string) string {
	return fmt.Sprintf("<%s%s?%s=%d&limit=%d>; rel=%q", externalURL(c.r), c.r.URL.Path, key, id, limit, rel)
}

func take(bs []*simBuild, limit int, keep func(*simBuild) bool) []*simBuild {
	var out []*simBuild
	for _, b := range bs {
		if len(out) >= limit {
			break
		}
		if keep(b) {
			out = append(out, b)
		}
	}
	return out
}

func reversed(bs []*simBuild) []*simBuild {
	out := make([]*simBuild, len(bs))
	for i, b := range bs {
		out[len(bs)-1-i] = b
	}
	return out
}

func nonNil(bs []apiBuild) []apiBuild {
	if bs == nil {
		return []apiBuild{}
	}
	return bs
}

func handleAllBuilds(c *reqCtx) {
	if !c.ifProvided() {
		return
	}
	c.listBuilds(func(b *simBuild) bool {
		return c.a.admin() || (b.p != nil && b.p.public) || c.a.authorized(b.team, RoleViewer)
	}, http.StatusInternalServerError)
}

func handleTeamBuilds(c *reqCtx) {
	if !c.authorization(RoleViewer) {
		return
	}
	team := c.r.PathValue("team")
	if _, ok := c.st.team(team); !ok {
		notFound(c.w)
		return
	}
	c.listBuilds(func(b *simBuild) bool { return b.team == team }, http.StatusNotFound)
}

func handlePipelineBuilds(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	c.listBuilds(func(b *simBuild) bool { return b.p == p }, http.StatusNotFound)
}

func handleJobBuilds(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	j := p.job(c.r.PathValue("job"))
	if j == nil {
		notFound(c.w)
		return
	}
	c.listBuilds(func(b *simBuild) bool { return b.j == j }, http.StatusNotFound)
}

// buildFromPath resolves :id for the build read/write checks: 400 for a
// non-integer id, 404 for an unknown build.
func (c *reqCtx) buildFromPath() (*simBuild, bool) {
	id, err := strconv.Atoi(c.r.PathValue("id"))
	if err != nil {
		c.w.WriteHeader(http.StatusBadRequest)
		return nil, false
	}
	b := c.st.byID[id]
	if b == nil {
		notFound(c.w)
		return nil, false
	}
	return b, true
}

func handleBuild(c *reqCtx) {
	b, ok := c.buildFromPath()
	if !ok {
		return
	}
	if !(c.a.authorized(b.team, RoleViewer) || (b.p != nil && b.p.public)) {
		denied(c.w, c.a)
		return
	}
	writeJSON(c.w, http.StatusOK, presentBuild(b))
}

func handleAbort(c *reqCtx) {
	if !c.a.authenticated() {
		notAuthorized(c.w)
		return
	}
	b, ok := c.buildFromPath()
	if !ok {
		return
	}
	if !c.a.authorized(b.team, RolePipelineOperator) {
		forbidden(c.w)
		return
	}
	if b.running() {
		_, force := c.r.URL.Query()["force"]
		if force {
			c.st.finish(b, StatusAborted, c.now)
		} else if !b.abortRequested {
			b.abortRequested, b.abortAt = true, c.st.abortTime(c.now)
		}
	}
	c.w.WriteHeader(http.StatusNoContent)
}

func handleTriggerJob(c *reqCtx) {
	p, ok := c.rejectArchived()
	if !ok || !c.authorization(RolePipelineOperator) {
		return
	}
	j := p.job(c.r.PathValue("job"))
	if j == nil {
		notFound(c.w)
		return
	}
	b := c.st.newBuild(&simBuild{
		team: p.team, p: p, j: j, status: StatusPending, createdBy: c.a.user.Name, created: c.now,
		log: j.cfg.Log, errMsg: j.cfg.Error, result: jobResult(j.cfg),
	})
	writeJSON(c.w, http.StatusOK, presentBuild(b))
}
