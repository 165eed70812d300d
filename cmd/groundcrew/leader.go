package main

// serve with a PostgreSQL store: any number of replicas, one leader.
//
// Every replica serves /healthz, /metrics and /readyz on server.listen
// from start to exit. The leader (package leader) builds the app — engine,
// workers, digests, checkpoints, incidents, the chat connection — and runs
// it for as long as it holds the lease; the app's HTTP routes (Slack,
// Mattermost, Alertmanager) are served only then. A standby answers
// /readyz 503 with its role, so the Service sends chat and alert HTTP to
// the leader, and everything else 503. When the lease is lost the store
// refuses writes at once (the fence) and the app is stopped and thrown
// away; the next term builds a fresh one, which resumes runs exactly as a
// restart does.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/leader"
	"github.com/groundcrew/groundcrew/web"
)

// leaderTimings are the lease timings (tests shorten them).
var leaderTimings = struct{ TTL, Renew, Retry time.Duration }{10 * time.Second, 2 * time.Second, 500 * time.Millisecond}

// haServer is the HTTP server of a replica: its own routes, and the
// current leader app's while there is one. It serves from the start,
// before the store answers (starting: /readyz says why it is not ready).
type haServer struct {
	holder string
	reg    *prometheus.Registry

	mu sync.Mutex
	el *leader.Elector // nil while the store is awaited
	// pages are served by every replica, leader or standby (they read
	// the store), on server.listen unless web.listen is set.
	pages http.Handler
	app   *app
	wait  storeWait
}

// storeWait is the store awaited at start: since when, and its last error.
type storeWait struct {
	since time.Time
	err   error
}

// say is /readyz's store check while the store is awaited.
func (w storeWait) say() string {
	if w.err == nil {
		return "connecting to the store (PostgreSQL)"
	}
	return fmt.Sprintf("waiting for the store (PostgreSQL) for %s, retrying: %v", time.Since(w.since).Round(time.Second), w.err)
}

func (h *haServer) set(a *app) {
	h.mu.Lock()
	h.app = a
	h.mu.Unlock()
}

// waiting records why the store does not answer yet (openPostgresWaiting).
func (h *haServer) waiting(since time.Time, err error) {
	h.mu.Lock()
	h.wait = storeWait{since: since, err: err}
	h.mu.Unlock()
}

// started: the store answers; el elects, pages (optional) are served.
func (h *haServer) started(el *leader.Elector, pages http.Handler) {
	h.mu.Lock()
	h.el, h.pages = el, pages
	h.mu.Unlock()
}

func (h *haServer) state() (*leader.Elector, http.Handler, *app, storeWait) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.el, h.pages, h.app, h.wait
}

// leaderName is who leads as this replica last saw it ("" while it
// waits for the store, or when nobody leads).
func (h *haServer) leaderName() string {
	if el, _, _, _ := h.state(); el != nil {
		return el.Current()
	}
	return ""
}

// heldUntil is until when this replica surely holds the leader lease
// (zero while it does not lead, or waits for the store).
func (h *haServer) heldUntil() time.Time {
	if el, _, _, _ := h.state(); el != nil {
		return el.HeldUntil()
	}
	return time.Time{}
}

// haReady is /readyz of a replica: the app's checks plus the role.
type haReady struct {
	Role   string `json:"role"`
	Holder string `json:"holder"`
	Leader string `json:"leader,omitempty"`
	Epoch  int64  `json:"epoch,omitempty"`
	readyBody
}

