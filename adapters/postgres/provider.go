// Package postgres is the groundcrew operation provider that works on
// Concourse's own PostgreSQL database: it reports the size of the build-log
// tables (pipeline_build_events_<id>, team_build_events_<id>,
// check_build_events) by team and pipeline, and purges one pipeline's logs
// behind the engine's approval gate, by TRUNCATE or the way Concourse's
// build-log reaper deletes them.
//
// Table names are never taken from users: a purge names a team and a
// pipeline, which are resolved to the pipeline's numeric id, and the table
// name is built from that id alone and quoted with pgx.Identifier. Every
// transaction sets lock_timeout and statement_timeout, so the bot never
// queues behind, or blocks, Concourse for long. See OPS.md for the
// operations, their arguments and the shape of their results.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Operation names.
const (
	OpPing       = "postgres.db_ping"
	OpTableSizes = "postgres.db_table_sizes"
	OpPurge      = "postgres.purge_build_logs"
)

// Options configure a Provider.
type Options struct {
	// Databases maps a target name ("infra-prd") to its Concourse database,
	// DSN already resolved from its file or environment variable. Targets
	// absent from the map have no database: calls on them fail with
	// ErrNoDatabase.
	Databases map[string]DatabaseConfig
	// Logger receives debug lines; never the DSN. Default: discard.
	Logger *slog.Logger
}

// Provider registers the PostgreSQL operations. It is safe for concurrent
// use. Connection pools are opened on first use, so a database that is down
// at startup does not stop the bot; Close releases them.
type Provider struct {
	log *slog.Logger
	dbs map[string]DatabaseConfig

	mu     sync.Mutex
	pools  map[string]*pgxpool.Pool
	closed bool
}

var _ opmodel.Provider = (*Provider)(nil)

// New validates every target's database config and returns a provider.
func New(opts Options) (*Provider, error) {
	p := &Provider{
		log:   opts.Logger,
		dbs:   make(map[string]DatabaseConfig, len(opts.Databases)),
		pools: map[string]*pgxpool.Pool{},
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	names := make([]string, 0, len(opts.Databases))
	for name := range opts.Databases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		cfg := opts.Databases[name].WithDefaults()
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("targets.%s.database: %w", name, err)
		}
		p.dbs[name] = cfg
	}
	return p, nil
}

// Close closes every open pool. Calls after Close fail.
func (p *Provider) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, pool := range p.pools {
		pool.Close()
		delete(p.pools, name)
	}
	p.closed = true
}

// Ops implements opmodel.Provider.
func (p *Provider) Ops() []opmodel.Op {
	return []opmodel.Op{
		{
			Name:  OpPing,
			Class: opmodel.ClassRead,
			Doc:   "Connect to the target's Concourse database and report server, user, replica role and latency.",
			Do:    p.ping,
		},
		{
			Name:  OpTableSizes,
			Class: opmodel.ClassRead,
			Doc:   "Largest build-log tables (pipeline_build_events_<id>, team_build_events_<id>, check_build_events) by team and pipeline, and the database size.",
			Args: []opmodel.ArgSpec{
				{Name: "top", Doc: "how many tables to list, largest first (default 10)"},
				{Name: "kind", Doc: "only tables of this kind: pipeline, team or check (default all)"},
			},
			Do: p.tableSizes,
		},
		{
			Name:  OpPurge,
			Class: opmodel.ClassDestructive,
			// Concourse has no role for deleting build logs in its
			// database; a team's member may set and destroy its pipelines
			// (and their logs), so groundcrew asks that.
			TeamRole: "member",
			// A pipeline's or a team's build logs: always a team's.
			Owner: opmodel.OwnerTeam,
			Doc:   "Purge one pipeline's build logs: TRUNCATE its pipeline_build_events table, or delete the logs of builds older than N days as Concourse's reaper does.",
			Args: []opmodel.ArgSpec{
				{Name: "team", Doc: "team name", Required: true},
				{Name: "pipeline", Doc: "pipeline name (resolved to its id; required unless one_off is true)"},
				{Name: "instance_vars", Doc: "for an instanced pipeline: its instance vars as a JSON object"},
				{Name: "one_off", Doc: "true: purge the team's one-off builds (team_build_events_<team id>) instead of a pipeline"},
				{Name: "mode", Doc: "truncate (default) or older_than"},
				{Name: "days", Doc: "older_than: purge logs of builds that ended more than this many days ago"},
			},
			Plan:  p.purgePlan,
			Apply: p.purgeApply,
		},
	}
}

// targetDB is one target's database, ready for queries.
type targetDB struct {
	pool  *pgxpool.Pool
	cfg   DatabaseConfig
	where where
}

// db returns the pool of a target, opening it on first use.
func (p *Provider) db(target string) (*targetDB, error) {
	if target == "" {
		return nil, newError(ErrNoDatabase, nil, "no target given: the call has no Concourse target")
	}
	cfg, ok := p.dbs[target]
	if !ok {
		return nil, newError(ErrNoDatabase, nil,
			"target %s has no database configured: set targets.%s.database.dsn_file", target, target)
	}
	pc, err := cfg.poolConfig()
	if err != nil {
		return nil, fmt.Errorf("targets.%s.database: %w", target, err)
	}
	cc := pc.ConnConfig
	w := where{
		target:   target,
		endpoint: endpoint(cc.User, cc.Host, cc.Port, cc.Database),
		user:     cc.User,
		database: cc.Database,
		hostPort: hostPort(cc.Host, cc.Port),
		lock:     cfg.LockTimeout,
		stmt:     cfg.StatementTimeout,
		connect:  cc.ConnectTimeout,
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("postgres provider is closed")
	}
	pool, ok := p.pools[target]
	if !ok {
		// NewWithConfig does not connect (MinConns is 0): a down database
		// shows up on the first query, classified there.
		pool, err = pgxpool.NewWithConfig(context.Background(), pc)
		if err != nil {
			return nil, fmt.Errorf("opening pool for %s: %w", w.endpoint, err)
		}
		p.pools[target] = pool
		p.log.Debug("opened database pool", "target", target, "endpoint", w.endpoint)
	}
	return &targetDB{pool: pool, cfg: cfg, where: w}, nil
}

// begin starts a transaction with the target's statement and lock timeouts
// set for that transaction only.
func (d *targetDB) begin(ctx context.Context, access pgx.TxAccessMode) (pgx.Tx, error) {
	tx, err := d.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: access})
	if err != nil {
		return nil, err
	}
	_, err = tx.Exec(ctx, `SELECT set_config('statement_timeout', $1, true), set_config('lock_timeout', $2, true)`,
		ms(d.cfg.StatementTimeout), ms(d.cfg.LockTimeout))
	if err != nil {
		rollback(tx)
		return nil, err
	}
	return tx, nil
}

// commit commits a transaction that changes the database right after
// checking that this process still surely holds the leader lease, if the
// call is fenced (opmodel.Guard): a leader paused past its lease rolls
// its change back rather than commit it after the new leader looked.
func (d *targetDB) commit(ctx context.Context, tx pgx.Tx) error {
	gctx, cancel, err := opmodel.Guard(ctx, d.cfg.StatementTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	return tx.Commit(gctx)
}

// rollback ends a transaction that failed or is done reading. It uses a
// fresh context so a cancelled call still releases its locks at once.
func rollback(tx pgx.Tx) {
	_ = tx.Rollback(context.Background())
}
