package concoursesim

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
)

func (st *state) sortedPipelines() []*simPipeline {
	out := append([]*simPipeline(nil), st.pipelines...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].team != out[j].team {
			return out[i].team < out[j].team
		}
		return out[i].id < out[j].id
	})
	return out
}

func handleAllPipelines(c *reqCtx) {
	if !c.ifProvided() {
		return
	}
	out := []apiPipeline{}
	for _, p := range c.st.sortedPipelines() {
		if p.public || c.a.authorized(p.team, RoleViewer) {
			out = append(out, presentPipeline(p))
		}
	}
	writeJSON(c.w, http.StatusOK, out)
}

func handleTeamPipelines(c *reqCtx) {
	if !c.ifProvided() {
		return
	}
	team := c.r.PathValue("team")
	if _, ok := c.st.team(team); !ok {
		notFound(c.w)
		return
	}
	out := []apiPipeline{}
	for _, p := range c.st.sortedPipelines() {
		if p.team == team && (p.public || c.a.authorized(team, RoleViewer)) {
			out = append(out, presentPipeline(p))
		}
	}
	writeJSON(c.w, http.StatusOK, out)
}

func handlePipeline(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	writeJSON(c.w, http.StatusOK, presentPipeline(p))
}

func handlePause(c *reqCtx) {
	p, ok := c.rejectArchived()
	if !ok || !c.authorization(RolePipelineOperator) {
		return
	}
	if !p.paused {
		p.paused, p.pausedBy, p.pausedAt = true, c.a.user.Name, c.now
	}
	c.w.WriteHeader(http.StatusOK)
}

func handleUnpause(c *reqCtx) {
	p, ok := c.rejectArchived()
	if !ok || !c.authorization(RolePipelineOperator) {
		return
	}
	p.paused, p.pausedBy, p.pausedAt = false, "", timeZero
	c.w.WriteHeader(http.StatusOK)
}

func handleConfig(c *reqCtx) {
	if !c.authorization(RoleViewer) {
		return
	}
	p := c.st.pipeline(c.r.PathValue("team"), c.r.PathValue("pipeline"))
	if p == nil || p.archived {
		notFound(c.w)
		return
	}
	c.w.Header().Set("X-Concourse-Config-Version", strconv.Itoa(p.id))
	writeJSON(c.w, http.StatusOK, map[string]any{"config": pipelineConfig(p)})
}

func handleJobs(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	out := []apiJobSummary{}
	for _, j := range p.jobs {
		out = append(out, c.st.presentJobSummary(j))
	}
	writeJSON(c.w, http.StatusOK, out)
}

func handleJob(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	j := p.job(c.r.PathValue("job"))
	if j == nil {
		notFound(c.w)
		return
	}
	writeJSON(c.w, http.StatusOK, c.st.presentJob(j))
}

func handleResources(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	out := []apiResource{}
	for _, r := range p.resources {
		out = append(out, presentResource(p, r))
	}
	writeJSON(c.w, http.StatusOK, out)
}

func handleResourceTypes(c *reqCtx) {
	p, ok := c.pipelineAccess()
	if !ok {
		return
	}
	out := []apiResourceType{}
	for _, t := range p.types {
		out = append(out, apiResourceType{Name: t.cfg.Name, Type: t.cfg.Type, Source: t.cfg.Source})
	}
	writeJSON(c.w, http.StatusOK, out)
}

// writeCheckBuild answers 201 with the check build. Concourse does not set
// a Content-Type here, so Go sniffs the JSON as text/plain.
func writeCheckBuild(c *reqCtx, b *simBuild) {
	c.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	c.w.WriteHeader(http.StatusCreated)
	_ = jsonEncode(c.w, presentBuild(b))
}

func handleCheckResource(c *reqCtx) {
	p, ok := c.rejectArchived()
	if !ok || !c.authorization(RolePipelineOperator) {
		return
	}
	for _, r := range p.resources {
		if r.cfg.Name == c.r.PathValue("resource") {
			b := c.st.newCheckBuild(p, r.cfg.Name, true, c.now)
			if r.cfg.CheckError {
				b.result, b.errMsg = StatusErrored, "resource script '/opt/resource/check []' failed: exit status 1"
			}
			r.lastCheck = b
			writeCheckBuild(c, b)
			return
		}
	}
	notFound(c.w)
}

func handleCheckResourceType(c *reqCtx) {
	p, ok := c.rejectArchived()
	if !ok || !c.authorization(RolePipelineOperator) {
		return
	}
	for _, t := range p.types {
		if t.cfg.Name == c.r.PathValue("type") {
			b := c.st.newCheckBuild(p, t.cfg.Name, false, c.now)
			if t.cfg.CheckError != "" {
				b.result, b.errMsg = StatusErrored, t.cfg.CheckError
			}
			t.lastCheck = b
			writeCheckBuild(c, b)
			return
		}
	}
	notFound(c.w)
}

func handleClearResourceCache(c *reqCtx) {
	if !c.authorization(RolePipelineOperator) {
		return
	}
	p := c.st.pipeline(c.r.PathValue("team"), c.r.PathValue("pipeline"))
	if p == nil {
		notFound(c.w)
		return
	}
	name := c.r.PathValue("resource")
	for _, r := range p.resources {
		if r.cfg.Name == name {
			n := r.caches
			r.caches = 0
			writeJSON(c.w, http.StatusOK, map[string]int{"caches_removed": n})
			return
		}
	}
	jsonAPINotFound(c.w, "Resource Not Found Error", fmt.Sprintf("Resource with name '%s' not found.", name))
}

func handleClearTaskCache(c *reqCtx) {
	if !c.authorization(RolePipelineOperator) {
		return
	}
	p := c.st.pipeline(c.r.PathValue("team"), c.r.PathValue("pipeline"))
	if p == nil {
		notFound(c.w)
		return
	}
	name := c.r.PathValue("job")
	j := p.job(name)
	if j == nil {
		jsonAPINotFound(c.w, "Job Not Found Error", fmt.Sprintf("Job with name '%s' not found.", name))
		return
	}
	step := c.r.PathValue("step")
	n := j.caches[step]
	j.caches[step] = 0
	writeJSON(c.w, http.StatusOK, map[string]int{"caches_removed": n})
}
