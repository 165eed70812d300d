package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/web"
)

func TestRunPage_ShowsStepsGateVotesChangesAndAudit(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	code, h, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
	assert.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline")
	assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
	for _, want := range []string{
		"worker-stalled", "infra-prd", "succeeded", // header
		"1. Workers", "3 running, 1 stalled", "2. Check the services", "sudo systemctl status concourse-worker", "answered by @bob", // steps
		"Prune the stalled worker", "prune 1 worker", r.Steps[2].PlanHash, // the gate and its plan hash
		"<strong>@alice</strong> not counted", "you started this run", // a refused vote, why
		"<strong>@carol</strong> approved", "by reaction", // who, how
		"pruned worker-0 (approved by @carol)",                                           // Changes
		"approval requested", "covers these entries", "groundcrew audit verify --expect", // audit and head
		"worker-0",
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "data-events", "a finished run's page is not live")
	assert.NotContains(t, body, "<script>", "no inline script")
}

// A run from a bound channel says its binding and the teams its changes
// concern; a run of none says neither.
func TestRunPage_SaysTheChannelBindingAndTheTeams(t *testing.T) {
	e := newEnv(t)
	plain := e.seedRun(t, "r-plain00001", runmodel.RunSucceeded)
	_, _, body := e.get(t, e.links.Run(plain.ID, plain.CreatedAt), outside)
	assert.NotContains(t, body, "<dt>Channel</dt>")
	assert.NotContains(t, body, "<dt>Teams</dt>")

	r := e.seedRunWith(t, "r-bound00001", runmodel.RunSucceeded, t0, "", func(r *runmodel.Run) {
		r.Scope = &runmodel.ChannelScope{Key: "#payments-ci", Targets: []string{"infra-prd"}, Teams: []string{"payments"}}
		r.Steps[2].Teams = []string{"payments"}
	})
	code, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<dt>Channel</dt><dd><code>#payments-ci</code>, bound to team <code>payments</code> on <code>infra-prd</code>")
	assert.Contains(t, body, "<dt>Teams</dt><dd><code>payments</code>")
}

// A run that failed at a step says its error once, on the step; the top
// of the page points at that step, as the run's status in chat does. An
// error of no step is said at the top.
func TestRunPage_AFailedRunPointsAtItsStep(t *testing.T) {
	e := newEnv(t, func(o *web.Options) {
		o.Words.Stopped = func(r *runmodel.Run) (string, string, bool) {
			if r.Steps[2].Status != runmodel.StepFailed {
				return "", "", false
			}
			return "prune", "failed at step 3/3 (Prune the stalled worker)", true
		}
	})
	msg := "infra-prd: worker `worker-0` could not be pruned: 403 Forbidden"
	r := e.seedRunWith(t, "r-failed0001", runmodel.RunFailed, t0, "", func(r *runmodel.Run) {
		r.Error = "step prune failed: " + msg
		r.Steps[2].Status, r.Steps[2].Summary, r.Steps[2].Error = runmodel.StepFailed, "", msg
	})
	code, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 1, strings.Count(body, "could not be pruned"), "the error once, on its step:\n%s", body)
	assert.Contains(t, body, `<p class="error">❌ <a href="#step-prune">failed at step 3/3 (Prune the stalled worker)</a></p>`)
	assert.Contains(t, body, `id="step-prune"`, "the anchor it points at")

	other := e.seedRunWith(t, "r-failed0002", runmodel.RunFailed, t0, "", func(r *runmodel.Run) { r.Error = "the store could not be read" })
	_, _, body = e.get(t, e.links.Run(other.ID, other.CreatedAt), outside)
	assert.Contains(t, body, `<p class="error">the store could not be read</p>`, "an error of no step, at the top")
	assert.NotContains(t, body, "failed at step")
}