func (h *haServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	el, pages, a, wait := h.state()
	switch r.URL.Path {
	case "/healthz":
		fmt.Fprintln(w, "ok")
		return
	case "/metrics":
		gs := prometheus.Gatherers{h.reg}
		if a != nil {
			gs = append(gs, a.metrics.Registry())
		}
		promhttp.HandlerFor(gs, promhttp.HandlerOpts{}).ServeHTTP(w, r)
		return
	case "/readyz":
		var body haReady
		switch {
		case el == nil:
			body = haReady{Role: "starting", Holder: h.holder}
			body.Checks = map[string]string{"store": wait.say()}
		default:
			body = haReady{Role: "standby", Holder: h.holder, Leader: el.Current()}
			body.Checks = map[string]string{"leader": "standby: " + el.Current() + " leads"}
			if el.Current() == "" {
				body.Checks["leader"] = "standby: no replica leads now, or the lease cannot be read"
			}
			if a != nil && el.Leading() {
				body.Role, body.Epoch, body.Leader = "leader", el.Epoch(), el.Holder()
				body.readyBody = a.readiness()
				body.Checks["leader"] = "ok"
			}
		}
		body.Ready = body.Ready && el != nil
		w.Header().Set("Content-Type", "application/json")
		if !body.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(body)
		return
	}
	if pages != nil && web.Owns(r.URL.Path) {
		pages.ServeHTTP(w, r)
		return
	}
	if el == nil {
		w.Header().Set("Retry-After", "5")
		http.Error(w, "starting: this groundcrew replica waits for its store: "+wait.say(), http.StatusServiceUnavailable)
		return
	}
	if a == nil || !el.Leading() {
		w.Header().Set("Retry-After", "2")
		http.Error(w, "standby: this groundcrew replica does not lead; "+nonEmpty(el.Current(), "another replica")+" does", http.StatusServiceUnavailable)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// serveHA runs serve with a PostgreSQL store: HTTP always, the app while
// this replica leads. It serves /healthz and /readyz from the start; a
// store that does not answer yet is waited for (openPostgresWaiting) —
// on Kubernetes a crash loop would only delay it — while one that refuses
// this configuration ends serve with why. It returns when ctx ends, after
// handing over.
func serveHA(ctx context.Context, cfg *config.Config, o appOptions) error {
	log := o.Logger
	if log == nil {
		log = newLogger(cfg, os.Stderr)
		o.Logger = log
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d", nonEmpty(host, "groundcrew"), os.Getpid())
	reg := prometheus.NewRegistry()
	h := &haServer{holder: holder, reg: reg}

	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("server.listen %s: %w", cfg.Server.Listen, err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "holder", holder)
	g, gctx := errgroup.WithContext(ctx)
	serveUntil(gctx, g, httpguard.Server(h), ln, 10*time.Second)
	stop := func(err error) error { // before the elector runs
		cancel()
		_ = g.Wait()
		_ = ln.Close()
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	var input *standbyInput
	if cfg.Chat.Platform == "console" && o.In != nil {
		out := o.Out
		if out == nil {
			out = os.Stdout
		}
		// Read at once: a line typed while the store is awaited is
		// answered then, never run later.
		input = newStandbyInput(o.In, out, h.leaderName, h.heldUntil)
		go input.pump()
	}
	db, err := openPostgresWaiting(gctx, cfg.StorePostgres.DSN.Value(), time.Duration(cfg.Retention), log, h.waiting)
	if err != nil {
		return stop(err)
	}
	defer db.Close()
	o.Store = db
	el := leader.New(leader.Options{Lease: db.Lease(), Holder: holder, OnEpoch: db.SetEpoch, Registerer: reg,
		TTL: leaderTimings.TTL, Renew: leaderTimings.Renew, Retry: leaderTimings.Retry,
		Logger: log.With("component", "leader")})
	wp, err := newWeb(cfg, db, o.Now, log)
	if err != nil {
		return stop(err)
	}
	var pages http.Handler
	if wp != nil {
		wp.notified = true
		o.Web = wp
		if cfg.Web.Listen == "" {
			pages = wp.pages
		}
	}
	h.started(el, pages)
	if wp != nil {
		if err := serveWeb(gctx, g, cfg, wp, log); err != nil {
			return stop(err)
		}
		// every replica's pages follow the commits, the leader's
		// included, through the store's notifications
		g.Go(func() error { return db.Listen(gctx, wp.hub.Publish, wp.hub.Resync, log.With("component", "web")) })
	}
	g.Go(func() error {
		defer func() { _ = ln.Close() }()
		return el.Run(gctx, func(lctx context.Context) error {
			to := o
			if input != nil {
				to.In = input.term(lctx)
			}
			return leadTerm(lctx, cfg, to, el, h, log)
		})
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// leadTerm builds the app and runs it until lctx ends.
func leadTerm(lctx context.Context, cfg *config.Config, o appOptions, el *leader.Elector, h *haServer, log *slog.Logger) error {
	o.external = true
	o.Lease = el // a write or destructive call only while the lease surely holds
	a, err := newApp(cfg, o)
	if err != nil {
		if lctx.Err() != nil {
			return nil
		}
		return err
	}
	defer a.close()
	h.set(a)
	defer h.set(nil)
	return a.run(lctx)
}
