package concoursesim

import (
	"encoding/json"
	"net/http"
	"sort"
	"time"
)

func handleWorkers(c *reqCtx) {
	if !c.a.authenticated() {
		notAuthorized(c.w)
		return
	}
	if !c.a.admin() && len(c.a.teams(c.st)) == 0 {
		forbidden(c.w)
		return
	}
	listed := c.st.listedWorkers(c.now)
	names := make([]string, 0, len(listed))
	for n := range listed {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []apiWorker{}
	for _, n := range names {
		w := listed[n]
		if c.a.admin() || w.team == "" || c.a.authorized(w.team, RoleViewer) {
			out = append(out, presentWorker(w))
		}
	}
	writeJSON(c.w, http.StatusOK, out)
}

// workerTeam is checkWorkerTeamHandler: 401; admin passes; unknown worker
// 404; a team worker passes for members of its team; else 403.
func (c *reqCtx) workerTeam() (*simWorker, bool) {
	if !c.a.authenticated() {
		notAuthorized(c.w)
		return nil, false
	}
	w := c.st.workers[c.r.PathValue("worker")]
	switch {
	case w == nil:
		notFound(c.w)
		return nil, false
	case c.a.admin() || (w.team != "" && c.a.authorized(w.team, RoleMember)):
		return w, true
	}
	forbidden(c.w)
	return nil, false
}

// landOrRetireBody decodes the {"team": …} body land and retire need.
func (c *reqCtx) landOrRetireBody(w *simWorker) bool {
	var body struct {
		Team string `json:"team"`
	}
	if err := json.NewDecoder(c.r.Body).Decode(&body); err != nil {
		c.w.WriteHeader(http.StatusBadRequest)
		return false
	}
	if body.Team != w.team {
		c.w.WriteHeader(http.StatusBadRequest)
		return false
	}
	return true
}

func handleLand(c *reqCtx) {
	w, ok := c.workerTeam()
	if !ok || !c.landOrRetireBody(w) {
		return
	}
	if w.state != StateLanded {
		w.state = StateLanding
	}
	c.w.WriteHeader(http.StatusOK)
}

func handleRetire(c *reqCtx) {
	w, ok := c.workerTeam()
	if !ok || !c.landOrRetireBody(w) {
		return
	}
	w.state = StateRetiring
	c.w.WriteHeader(http.StatusOK)
}

func handlePrune(c *reqCtx) {
	w, ok := c.workerTeam()
	if !ok {
		return
	}
	if w.state == StateRunning {
		writeJSON(c.w, http.StatusBadRequest, map[string]string{"stderr": "cannot prune running worker"})
		return
	}
	delete(c.st.workers, w.name)
	if c.st.workerCacheLag > 0 {
		c.st.cachedPruned[w.name] = cachedWorker{w: *w, at: c.now}
	}
	c.w.WriteHeader(http.StatusOK)
}

// listedWorkers is what the web node's worker cache lists at now: the
// registered workers, plus the pruned ones the cache has not dropped yet.
func (st *state) listedWorkers(now time.Time) map[string]*simWorker {
	if len(st.cachedPruned) == 0 {
		return st.workers
	}
	out := make(map[string]*simWorker, len(st.workers)+len(st.cachedPruned))
	for n, cw := range st.cachedPruned {
		if now.Sub(cw.at) >= st.workerCacheLag {
			delete(st.cachedPruned, n)
			continue
		}
		w := cw.w
		out[n] = &w
	}
	for n, w := range st.workers {
		out[n] = w
	}
	return out
}
