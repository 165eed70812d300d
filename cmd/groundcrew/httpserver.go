package main

// The bot's one HTTP server, on server.listen, in every chat mode (console
// included):
//
//	/healthz  liveness: the process answers (always 200 "ok")
//	/readyz   readiness: 200 only when the store is open and the
//	          configuration is loaded; the chat connection, per-target
//	          reachability and login in the JSON body (chat or a target down
//	          does not make the bot unready: it still takes webhooks)
//	/metrics  Prometheus metrics (package metrics)
//
// Chat adapters and other subsystems mount their handlers on a.mux in newApp
// (/slack/, /mattermost/, …) before run starts the server.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/internal/httpguard"
)

// probeInterval is how often each target's API and login are checked.
const probeInterval = 30 * time.Second

// health is what /readyz reports.
type health struct {
	chatUp atomic.Bool // the chat adapter's Run is running

	mu      sync.Mutex
	targets map[string]targetStatus
}

// targetStatus is the last probe of one target.
type targetStatus struct {
	Reachable bool      `json:"reachable"`
	LoginOK   bool      `json:"login_ok"`
	Error     string    `json:"error,omitempty"`
	Checked   time.Time `json:"checked,omitzero"`
}

type readyBody struct {
	Ready   bool                    `json:"ready"`
	Checks  map[string]string       `json:"checks"`
	Targets map[string]targetStatus `json:"targets,omitempty"`
}

// routes mounts the health and metrics endpoints.
func (a *app) routes() {
	a.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	a.mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		b := a.readiness()
		w.Header().Set("Content-Type", "application/json")
		if !b.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(b)
	})
	a.mux.Handle("/metrics", a.metrics.Handler())
	a.mux.HandleFunc(ReloadPath, a.reloadHandler)
	a.metrics.ChatConnected(a.chatConnected)
	a.metrics.Ready(func() bool { return a.readiness().Ready })
}

// chatConnected reports whether the chat connection is up: the adapter runs,
// says it is connected when it can tell, and chat's last answer to a post
// or an edit was not a failure (a server that hangs keeps its WebSocket
// for a while; its posts time out at once).
func (a *app) chatConnected() bool { return a.chatState() == "ok" }

// chatState is /readyz's chat check: "ok", or what is wrong.
func (a *app) chatState() string {
	if !a.health.chatUp.Load() {
		return "not connected"
	}
	if c, ok := a.chat.(interface{ Connected() bool }); ok && !c.Connected() {
		return "not connected"
	}
	if a.outbox == nil {
		return "ok"
	}
	h := a.outbox.Health()
	if !h.Failing() {
		return "ok"
	}
	text := fmt.Sprintf("not answering since %s: %s", h.LastFailure.UTC().Format(time.RFC3339), h.LastErr)
	if h.Waiting > 0 {
		text += fmt.Sprintf(" — %d post(s) wait in the outbox", h.Waiting)
		if !h.Oldest.IsZero() {
			text += ", the oldest since " + h.Oldest.UTC().Format(time.RFC3339)
		}
	}
	return text
}

// readiness is /readyz. Chat is reported, and does not make the bot
// unready: while chat is down or hangs the bot must still be sent the
// Alertmanager webhook (it stores the incident and queues its posts), and
// a 503 would take it out of its Service.
func (a *app) readiness() readyBody {
	b := readyBody{Ready: true, Checks: map[string]string{"config": "ok", "store": "ok", "chat": "ok"}}
	if a.cfg == nil {
		b.Checks["config"], b.Ready = "not loaded", false
	}
	if a.db == nil {
		b.Checks["store"], b.Ready = "not open", false
	} else if err := a.db.Ping(); err != nil {
		b.Checks["store"], b.Ready = err.Error(), false
	}
	b.Checks["chat"] = a.chatState()
	a.health.mu.Lock()
	b.Targets = make(map[string]targetStatus, len(a.health.targets))
	for k, v := range a.health.targets {
		b.Targets[k] = v
	}
	a.health.mu.Unlock()
	return b
}