func TestRunPage_OpenGateSaysWhatItNeedsAndIsLive(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-open000001", runmodel.RunAwaitingApproval)
	code, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "waiting for approval")
	assert.Contains(t, body, "Needs")
	assert.Contains(t, body, "@ci-oncall")
	assert.Contains(t, body, "Expires")
	assert.Contains(t, body, `data-events="/runs/r-open000001/events?t=`)
	assert.Contains(t, body, "None so far.")
}

func TestRunPage_Refusals(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	other := e.seedRun(t, "r-other00001", runmodel.RunSucceeded)
	link := e.links.Run(r.ID, r.CreatedAt)
	tok := link[strings.Index(link, "t=")+2:]
	exp, mac, _ := strings.Cut(tok, "-")
	tampered := exp + "-" + strings.Map(func(c rune) rune {
		if c == 'a' {
			return 'b'
		}
		return 'a'
	}, mac[:1]) + mac[1:]
	signer, _ := web.NewSigner([]byte(testKey))
	expired := signer.Sign(web.RunScope(r.ID), e.now.Add(-time.Minute))
	otherKey, _ := web.NewSigner([]byte("another key of 32 bytes, really!"))
	cases := []struct {
		name, path, addr string
		hdr              []string
		code             int
		says             string
	}{
		{"no token", "/runs/" + r.ID, outside, nil, 403, "You need a link"},
		{"expired token", "/runs/" + r.ID + "?t=" + expired, outside, nil, 403, "This link has expired"},
		{"tampered token", "/runs/" + r.ID + "?t=" + tampered, outside, nil, 403, "This link is not valid"},
		{"edited expiry", "/runs/" + r.ID + "?t=" + strings.Replace(tok, exp, exp[:len(exp)-1]+"z", 1), outside, nil, 403, "This link is not valid"},
		{"another key", "/runs/" + r.ID + "?t=" + otherKey.Sign(web.RunScope(r.ID), e.now.Add(time.Hour)), outside, nil, 403, "not valid"},
		{"another run's token", "/runs/" + other.ID + "?t=" + tok, outside, nil, 403, "not valid"},
		{"garbage token", "/runs/" + r.ID + "?t=%3Cscript%3E", outside, nil, 403, "not valid"},
		{"header from an untrusted address", "/runs/" + r.ID, outside, []string{"X-Forwarded-User", "mallory"}, 403, "not one of web.trusted_proxies"},
		{"trusted proxy without the header", "/runs/" + r.ID, "10.1.2.3:4000", nil, 403, "without the user header"},
		{"trusted proxy with the header", "/runs/" + r.ID, "10.1.2.3:4000", []string{"X-Forwarded-User", "carol"}, 200, "signed in as carol"},
		{"valid link", link, outside, nil, 200, "Prune the stalled worker"},
		{"valid link, upper-case id", strings.Replace(link, r.ID, strings.ToUpper(r.ID), 1), outside, nil, 200, "Prune the stalled worker"},
		{"markdown with the link", strings.Replace(link, r.ID+"?", r.ID+".md?", 1), outside, nil, 200, "# worker-stalled on infra-prd — run " + r.ID},
		{"markdown without", "/runs/" + r.ID + ".md", outside, nil, 403, "You need a link"},
		{"events without", "/runs/" + r.ID + "/events", outside, nil, 403, "You need a link"},
		{"a run's link on the index", "/?t=" + tok, outside, nil, 403, "This link is not valid"},
		{"a run's link on a target", "/targets/infra-prd?t=" + tok, outside, nil, 403, "This link is not valid"},
		{"unknown run, valid site link", "/runs/r-nothere0000?t=" + signer.Sign(web.ScopeSite, e.now.Add(time.Hour)), outside, nil, 404, "There is no run r-nothere0000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := e.get(t, c.path, c.addr, c.hdr...)
			assert.Equal(t, c.code, code, body)
			assert.Contains(t, body, c.says)
			if c.code == 403 {
				assert.NotContains(t, body, "worker-0", "a refusal shows nothing of the run")
			}
		})
	}
}

