package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/postgres"
	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// digestTables is how many build-log tables a digest lists.
const digestTables = 5

// newDigestScheduler builds the health-digest scheduler of the configured
// digests: one Concourse client per target (simulators already started),
// the database sizes through the postgres operation, the store as
// history and the chat adapter to post with. Call it once a.reg, a.db and
// a.chat are set; run it with Run. now is the clock (nil: time.Now).
func (a *app) newDigestScheduler(now func() time.Time) (*digest.Scheduler, error) {
	clients := map[string]*concourse.Client{}
	for _, name := range a.cfg.TargetNames() {
		c, err := concourse.New(a.cfg.ConcourseTarget(name), append(a.concourseOptions(name), concourse.WithLogger(a.log))...)
		if err != nil {
			return nil, fmt.Errorf("targets.%s: %w", name, err)
		}
		clients[name] = c
	}
	src, err := concourse.NewDigestSource(clients, concourse.DigestOptions{Now: now, Tables: a.digestTables(), Logger: a.log})
	if err != nil {
		return nil, err
	}
	// the watch rules poll the same targets, incrementally (only what changed)
	a.digestSrc = concourse.NewWatchSource(src)
	for _, d := range a.cfg.Digests {
		a.metrics.ExpectDigests(d.Target)
	}
	ds := digestSchedules(a.cfg)
	s, err := digest.NewScheduler(digest.Options{
		Digests: ds, Source: src, History: a.db, Outbox: a.outbox, Platform: a.cfg.Chat.Platform,
		Targets: a.cfg.TargetNames(), Now: now, Logger: a.log.With("component", "digests"), Observer: a.metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.cfg.Path, err)
	}
	return s, nil
}

// digestTables reads the build-log table sizes of targets with a database
// through the postgres.db_table_sizes operation.
func (a *app) digestTables() concourse.DigestTables {
	if a.reg == nil {
		return nil
	}
	op, ok := a.reg.Get(postgres.OpTableSizes)
	if !ok {
		return nil
	}
	return func(ctx context.Context, target string) (digest.DBFigures, bool, error) {
		if _, ok := a.cfg.DatabaseConfig(target); !ok {
			return digest.DBFigures{}, false, nil
		}
		res, err := op.Do(ctx, opmodel.Call{Target: target, Args: opmodel.Args{"top": digestTables}})
		if err != nil {
			return digest.DBFigures{}, true, err
		}
		ts, ok := res.Data.(postgres.TableSizes)
		if !ok {
			return digest.DBFigures{}, true, fmt.Errorf("reading table sizes of %s: unexpected result %T", target, res.Data)
		}
		out := digest.DBFigures{DatabaseBytes: ts.DatabaseBytes, BuildLogBytes: ts.BuildEventsBytes}
		for _, t := range ts.Tables {
			dt := digest.DBTable{Table: t.Table, Label: t.Label(), Bytes: t.Bytes}
			if t.Kind == postgres.KindPipeline && !t.Orphan && t.InstanceVars == "" {
				dt.Team, dt.Pipeline = t.Team, t.Pipeline
			}
			out.Tables = append(out.Tables, dt)
		}
		return out, true, nil
	}
}

// filesDir is where the console writes the files of messages (digest
// charts): the store's directory, or the config file's with a database
// store.
func filesDir(cfg *config.Config) string {
	if cfg.Store != "" && !strings.Contains(cfg.Store, "://") {
		return filepath.Dir(cfg.Store)
	}
	if cfg.Path != "" {
		return filepath.Dir(cfg.Path)
	}
	return ""
}
