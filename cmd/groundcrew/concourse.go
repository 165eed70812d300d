package main

import (
	"bytes"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/concourse/concoursesim"
	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/internal/secret"
)

// startSimulators starts an in-process Concourse simulator for every target
// configured with `simulator:` and points the target at it.
func (a *app) startSimulators() error {
	for _, name := range a.cfg.TargetNames() {
		t := a.cfg.Targets[name]
		if t.Simulator == nil {
			continue
		}
		var w *concoursesim.World
		if t.Simulator.World == "" {
			w = concoursesim.DemoWorld()
		} else {
			data, err := os.ReadFile(t.Simulator.World)
			if err != nil {
				return fmt.Errorf("targets.%s.simulator.world: %w", name, err)
			}
			w = concoursesim.NewWorld()
			dec := yaml.NewDecoder(bytesReader(data))
			dec.KnownFields(true)
			if err := dec.Decode(w); err != nil {
				return fmt.Errorf("targets.%s.simulator.world %s: %w", name, t.Simulator.World, err)
			}
		}
		sim, err := concoursesim.New(*w, concoursesim.WithTSA())
		if err != nil {
			return fmt.Errorf("targets.%s.simulator: %w", name, err)
		}
		a.closers = append(a.closers, sim.Close)
		a.sims = append(a.sims, sim)
		t.URL, t.TSA = sim.URL(), sim.TSAAddr()
		if t.Username == "" && len(w.Users) > 0 {
			t.Username = w.Users[0].Name
			t.Password = secretOf(w.Users[0].Password)
		}
		a.log.Info("concourse simulator started", "target", name, "url", t.URL)
	}
	return nil
}

// concourseProvider starts the configured simulators and returns the
// Concourse operations for every target. Without targets (lint) it uses a
// placeholder target so the operation catalogue is complete.
func (a *app) concourseProvider() (bot.Provider, error) {
	if err := a.startSimulators(); err != nil {
		return nil, err
	}
	clients := map[string]*concourse.Client{}
	for _, name := range a.cfg.TargetNames() {
		c, err := concourse.New(a.cfg.ConcourseTarget(name))
		if err != nil {
			return nil, fmt.Errorf("targets.%s: %w", name, err)
		}
		clients[name] = c
	}
	if len(clients) == 0 {
		c, err := concourse.New(concourse.TargetConfig{Name: "none", URL: "http://127.0.0.1:1"})
		if err != nil {
			return nil, err
		}
		clients["none"] = c
	}
	return concourse.NewProvider(clients, concourse.ProviderOptions{Logger: a.log})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

func secretOf(s string) secret.Secret { return secret.Secret(s) }