func TestRunMarkdown_IsTheEnginesMarkdown(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	link := e.links.Run(r.ID, r.CreatedAt)
	code, h, body := e.get(t, strings.Replace(link, "?", ".md?", 1), outside)
	require.Equal(t, 200, code)
	assert.Equal(t, "text/markdown; charset=utf-8", h.Get("Content-Type"))
	assert.Equal(t, "# worker-stalled on infra-prd — run r-done000001\n", body)
	_, _, page := e.get(t, link, outside)
	assert.Contains(t, page, `id="copy-md" data-src="/runs/r-done000001.md?t=`)
}

func TestPages_AreEscapedAndRedacted(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	_, err := e.db.UpdateRun(context.Background(), r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Title = `<script>alert(1)</script>`
		r.Steps[0].Summary = "logged in with password hunter2-secret"
		r.Steps[0].Detail = "bidi \u202e here"
		return nil
	})
	require.NoError(t, err)
	_, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	assert.NotContains(t, body, "<script>alert(1)")
	assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.NotContains(t, body, "hunter2-secret")
	assert.Contains(t, body, "logged in with password [redacted]")
	assert.NotContains(t, body, "\u202e")
	assert.Contains(t, body, "&lt;U&#43;202E&gt;")
}

func TestPages_AreReadOnly(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-open000001", runmodel.RunAwaitingApproval)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		req := httptest.NewRequest(m, strings.TrimPrefix(e.links.Run(r.ID, r.CreatedAt), "https://gc.example.com"), nil)
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, req)
		assert.Equal(t, http.StatusMethodNotAllowed, w.Code, m)
	}
}

func TestRunPage_AHugePlanIsPaged(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-open000001", runmodel.RunAwaitingApproval)
	plan := &opmodel.Plan{Op: "concourse.abort_builds", Target: "infra-prd", Summary: "abort 2,000 builds"}
	for i := range 2000 {
		plan.Items = append(plan.Items, opmodel.PlanItem{Kind: "build", ID: fmt.Sprint(100000 + i), Detail: "main/ci/unit pending 41 min, " + strings.Repeat("x", 200)})
	}
	_, err := e.db.UpdateRun(context.Background(), r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Gate.Plan, r.Gate.PlanHash = plan, plan.Hash()
		return nil
	})
	require.NoError(t, err)
	link := e.links.Run(r.ID, r.CreatedAt)
	code, _, body := e.get(t, link, outside)
	require.Equal(t, 200, code)
	assert.Less(t, len(body), 100<<10, "the run page stays small with a 2,000-item plan")
	assert.Contains(t, body, "All 2,000 items (1,950 more, paged)")
	assert.Contains(t, body, ">100049<")
	assert.NotContains(t, body, ">100050<")
	i := strings.Index(body, `/runs/r-open000001/steps/prune?`)
	require.Positive(t, i)
	more := body[i:]
	more = strings.ReplaceAll(more[:strings.Index(more, `"`)], "&amp;", "&")
	code, _, list := e.get(t, more, outside)
	require.Equal(t, 200, code, list)
	assert.Contains(t, list, "1–200 of 2,000 · page 1 of 10")
	assert.Contains(t, list, ">100199<")
	assert.NotContains(t, list, ">100200<")
	assert.Contains(t, list, "next →")
	code, _, last := e.get(t, more+"&page=10", outside)
	require.Equal(t, 200, code)
	assert.Contains(t, last, "1801–2000 of 2,000 · page 10 of 10")
	assert.Contains(t, last, plan.Hash())
}

