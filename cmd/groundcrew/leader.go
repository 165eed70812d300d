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
// current leader app's while there is one.
type haServer struct {
	el  *leader.Elector
	reg *prometheus.Registry
	// pages are served by every replica, leader or standby (they read
	// the store), on server.listen unless web.listen is set.
	pages http.Handler

	mu  sync.Mutex
	app *app
}

func (h *haServer) current() *app {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.app
}

func (h *haServer) set(a *app) {
	h.mu.Lock()
	h.app = a
	h.mu.Unlock()
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
	a := h.current()
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
		body := haReady{Role: "standby", Holder: h.el.Holder(), Leader: h.el.Current()}
		body.Ready = false
		body.Checks = map[string]string{"leader": "standby: " + h.el.Current() + " leads"}
		if h.el.Current() == "" {
			body.Checks["leader"] = "standby: no replica leads now, or the lease cannot be read"
		}
		if a != nil && h.el.Leading() {
			body.Role, body.Epoch, body.Leader = "leader", h.el.Epoch(), h.el.Holder()
			body.readyBody = a.readiness()
			body.Checks["leader"] = "ok"
		}
		w.Header().Set("Content-Type", "application/json")
		if !body.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(body)
		return
	}
	if h.pages != nil && web.Owns(r.URL.Path) {
		h.pages.ServeHTTP(w, r)
		return
	}
	if a == nil || !h.el.Leading() {
		w.Header().Set("Retry-After", "2")
		http.Error(w, "standby: this groundcrew replica does not lead; "+nonEmpty(h.el.Current(), "another replica")+" does", http.StatusServiceUnavailable)
		return
	}
	a.mux.ServeHTTP(w, r)
}

// serveHA runs serve with a PostgreSQL store: HTTP always, the app while
// this replica leads. It returns when ctx ends, after handing over.
func serveHA(ctx context.Context, cfg *config.Config, o appOptions) error {
	log := o.Logger
	if log == nil {
		log = newLogger(cfg, os.Stderr)
		o.Logger = log
	}
	db, err := openPostgres(cfg, true)
	if err != nil {
		return err
	}
	defer db.Close()
	o.Store = db
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d", nonEmpty(host, "groundcrew"), os.Getpid())
	reg := prometheus.NewRegistry()
	el := leader.New(leader.Options{Lease: db.Lease(), Holder: holder, OnEpoch: db.SetEpoch, Registerer: reg,
		TTL: leaderTimings.TTL, Renew: leaderTimings.Renew, Retry: leaderTimings.Retry,
		Logger: log.With("component", "leader")})
	h := &haServer{el: el, reg: reg}
	wp, err := newWeb(cfg, db, o.Now, log)
	if err != nil {
		return err
	}
	if wp != nil {
		wp.notified = true
		o.Web = wp
		if cfg.Web.Listen == "" {
			h.pages = wp.pages
		}
	}

	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("server.listen %s: %w", cfg.Server.Listen, err)
	}
	log.Info("listening", "addr", ln.Addr().String(), "store", db.Path(), "holder", holder)
	g, gctx := errgroup.WithContext(ctx)
	serveUntil(gctx, g, httpguard.Server(h), ln, 10*time.Second)
	if wp != nil {
		if err := serveWeb(gctx, g, cfg, wp, log); err != nil {
			return err
		}
		// every replica's pages follow the commits, the leader's
		// included, through the store's notifications
		g.Go(func() error { return db.Listen(gctx, wp.hub.Publish, wp.hub.Resync, log.With("component", "web")) })
	}
	var input *standbyInput
	if cfg.Chat.Platform == "console" && o.In != nil {
		out := o.Out
		if out == nil {
			out = os.Stdout
		}
		input = newStandbyInput(o.In, out, el.Current)
		go input.pump()
	}
	g.Go(func() error {
		defer func() { _ = ln.Close() }()
		return el.Run(gctx, func(lctx context.Context) error {
			to := o
			if input != nil {
				to.In = input.term(lctx)
			}
			return leadTerm(lctx, cfg, to, h, log)
		})
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// leadTerm builds the app and runs it until lctx ends.
func leadTerm(lctx context.Context, cfg *config.Config, o appOptions, h *haServer, log *slog.Logger) error {
	o.external = true
	o.Lease = h.el // a write or destructive call only while the lease surely holds
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
