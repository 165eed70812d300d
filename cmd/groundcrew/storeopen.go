package main

// Opening the store: the bbolt file (the embedded default) or PostgreSQL
// (store: {postgres: …} or GROUNDCREW_STORE_DSN), for serve and for the
// commands that read it.

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/groundcrew/groundcrew/config"
	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/store/pgstore"
)

// appStore is what the app needs of its store; both stores implement it.
type appStore interface {
	runmodel.Store
	runmodel.Housekeeper
	incident.Store
	digest.History
	storeReader
	Ping() error
	Size() (int64, error)
	Close() error
}

var (
	_ appStore = (*store.DB)(nil)
	_ appStore = (*pgstore.DB)(nil)
)

// openAppStore opens the configured store for serve. A PostgreSQL store
// is fenced: it writes only while this process leads (package leader).
func openAppStore(cfg *config.Config) (appStore, error) {
	if cfg.PostgresStore() {
		return openPostgres(cfg, true)
	}
	return store.Open(cfg.Store, store.Options{Retention: time.Duration(cfg.Retention)})
}

// openPostgres opens the PostgreSQL store of cfg.
func openPostgres(cfg *config.Config, fenced bool) (*pgstore.DB, error) {
	return openPostgresDSN(cfg.StorePostgres.DSN.Value(), time.Duration(cfg.Retention), fenced)
}

// openPostgresDSN opens the PostgreSQL store at dsn (--store postgres://…).
func openPostgresDSN(dsn string, retention time.Duration, fenced bool) (*pgstore.DB, error) {
	return openPostgresCtx(context.Background(), dsn, retention, fenced)
}

// openPostgresCtx is openPostgresDSN until ctx ends.
func openPostgresCtx(ctx context.Context, dsn string, retention time.Duration, fenced bool) (*pgstore.DB, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{Retention: retention, Fenced: fenced})
	if err != nil {
		return nil, fmt.Errorf("store.postgres: %w", err)
	}
	return db, nil
}

// storeBackoff is how long serve waits between two tries of a store that
// does not answer: doubling from the first, up to the last (tests shorten
// it).
var storeBackoff = struct{ First, Max time.Duration }{time.Second, 10 * time.Second}

// storeLogEvery is how often a store still awaited is logged again
// (tests shorten it).
var storeLogEvery = time.Minute

// openPostgresWaiting opens serve's PostgreSQL store (fenced). A store
// that cannot be reached yet (down, restarting, the network or DNS not
// ready: pgstore.Unreachable) is tried again with backoff until it
// answers or ctx ends — logged once, then every minute, and told to
// waiting for /readyz — so a replica started before its database waits
// instead of crash-looping. Anything else (a wrong password, a database
// that does not exist, a store newer than this binary) is returned at
// once: no wait mends it.
func openPostgresWaiting(ctx context.Context, dsn string, retention time.Duration, log *slog.Logger, waiting func(since time.Time, err error)) (*pgstore.DB, error) {
	var since, logged time.Time
	delay := storeBackoff.First
	for {
		db, err := openPostgresCtx(ctx, dsn, retention, true)
		if err == nil {
			if since.IsZero() {
				log.Info("store opened", "store", db.Path())
			} else {
				log.Info("store opened: it answers now", "store", db.Path(), "waited", time.Since(since).Round(time.Second))
			}
			return db, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !pgstore.Unreachable(err) {
			return nil, err
		}
		now := time.Now()
		switch {
		case since.IsZero():
			since, logged = now, now
			log.Warn("the store does not answer; waiting for it (retrying, logged again every minute; /readyz says why)", "err", err)
		case now.Sub(logged) >= storeLogEvery:
			logged = now
			log.Warn("still waiting for the store", "waited", now.Sub(since).Round(time.Second), "err", err)
		}
		waiting(since, err)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, storeBackoff.Max)
	}
}