func TestIncidentPage_AndItsMarkdown(t *testing.T) {
	e := newEnv(t)
	in := e.seedIncident(t, "i-3f2a9c", "msg-1")
	r := e.seedRun(t, "r-inc0000001", runmodel.RunSucceeded)
	_, err := e.db.UpdateRun(context.Background(), r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Conversation.Thread = "msg-1"
		return nil
	})
	require.NoError(t, err)
	link := e.links.Incident(in.ID, in.OpenedAt)
	code, _, body := e.get(t, link, outside)
	require.Equal(t, 200, code, body)
	for _, want := range []string{"FileSystemSpaceFillingUp", "not yet", "<dd>Alertmanager (disk-full)", "6% space left",
		"/runbook run worker-disk-full target=infra-prd worker=0", "r-inc0000001", "opened"} {
		assert.Contains(t, body, want)
	}
	// the run linked from the incident page opens with its own link
	i := strings.Index(body, `/runs/r-inc0000001?t=`)
	require.Positive(t, i)
	runLink := body[i : i+strings.Index(body[i:], `"`)]
	code, _, runPage := e.get(t, runLink, outside)
	require.Equal(t, 200, code)
	assert.Contains(t, runPage, "incident i-3f2a9c")

	code, h, md := e.get(t, strings.Replace(link, "?", ".md?", 1), outside)
	require.Equal(t, 200, code)
	assert.Equal(t, "text/markdown; charset=utf-8", h.Get("Content-Type"))
	assert.Contains(t, md, "# Incident i-3f2a9c — FileSystemSpaceFillingUp")
	assert.Contains(t, md, "| r-inc0000001 | worker-stalled |")

	code, _, _ = e.get(t, "/incidents/"+in.ID, outside)
	assert.Equal(t, 403, code)
	code, _, _ = e.get(t, "/incidents/"+in.ID+"?t="+strings.Split(e.links.Run(r.ID, r.CreatedAt), "t=")[1], outside)
	assert.Equal(t, 403, code, "a run's link does not open an incident")
}

func TestIndex_OpenThenFinishedPagedAndFiltered(t *testing.T) {
	e := newEnv(t)
	e.seedIncident(t, "i-3f2a9c", "msg-1")
	e.seedRun(t, "r-open000001", runmodel.RunAwaitingApproval)
	for i := range 60 {
		state := runmodel.RunSucceeded
		if i%2 == 1 {
			state = runmodel.RunFailed
		}
		e.seedRunAt(t, fmt.Sprintf("r-done%06d", i), state, t0.Add(-time.Duration(i)*time.Minute))
	}
	code, _, body := e.get(t, "/", "10.0.0.1:1", "X-Forwarded-User", "carol")
	require.Equal(t, 200, code, body)
	for _, want := range []string{"i-3f2a9c", "FileSystemSpaceFillingUp", "Waiting for a person", "r-open000001", "0 approvals so far", "r-done000000", "older →", "infra-prd"} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "r-done000050", "50 a page")
	i := strings.Index(body, `href="/?after=`)
	require.Positive(t, i)
	older := strings.ReplaceAll(body[i+6:i+6+strings.Index(body[i+6:], `"`)], "&amp;", "&")
	_, _, page2 := e.get(t, older, "10.0.0.1:1", "X-Forwarded-User", "carol")
	assert.Contains(t, page2, "r-done000059")
	assert.NotContains(t, page2, "r-done000049")
	assert.Contains(t, page2, "← newest")

	_, _, failed := e.get(t, "/?state=failed&since=1h", "10.0.0.1:1", "X-Forwarded-User", "carol")
	assert.Contains(t, failed, "r-done000001")
	assert.NotContains(t, failed, "r-done000002")
	_, _, bad := e.get(t, "/?state=exploded", "10.0.0.1:1", "X-Forwarded-User", "carol")
	assert.Contains(t, bad, "state &#34;exploded&#34;: use one of succeeded, failed, cancelled")

	site := e.links.Site()
	code, _, viaLink := e.get(t, site, outside)
	require.Equal(t, 200, code)
	assert.Contains(t, viaLink, `<input type="hidden" name="t"`, "the filter form keeps the link's token")
	assert.Contains(t, viaLink, "opened with a link")
}

