package main

// Opening the store: the bbolt file (the embedded default) or PostgreSQL
// (store: {postgres: …} or GROUNDCREW_STORE_DSN), for serve and for the
// commands that read it.

import (
	"context"
	"fmt"
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := pgstore.Open(ctx, dsn, pgstore.Options{Retention: retention, Fenced: fenced})
	if err != nil {
		return nil, fmt.Errorf("store.postgres: %w", err)
	}
	return db, nil
}
