package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/opmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/policy"
	"github.com/groundcrew/groundcrew/runbooks"
)

// checkSetup is the one validation `config check` and `serve` share once
// the configuration has loaded: the approval policy against the targets,
// runbooks and operations that exist and, where the chat adapter can look
// them up, the users and groups it names. Checks the platform could not
// answer are logged as warnings; only an adapter error wrapping
// bot.ErrNotFound (the platform says there is no such user or group) fails,
// with the adapter's did-you-mean when it has one (an error in the chain
// with a DidYouMean() string method).
//
// live, when not nil, lists a target's Concourse teams as the bot's
// account sees them (teamsOf): the policy's team names are checked
// against them.
func checkSetup(ctx context.Context, cfg *config.Config, reg *opmodel.Registry, lib *runbooks.Library, chat chatmodel.Chat, live teamLister, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	k := policy.Known{Targets: cfg.TargetNames(), Ops: map[string]string{}}
	for _, op := range reg.List() {
		k.Ops[op.Name] = string(op.Class)
	}
	if lib != nil {
		k.Runbooks = lib.List()
		for _, b := range lib.BrokenList() {
			k.Unavailable = append(k.Unavailable, b.Name)
		}
	}
	if k.Runbooks == nil {
		k.Runbooks = []*runbookmodel.Runbook{}
	}
	// A platform that does not answer is asked once: the other names are
	// not checked (warnings), instead of each waiting out its deadline
	// while serve is not serving yet.
	var unreachable error
	var mu sync.Mutex
	ask := func(lookup func() error) error {
		mu.Lock()
		down := unreachable
		mu.Unlock()
		if down != nil {
			return fmt.Errorf("not asked: %w to an earlier look-up", chatmodel.ErrUnreachable)
		}
		err := lookup()
		if errors.Is(err, chatmodel.ErrUnreachable) {
			mu.Lock()
			unreachable = err
			mu.Unlock()
		}
		return err
	}
	if ir, ok := chat.(chatmodel.IdentityResolver); ok {
		k.User = func(ctx context.Context, name string) (string, string, error) {
			var u chatmodel.User
			err := ask(func() (err error) { u, err = ir.ResolveUser(ctx, name); return err })
			if errors.Is(err, chatmodel.ErrNotFound) {
				// The adapter's error stays in the chain: it may say
				// which known name is close (did-you-mean).
				return "", "", fmt.Errorf("%s: %w: %w", name, policy.ErrUnknown, err)
			}
			if err != nil {
				return "", "", err
			}
			return u.ID, u.NotAPerson(), nil
		}
	}
	if gr, ok := chat.(chatmodel.GroupResolver); ok {
		k.Members = func(ctx context.Context, group string) ([]string, error) {
			var ids []string
			err := ask(func() (err error) { ids, err = gr.GroupMembers(ctx, group); return err })
			if errors.Is(err, chatmodel.ErrNotFound) {
				return nil, fmt.Errorf("%s: %w: %w", group, policy.ErrUnknown, err)
			}
			return ids, err
		}
	}
	k.ConcourseTeams = live
	if cr, ok := chat.(chatmodel.ChannelResolver); ok {
		k.Channel = func(ctx context.Context, name string) (string, error) {
			id, err := cr.ChannelID(ctx, name)
			if errors.Is(err, chatmodel.ErrNotFound) {
				return "", fmt.Errorf("%s: %w: %w", name, policy.ErrUnknown, err)
			}
			return id, err
		}
	}
	warnings, err := cfg.Check(ctx, k)
	if log != nil {
		for _, w := range warnings {
			log.Warn("approval policy not fully checked", "problem", w)
		}
		for _, p := range targetVarProblems(cfg, k.Runbooks) {
			log.Warn("target vars missing", "problem", p)
		}
	}
	return err
}

// targetVarProblems names, per target, the vars runbooks read
// ({{ .vars.zone }}) that the target does not set, and the runbooks that
// read them: their steps then show "<zone: not set in the target's vars>".
func targetVarProblems(cfg *config.Config, rbs []*runbookmodel.Runbook) []string {
	var out []string
	for _, name := range cfg.TargetNames() {
		t := cfg.Targets[name]
		if t == nil {
			continue
		}
		users := map[string][]string{} // var -> runbooks
		for _, rb := range rbs {
			for _, v := range runbooks.VarsUsed(rb) {
				if _, ok := t.Vars[v]; !ok {
					users[v] = append(users[v], rb.Name)
				}
			}
		}
		vars := make([]string, 0, len(users))
		for v := range users {
			vars = append(vars, v)
		}
		sort.Strings(vars)
		for _, v := range vars {
			rbNames := users[v]
			sort.Strings(rbNames)
			out = append(out, fmt.Sprintf("targets.%s.vars.%s is not set; used by %s (their text says %s, and a command that needs it is not shown)",
				name, v, strings.Join(rbNames, ", "), runbooks.MissingVar(v)))
		}
	}
	return out
}

// teamLister lists a target's Concourse teams as the bot's account sees
// them, and whether that is every team (the account is an admin).
type teamLister = func(ctx context.Context, target string) ([]string, bool, error)

// teamsOf lists teams with the registry's concourse.teams operation (nil
// when it has none).
func teamsOf(reg *opmodel.Registry) teamLister {
	op, ok := reg.Get("concourse.teams")
	if !ok || op.Do == nil {
		return nil
	}
	return func(ctx context.Context, target string) ([]string, bool, error) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := op.Do(ctx, opmodel.Call{Target: target})
		if err != nil {
			return nil, false, err
		}
		data, ok := res.Data.(concourse.TeamsData)
		if !ok {
			return nil, false, fmt.Errorf("concourse.teams answered %T", res.Data)
		}
		return data.Teams, data.All, nil
	}
}

// liveTeams is the team lister of `config check`, which calls no target
// otherwise: only when the configuration names Concourse teams, it logs
// in to each target (a simulator target's world is started in process)
// and lists them. stop releases what it started.
func liveTeams(cfg *config.Config, log *slog.Logger) (live teamLister, stop func(), err error) {
	if !cfg.NamesTeams() {
		return nil, func() {}, nil
	}
	a := &app{cfg: cfg, log: log}
	prov, err := a.concourseProvider()
	if err != nil {
		a.close()
		return nil, func() {}, err
	}
	reg, err := opmodel.NewRegistry(prov)
	if err != nil {
		a.close()
		return nil, func() {}, err
	}
	return teamsOf(reg), a.close, nil
}