func TestTargetPage_ShowsTheDigestChart(t *testing.T) {
	e := newEnv(t)
	var pts []digest.Point
	for i := range 5 {
		pts = append(pts, digest.Point{At: t0.Add(time.Duration(i) * time.Hour), Pending: 10 * i, Errored: i, Workers: map[string]int{"running": 3, "stalled": 1}})
	}
	data := digest.Data{Target: "infra-prd", At: t0.Add(4 * time.Hour)}
	require.NoError(t, e.db.SaveDigest(context.Background(), "digest-key", digest.Record{Posted: t0.Add(4 * time.Hour), Data: &data, Series: pts}))
	site := e.links.Site()
	tok := site[strings.Index(site, "t=")+2:]
	code, _, body := e.get(t, "/targets/infra-prd?t="+tok, outside)
	require.Equal(t, 200, code, body)
	assert.Contains(t, body, "#ci-ops daily")
	assert.Contains(t, body, "Chart of infra-prd over the last 5 digests")
	code, h, png := e.get(t, "/targets/infra-prd/charts/0?t="+tok, outside)
	require.Equal(t, 200, code)
	assert.Equal(t, "image/png", h.Get("Content-Type"))
	assert.True(t, strings.HasPrefix(png, "\x89PNG"))
	code, _, _ = e.get(t, "/targets/infra-prd/charts/0", outside)
	assert.Equal(t, 403, code)
	code, _, _ = e.get(t, "/targets/nope?t="+tok, outside)
	assert.Equal(t, 404, code)
}

func TestStatic_IsServedWithoutAToken(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	_, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	i := strings.Index(body, `/static/`)
	require.Positive(t, i)
	css := body[i : i+strings.Index(body[i:], `"`)]
	code, h, _ := e.get(t, css, outside)
	assert.Equal(t, 200, code)
	assert.Equal(t, "text/css; charset=utf-8", h.Get("Content-Type"))
	code, h, js := e.get(t, strings.Replace(css, "style.css", "live.js", 1), outside)
	assert.Equal(t, 200, code)
	assert.Equal(t, "text/javascript; charset=utf-8", h.Get("Content-Type"))
	assert.Contains(t, js, "EventSource")
}

func TestChatText_RendersTheChatSubsetEscaped(t *testing.T) {
	e := newEnv(t)
	r := e.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	_, err := e.db.UpdateRun(context.Background(), r.ID, func(r *runmodel.Run, b *runmodel.Batch) error {
		r.Steps[1].Text = "Run *this* on `worker-0`:\n```\nsudo systemctl status <unit> && echo ok\n```\nthen react."
		return nil
	})
	require.NoError(t, err)
	_, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	assert.Contains(t, body, "Run <strong>this</strong> on <code>worker-0</code>:")
	assert.Contains(t, body, `<pre class="block"><code>sudo systemctl status &lt;unit&gt; &amp;&amp; echo ok`)
	assert.NotContains(t, body, "```")
}