// serveHTTP starts the HTTP server in g until ctx ends. A listen error is
// fatal, except with the console, where the bot runs on without the
// endpoints (scripted use must not depend on a free port).
func (a *app) serveHTTP(ctx context.Context, g *errgroup.Group) error {
	if a.external {
		return nil // the replica's server serves a.mux (leader.go)
	}
	ln, err := net.Listen("tcp", a.cfg.Server.Listen)
	if err != nil {
		err = fmt.Errorf("server.listen %s: %w", a.cfg.Server.Listen, err)
		if a.console {
			a.log.Warn("HTTP endpoints (/healthz, /readyz, /metrics) not served", "err", err)
			return nil
		}
		return err
	}
	addr := ln.Addr().String()
	a.httpAddr.Store(&addr)
	srv := httpguard.Server(a.mux)
	a.log.Info("listening", "addr", addr)
	serveUntil(ctx, g, srv, ln, 10*time.Second)
	if a.web != nil {
		if err := serveWeb(ctx, g, a.cfg, a.web, a.log); err != nil {
			return err
		}
		if a.web.links.Base() == "" {
			a.web.links.SetBase("http://" + addr) // the demo: its own address
		}
	}
	if a.onListen != nil {
		a.onListen(addr)
	}
	return nil
}

// serveWeb serves the pages on web.listen when it is set (else they are
// on server.listen), and ends their live streams when ctx ends, so a
// shutdown does not wait for them.
func serveWeb(ctx context.Context, g *errgroup.Group, cfg *config.Config, w *webParts, log *slog.Logger) error {
	g.Go(func() error {
		<-ctx.Done()
		w.pages.Close()
		return nil
	})
	if cfg.Web.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.Web.Listen)
	if err != nil {
		return fmt.Errorf("web.listen %s: %w", cfg.Web.Listen, err)
	}
	log.Info("pages listening", "addr", ln.Addr().String(), "url", cfg.Web.URL)
	serveUntil(ctx, g, httpguard.Server(w.pages), ln, 10*time.Second)
	return nil
}

// serveUntil serves srv on ln in g until ctx ends, then shuts it down,
// giving open requests up to grace to finish.
func serveUntil(ctx context.Context, g *errgroup.Group, srv *http.Server, ln net.Listener, grace time.Duration) {
	g.Go(func() error {
		// A listener closed by its owner (serveHA, when the elector's
		// Run ends) is not this goroutine's error: the owner's is.
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		return srv.Shutdown(sctx)
	})
}

// probeTargets checks every Concourse target's API (GET /api/v1/info) and
// login (GET /api/v1/user, logging in when needed) now and every
// probeInterval until ctx ends, for /readyz and the target metrics.
func (a *app) probeTargets(ctx context.Context) {
	names := a.cfg.TargetNames()
	sort.Strings(names)
	clients := map[string]*concourse.Client{}
	for _, name := range names {
		c, err := concourse.New(a.cfg.ConcourseTarget(name), a.concourseOptions(name)...)
		if err != nil {
			a.setTarget(name, targetStatus{Error: err.Error(), Checked: time.Now()})
			continue
		}
		clients[name] = c
	}
	t := time.NewTicker(probeInterval)
	defer t.Stop()
	for {
		var wg sync.WaitGroup
		for name, c := range clients {
			wg.Go(func() {
				if st := probe(ctx, c, a.cfg.Targets[name].Username != ""); ctx.Err() == nil {
					a.setTarget(name, st)
				}
			})
		}
		wg.Wait()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// probe checks one target. Without a username there is no login to check:
// login_ok then follows reachability.
func probe(ctx context.Context, c *concourse.Client, login bool) targetStatus {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st := targetStatus{Checked: time.Now()}
	if _, err := c.Info(ctx); err != nil {
		// The client logs in first: an HTTP answer (a refused login
		// included) means the target is reachable.
		var se *concourse.StatusError
		st.Error, st.Reachable = err.Error(), errors.As(err, &se)
		return st
	}
	st.Reachable = true
	if !login {
		st.LoginOK = true
		return st
	}
	if _, err := c.User(ctx); err != nil {
		st.Error = err.Error()
		return st
	}
	st.LoginOK = true
	return st
}

func (a *app) setTarget(name string, st targetStatus) {
	a.health.mu.Lock()
	old, seen := a.health.targets[name]
	a.health.targets[name] = st
	a.health.mu.Unlock()
	a.metrics.SetTarget(name, st.Reachable, st.LoginOK)
	switch {
	case !st.LoginOK && (!seen || old.LoginOK || old.Reachable != st.Reachable):
		a.log.Warn("target unhealthy", "target", name, "reachable", st.Reachable, "login_ok", false, "err", st.Error)
	case st.LoginOK && seen && !old.LoginOK:
		a.log.Info("target healthy again", "target", name)
	}
}
