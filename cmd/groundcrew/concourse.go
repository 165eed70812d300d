package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/internal/httpguard"
	"github.com/groundcrew/groundcrew/internal/secret"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// startSimulators starts an in-process Concourse simulator for every target
// configured with `simulator:` and points the target at it.
func (a *app) startSimulators() error {
	for _, name := range a.cfg.TargetNames() {
		t := a.cfg.Targets[name]
		if t.Simulator == nil {
			continue
		}
		w, err := loadWorld(t.Simulator.World)
		if err != nil {
			return fmt.Errorf("targets.%s.simulator.world: %w", name, err)
		}
		if w.StalledWorkerTimeout == 0 {
			// the simulated web node runs as the target says its web node does
			w.StalledWorkerTimeout = concoursesim.Duration(t.StalledWorkerTimeout)
		}
		opts := []concoursesim.Option{concoursesim.WithTSA(), concoursesim.WithAbortRate(60), concoursesim.WithWorkerCacheLag(time.Second)}
		if a.now != nil {
			opts = append(opts, concoursesim.WithClock(clockFunc(a.now)))
		}
		sim, err := concoursesim.New(*w, opts...)
		if err != nil {
			return fmt.Errorf("targets.%s.simulator: %w", name, err)
		}
		a.closers = append(a.closers, sim.Close)
		a.sims = append(a.sims, sim)
		t.URL, t.TSA = sim.URL(), sim.TSAAddr()
		switch {
		case t.Username != "":
		case len(w.Users) > 0:
			t.Username = w.Users[0].Name
			t.Password = secretOf(w.Users[0].Password)
		default:
			// A world with no users: has admin/admin, so the target does too.
			t.Username, t.Password = "admin", secretOf("admin")
		}
		a.log.Info("concourse simulator started", "target", name, "url", t.URL)
	}
	return nil
}

// concourseProvider starts the configured simulators and returns the
// Concourse operations for every target. Without targets (lint) it uses a
// placeholder target so the operation catalogue is complete.
func (a *app) concourseProvider() (opmodel.Provider, error) {
	if err := a.startSimulators(); err != nil {
		return nil, err
	}
	clients := map[string]*concourse.Client{}
	for _, name := range a.cfg.TargetNames() {
		c, err := concourse.New(a.cfg.ConcourseTarget(name), a.concourseOptions(name)...)
		if err != nil {
			return nil, fmt.Errorf("targets.%s: %w", name, err)
		}
		clients[name] = c
	}
	a.concourse = clients
	if len(clients) == 0 {
		c, err := concourse.New(concourse.TargetConfig{Name: "none", URL: "http://127.0.0.1:1"})
		if err != nil {
			return nil, err
		}
		clients["none"] = c
	}
	return concourse.NewProvider(clients, concourse.ProviderOptions{Logger: a.log, Now: a.now})
}

// concourseOptions are the client options of every Concourse client of
// target: its requests are counted in the metrics.
func (a *app) concourseOptions(target string) []concourse.Option {
	// The target's clients (operations, digests, watch rules, pages)
	// share what their worker lists showed: since when a worker is
	// stalled, so each says the same time Concourse removes it by itself.
	a.memMu.Lock()
	if a.workerMemory == nil {
		a.workerMemory = map[string]*concourse.WorkerMemory{}
	}
	mem := a.workerMemory[target]
	if mem == nil {
		mem = concourse.NewWorkerMemory()
		a.workerMemory[target] = mem
	}
	a.memMu.Unlock()
	opts := []concourse.Option{concourse.WithWorkerMemory(mem)}
	if a.now != nil {
		opts = append(opts, concourse.WithClock(a.now))
	}
	if a.metrics == nil {
		return opts
	}
	return append(opts, concourse.WithTransport(func(rt http.RoundTripper) http.RoundTripper {
		return a.metrics.Transport("concourse", target, rt)
	}))
}

// clockFunc adapts a func to concoursesim.Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }

// loadWorld reads a simulator world file, or returns the demo world for "".
func loadWorld(path string) (*concoursesim.World, error) {
	if path == "" {
		return concoursesim.DemoWorld(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	w, err := concoursesim.LoadWorld(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &w, nil
}

func newSimCmd() *cobra.Command {
	var listen, world string
	c := &cobra.Command{
		Use:   "simulator",
		Short: "Serve the Concourse simulator on a port (training, trying runbooks, end-to-end tests)",
		Long: `Serve the in-process Concourse simulator as a standalone HTTP server, so a
groundcrew (or fly) in another process can talk to it. Without --world it serves
the demo world: target infra-prd with a stalled worker, 300 pending builds and
image-fetch errors; user groundcrew, password groundcrew.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w, err := loadWorld(world)
			if err != nil {
				return err
			}
			sim, err := concoursesim.NewUnstarted(*w, concoursesim.WithAbortRate(60), concoursesim.WithWorkerCacheLag(time.Second))
			if err != nil {
				return err
			}
			defer sim.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			srv := httpguard.Server(sim.Handler())
			fmt.Fprintf(cmd.OutOrStdout(), "Concourse simulator on http://%s (Ctrl-C to stop)\n", ln.Addr())
			go func() {
				<-cmd.Context().Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	c.Flags().StringVar(&listen, "listen", "127.0.0.1:8081", "address to listen on")
	c.Flags().StringVar(&world, "world", "", "world file (YAML, see adapters/concourse/OPS.md); default: the demo world")
	return c
}

func secretOf(s string) secret.Secret { return secret.Secret(s) }