// TestKeyRotation_LinksOfThePreviousKeyStillOpen: after a rotation (a new
// web.link_key, the old one as web.previous_link_key) the links already
// in chat open as before; new links are signed with the new key only, and
// once the previous key is removed the old links are refused.
func TestKeyRotation_LinksOfThePreviousKeyStillOpen(t *testing.T) {
	const newKey = "the new key, rotated in 2026-12!"
	old := newEnv(t)
	r := old.seedRun(t, "r-done000001", runmodel.RunSucceeded)
	in := old.seedIncident(t, "i-3f2a9c", "msg-1")
	oldRun, oldIncident, oldSite := old.links.Run(r.ID, r.CreatedAt), old.links.Incident(in.ID, in.OpenedAt), old.links.Site()

	rotated, err := web.NewSigner([]byte(newKey), []byte(testKey))
	require.NoError(t, err)
	assert.Equal(t, 1, rotated.Previous())
	links := web.NewLinks("https://gc.example.com", rotated, 7*24*time.Hour, old.clock)
	e := newEnv(t, func(o *web.Options) {
		o.Runs, o.Journals, o.Incidents, o.Digests = old.db, old.db, old.db, old.db
		o.Links = links
	})
	for _, link := range []string{oldRun, oldIncident, oldSite, strings.Replace(oldRun, "?", ".md?", 1)} {
		code, _, body := e.get(t, link, outside)
		assert.Equal(t, 200, code, "%s: %s", link, body)
	}
	// an old link past its expiry is said expired, not invalid
	expired, _ := web.NewSigner([]byte(testKey))
	code, _, body := e.get(t, "/runs/"+r.ID+"?t="+expired.Sign(web.RunScope(r.ID), old.now.Add(-time.Minute)), outside)
	assert.Equal(t, 403, code)
	assert.Contains(t, body, "This link has expired")
	// new links are signed with the new key
	newOnly, _ := web.NewSigner([]byte(newKey))
	fresh := links.Run(r.ID, r.CreatedAt)
	_, err = newOnly.Verify(web.RunScope(r.ID), fresh[strings.Index(fresh, "t=")+2:], old.now)
	assert.NoError(t, err, "new links are signed with the new key")

	// the previous key removed: the old links are refused, the new ones open
	done := newEnv(t, func(o *web.Options) {
		o.Runs, o.Journals, o.Incidents, o.Digests = old.db, old.db, old.db, old.db
		o.Links = web.NewLinks("https://gc.example.com", newOnly, 7*24*time.Hour, old.clock)
	})
	code, _, body = done.get(t, oldRun, outside)
	assert.Equal(t, 403, code)
	assert.Contains(t, body, "This link is not valid")
	code, _, _ = done.get(t, fresh, outside)
	assert.Equal(t, 200, code)
}

// TestIndex_AFilterNamingNothingKnownIsRefused: a runbook or target that
// is neither configured nor any run's is refused with the closest name; a
// runbook removed from the library still lists its runs.
func TestIndex_AFilterNamingNothingKnownIsRefused(t *testing.T) {
	e := newEnv(t, func(o *web.Options) {
		o.Runbooks = func() []string { return []string{"worker-disk-full", "prune-stalled"} }
	})
	e.seedRun(t, "r-done000001", runmodel.RunSucceeded) // a worker-stalled run: that runbook is no longer in the library
	get := func(q string) string {
		t.Helper()
		code, _, body := e.get(t, "/?"+q, "10.0.0.1:1", "X-Forwarded-User", "carol")
		require.Equal(t, 200, code, body)
		return body
	}
	body := get("runbook=worker-disk-ful&since=7d")
	assert.Contains(t, body, "There is no runbook &#34;worker-disk-ful&#34;, and no run of one. Did you mean &#34;worker-disk-full&#34;?")
	assert.NotContains(t, body, "No finished run matches")
	body = get("runbook=zzz")
	assert.Contains(t, body, "There is no runbook &#34;zzz&#34;, and no run of one. The runbooks are: worker-disk-full, prune-stalled.")
	body = get("target=infra-prod")
	assert.Contains(t, body, "There is no target &#34;infra-prod&#34;, and no run of one. Did you mean &#34;infra-prd&#34;?")
	body = get("runbook=worker-stalled")
	assert.NotContains(t, body, "There is no runbook")
	assert.Contains(t, body, "r-done000001", "the runs of a runbook no longer in the library are listed")
	body = get("runbook=worker-disk-full&target=infra-prd")
	assert.Contains(t, body, "No finished run matches.")
	assert.Contains(t, body, `<option value="prune-stalled">`, "the form suggests the names")
}

// A step title's code span (a value with Markdown in it, as chat shows
// it) is rendered as code on the page, escaped.
func TestRunPage_TitlesRenderTheirCodeSpans(t *testing.T) {
	e := newEnv(t)
	r := e.seedRunWith(t, "r-titles0001", runmodel.RunSucceeded, t0, "", func(r *runmodel.Run) {
		r.Steps[0].Title = "Abort the pending builds of main/`.*<b>` (last 24h)"
	})
	code, _, body := e.get(t, e.links.Run(r.ID, r.CreatedAt), outside)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "Abort the pending builds of main/<code>.*&lt;b&gt;</code> (last 24h)")
	assert.NotContains(t, body, "<b>")
}
