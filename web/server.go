// Package web serves a page for every run and incident: the run as it
// happens (steps, gates with their plans and votes, changes, the audit
// entries and the head that covers them), incidents with their alerts,
// timeline and runs, an index of what is open and what finished, each
// target's digest charts, and the Markdown of a post-mortem. Pages are
// read-only, server-rendered with html/template under a strict
// Content-Security-Policy, bounded in size, and opened with a signed link
// (HMAC over the page and an expiry) or through an authenticating proxy.
// The page of an active run, and of an incident that can still change,
// follow them live with server-sent events fed by one source of changes
// per process (Hub).
//
// It reads the store through the small interfaces of ports.go and shows
// the engine's renderings through Words, handed in by the composition
// root; it imports neither the engine nor a store.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/textmodel"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Server.
type Options struct {
	Runs      Runs
	Journals  Journals
	Incidents Incidents // optional
	Digests   Digests   // optional
	Targets   []Target
	// Runbooks, when set, names the runbooks of the library (it may
	// change at a reload): a filter of the index naming none of them, nor
	// any run's, is refused with a did-you-mean.
	Runbooks func() []string
	Words    Words
	// Links makes (and its signer verifies) the signed links; its base is
	// the pages' external address.
	Links *Links
	// Proxy, when set, lets in what an authenticating proxy sends.
	Proxy Proxy
	// Changes is the process's one source of changes (live pages);
	// nil: pages do not update themselves.
	Changes *Hub
	// Redact, when set, removes secrets from every text a page shows
	// (the composition root passes the configured credentials).
	Redact func(string) string
	// MaxStreams bounds the live connections open at once (default 500).
	MaxStreams int
	// Heartbeat is how often an idle live connection gets a comment line
	// (default 20 s), so proxies do not close it as idle.
	Heartbeat time.Duration
	Now       func() time.Time
	Logger    *slog.Logger
}

// Server serves the pages. It is an http.Handler.
type Server struct {
	o       Options
	tmpl    *template.Template
	mux     *http.ServeMux
	static  string // the static files' path, with their version
	streams chan struct{}
	cache   *snapshots
	// done ends the live streams (Close).
	done      chan struct{}
	closeOnce sync.Once
}

// New returns a Server.
func New(o Options) (*Server, error) {
	if o.Runs == nil || o.Journals == nil {
		return nil, errors.New("web: Runs and Journals are required")
	}
	if o.Links == nil && !o.Proxy.enabled() {
		return nil, errors.New("web: no way in: set a link key (signed links) or a trusted proxy header, or both")
	}
	if o.Links == nil {
		o.Links = NewLinks("", nil, 0, o.Now)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 500
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 20 * time.Second
	}
	s := &Server{o: o, mux: http.NewServeMux(), streams: make(chan struct{}, o.MaxStreams), done: make(chan struct{})}
	s.cache = newSnapshots(s.readRun)
	s.cache.hub = o.Changes
	t, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("web templates: %w", err)
	}
	s.tmpl = t
	s.static = "/static/" + staticVersion() + "/"
	s.routes()
	return s, nil
}

var funcs = template.FuncMap{
	"count": func(n int) string { return humanCount(n) },
	"lower": strings.ToLower,
	"md":    chatText,
}

// Prefixes are the paths the pages own (a server that mounts them beside
// other endpoints sends these here).
var Prefixes = []string{"/runs/", "/incidents/", "/targets/", "/static/"}

// Owns reports whether path is one of the pages' (the index "/" included).
func Owns(path string) bool {
	if path == "/" {
		return true
	}
	for _, p := range Prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /{$}", s.index)
	s.mux.HandleFunc("GET /runs/{id}", s.run)
	s.mux.HandleFunc("GET /runs/{id}/events", s.runEvents)
	s.mux.HandleFunc("GET /runs/{id}/steps/{step}", s.stepList)
	s.mux.HandleFunc("GET /incidents/{id}", s.incident)
	s.mux.HandleFunc("GET /incidents/{id}/events", s.incidentEvents)
	s.mux.HandleFunc("GET /targets/{name}", s.target)
	s.mux.HandleFunc("GET /targets/{name}/charts/{n}", s.chart)
	s.mux.Handle("GET /static/", http.HandlerFunc(s.staticFile))
}

// ServeHTTP implements http.Handler: every answer gets the security
// headers; only GET and HEAD are served (the pages change nothing).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer") // links carry tokens
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "the pages are read-only", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// page is what the layout shows around a page's body.
type page struct {
	Title  string
	Static string
	Home   string
	Viewer viewer
	Body   any
	Live   string // the events URL of a live page
	Now    string
}

func (s *Server) render(w http.ResponseWriter, status int, name string, p page) {
	p.Static = s.static
	p.Now = ts(s.o.Now())
	if p.Viewer.Site {
		p.Home = s.link(p.Viewer, "/", "", nil)
	}
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		s.o.Logger.Error("web: rendering a page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered; the log says why", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func (s *Server) refuse(w http.ResponseWriter, ref *refusal) {
	s.render(w, http.StatusForbidden, "refused.html", page{Title: ref.Title, Body: ref})
}

// problem is a page that says what went wrong (404, 500).
type problem struct{ Title, Why string }

func (s *Server) notFound(w http.ResponseWriter, v viewer, what string) {
	s.render(w, http.StatusNotFound, "problem.html", page{Title: "Not found", Viewer: v, Body: problem{Title: "Not found", Why: what}})
}

func (s *Server) failed(w http.ResponseWriter, v viewer, what string, err error) {
	s.o.Logger.Error("web: reading the store", "what", what, "err", err)
	s.render(w, http.StatusInternalServerError, "problem.html", page{Title: "Could not read the store", Viewer: v,
		Body: problem{Title: "Could not read the store", Why: "Reading " + what + " failed; the bot's log has the error. Try again in a moment."}})
}

// readFailed answers a store error: 404 for what is not there.
func (s *Server) readFailed(w http.ResponseWriter, v viewer, what string, err error) {
	if errors.Is(err, chatmodel.ErrNotFound) {
		s.notFound(w, v, "There is no "+what+" in the store. It may have been deleted by retention, or the address was cut short.")
		return
	}
	s.failed(w, v, what, err)
}

// redact removes the configured secrets from text and escapes the
// characters chat escapes (bidi overrides, zero-width and control
// characters), as every post is cleaned.
func (s *Server) redact(text string) string {
	if s.o.Redact != nil {
		text = s.o.Redact(text)
	}
	return textmodel.Sanitize(text)
}

// markdown answers text/markdown.
func (s *Server) markdown(w http.ResponseWriter, name, md string) {
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	w.Header().Set("Content-Disposition", `inline; filename="`+name+`.md"`)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, md)
}

// staticFile serves the stylesheet and the script under a versioned path
// (cached for a year: a new binary has a new path).
func (s *Server) staticFile(w http.ResponseWriter, r *http.Request) {
	name, ok := strings.CutPrefix(r.URL.Path, s.static)
	if !ok || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	b, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	case strings.HasSuffix(name, ".svg"):
		w.Header().Set("Content-Type", "image/svg+xml")
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(b)
}

func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 10*time.Second)
}
