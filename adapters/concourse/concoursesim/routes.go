package concoursesim

import (
	"maps"
	"net/http"
	"slices"
	"time"
)

// reqCtx is one request handled under the state lock, after the model has
// advanced to now.
type reqCtx struct {
	w   http.ResponseWriter
	r   *http.Request
	st  *state
	a   access
	now time.Time
}

// locked wraps a handler: take the lock, apply due transitions, resolve
// the caller.
func (s *Server) locked(fn func(c *reqCtx)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.st.mu.Lock()
		defer s.st.mu.Unlock()
		now := s.st.clock.Now()
		s.st.advance(now)
		fn(&reqCtx{w: w, r: r, st: s.st, a: s.st.access(r, now), now: now})
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	m.HandleFunc("POST /sky/issuer/token", s.handleToken)
	m.HandleFunc("GET /api/v1/info", s.locked(handleInfo))
	m.HandleFunc("GET /api/v1/user", s.locked(handleUser))
	m.HandleFunc("GET /api/v1/teams", s.locked(handleTeams))

	m.HandleFunc("GET /api/v1/workers", s.locked(handleWorkers))
	m.HandleFunc("PUT /api/v1/workers/{worker}/land", s.locked(handleLand))
	m.HandleFunc("PUT /api/v1/workers/{worker}/retire", s.locked(handleRetire))
	m.HandleFunc("PUT /api/v1/workers/{worker}/prune", s.locked(handlePrune))

	m.HandleFunc("GET /api/v1/builds", s.locked(handleAllBuilds))
	m.HandleFunc("GET /api/v1/builds/{id}", s.locked(handleBuild))
	m.HandleFunc("PUT /api/v1/builds/{id}/abort", s.locked(handleAbort))
	m.HandleFunc("GET /api/v1/builds/{id}/events", s.handleEvents)
	m.HandleFunc("GET /api/v1/teams/{team}/builds", s.locked(handleTeamBuilds))

	const p = "/api/v1/teams/{team}/pipelines/{pipeline}"
	m.HandleFunc("GET /api/v1/pipelines", s.locked(handleAllPipelines))
	m.HandleFunc("GET /api/v1/teams/{team}/pipelines", s.locked(handleTeamPipelines))
	m.HandleFunc("GET "+p, s.locked(handlePipeline))
	m.HandleFunc("PUT "+p+"/pause", s.locked(handlePause))
	m.HandleFunc("PUT "+p+"/unpause", s.locked(handleUnpause))
	m.HandleFunc("GET "+p+"/config", s.locked(handleConfig))
	m.HandleFunc("GET "+p+"/builds", s.locked(handlePipelineBuilds))
	m.HandleFunc("GET "+p+"/jobs", s.locked(handleJobs))
	m.HandleFunc("GET "+p+"/jobs/{job}", s.locked(handleJob))
	m.HandleFunc("GET "+p+"/jobs/{job}/builds", s.locked(handleJobBuilds))
	m.HandleFunc("POST "+p+"/jobs/{job}/builds", s.locked(handleTriggerJob))
	m.HandleFunc("DELETE "+p+"/jobs/{job}/tasks/{step}/cache", s.locked(handleClearTaskCache))
	m.HandleFunc("GET "+p+"/resources", s.locked(handleResources))
	m.HandleFunc("POST "+p+"/resources/{resource}/check", s.locked(handleCheckResource))
	m.HandleFunc("DELETE "+p+"/resources/{resource}/cache", s.locked(handleClearResourceCache))
	m.HandleFunc("GET "+p+"/resource-types", s.locked(handleResourceTypes))
	m.HandleFunc("POST "+p+"/resource-types/{type}/check", s.locked(handleCheckResourceType))
	s.mux = m
}

// ifProvided is CheckAuthenticationIfProvided: anonymous is fine, a
// refused token is not.
func (c *reqCtx) ifProvided() bool {
	if c.a.hasToken && !c.a.authenticated() {
		notAuthorized(c.w)
		return false
	}
	return true
}

// authorization is CheckAuthorizationHandler: 401, then 403 unless the
// caller has role on the path's team.
func (c *reqCtx) authorization(role string) bool {
	if !c.a.authenticated() {
		notAuthorized(c.w)
		return false
	}
	if !c.a.authorized(c.r.PathValue("team"), role) {
		forbidden(c.w)
		return false
	}
	return true
}

// pipelineAccess is checkPipelineAccessHandler: 404 for an unknown team
// or pipeline first, then public or authorized, else 401/403.
func (c *reqCtx) pipelineAccess() (*simPipeline, bool) {
	p := c.st.pipeline(c.r.PathValue("team"), c.r.PathValue("pipeline"))
	if p == nil {
		notFound(c.w)
		return nil, false
	}
	if p.public || c.a.authorized(p.team, RoleViewer) {
		return p, true
	}
	denied(c.w, c.a)
	return nil, false
}

// rejectArchived runs before authorization on pause/unpause/check routes:
// 404 for unknown pipelines, 409 for archived ones.
func (c *reqCtx) rejectArchived() (*simPipeline, bool) {
	p := c.st.pipeline(c.r.PathValue("team"), c.r.PathValue("pipeline"))
	if p == nil {
		notFound(c.w)
		return nil, false
	}
	if p.archived {
		text(c.w, http.StatusConflict, "action not allowed for an archived pipeline\n")
		return nil, false
	}
	return p, true
}

func handleInfo(c *reqCtx) {
	if !c.ifProvided() {
		return
	}
	writeJSON(c.w, http.StatusOK, map[string]any{
		"version": c.st.version, "worker_version": c.st.workerVersion,
		"feature_flags": map[string]bool{
			"global_resources": false, "build_rerun": false, "cache_streamed_volumes": false, "resource_causality": false,
		},
		"external_url": externalURL(c.r), "cluster_name": c.st.cluster,
	})
}

func handleUser(c *reqCtx) {
	if !c.a.authenticated() {
		notAuthorized(c.w)
		return
	}
	writeJSON(c.w, http.StatusOK, presentUser(*c.a.user))
}

func handleTeams(c *reqCtx) {
	if !c.ifProvided() {
		return
	}
	out := []map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(c.st.teams)) {
		if c.a.authorized(name, RoleViewer) {
			out = append(out, map[string]any{"id": c.st.teams[name], "name": name, "auth": c.st.teamAuth(name)})
		}
	}
	writeJSON(c.w, http.StatusOK, out)
}

func externalURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
