// Package pgstore keeps groundcrew's state in PostgreSQL: everything the
// bbolt store (package store) keeps, with the same behaviour (the
// conformance suite store/storetest runs against both), so several
// replicas can share one store and one of them leads (package leader).
//
// Values are the bbolt store's JSON, in bytea columns; the columns beside
// them are what queries select on. The schema is versioned with tern
// migrations (migrations/), applied at Open under tern's advisory lock; a
// database written by a newer groundcrew is refused.
//
// A store opened with Options.Fenced refuses every write unless the
// process holds the leadership lease: each write transaction first reads
// the lease row (FOR SHARE, so a takeover waits for the writes in flight)
// and checks that its epoch is the one this process was granted and that
// the lease has not expired.
package pgstore

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/tern/v2/migrate"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is tern's table of the schema version.
const versionTable = "groundcrew_schema_version"

// SchemaVersion is the version this binary writes (the number of migrations).
var SchemaVersion = func() int32 {
	names, _ := fs.Glob(migrationFiles, "migrations/*.sql")
	return int32(len(names))
}()

// ErrTooNew is returned when the database was written by a newer groundcrew.
var ErrTooNew = store.ErrTooNew

// ErrFenced is returned by a write of a fenced store when this process
// does not hold the leadership lease (it never did, it lost it, or
// another process took over): the write was not made.
var ErrFenced = errors.New("not the leader: write refused by the leadership fence")

// Options configure Open.
type Options struct {
	// EventTTL is how long inbound event ids are remembered (default 7 days).
	EventTTL time.Duration
	// Retention is how long a finished run is kept (default store.DefaultRetention).
	Retention time.Duration
	// Fenced makes every write check the leadership epoch (SetEpoch).
	Fenced bool
	// MaxConns bounds the connection pool (default 8).
	MaxConns int32
}

// DB is the PostgreSQL store. It is safe for concurrent use.
type DB struct {
	pool      pool
	eventTTL  time.Duration
	retention time.Duration
	fenced    bool
	epoch     atomic.Int64
	specs     *specCache
}

// ReadDSN returns the DSN in a file (a Kubernetes secret), trimmed.
func ReadDSN(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the store DSN: %w", err)
	}
	dsn := strings.TrimSpace(string(b))
	if dsn == "" {
		return "", fmt.Errorf("reading the store DSN: %s is empty", path)
	}
	return dsn, nil
}

// Redact returns dsn without its password, for messages.
func Redact(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return "(unparsable DSN)"
	}
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// Open connects to the database at dsn and migrates its schema.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.EventTTL <= 0 {
		opts.EventTTL = 7 * 24 * time.Hour
	}
	if opts.Retention <= 0 {
		opts.Retention = store.DefaultRetention
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store DSN: %w", err)
	}
	cfg.MaxConns = opts.MaxConns
	pgxPool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the store %s: %w", Redact(dsn), err)
	}
	s := &DB{pool: pool{pgxPool}, eventTTL: opts.EventTTL, retention: opts.Retention, fenced: opts.Fenced, specs: newSpecCache()}
	if err := s.migrate(ctx); err != nil {
		pgxPool.Close()
		return nil, fmt.Errorf("opening the store %s: %w", Redact(dsn), connectError(err))
	}
	return s, nil
}

// migrate applies the pending migrations under tern's advisory lock (two
// replicas starting together migrate once).
func (s *DB) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	m, err := migrate.NewMigrator(ctx, conn.Conn(), versionTable)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	sub, _ := fs.Sub(migrationFiles, "migrations")
	if err := m.LoadMigrations(sub); err != nil {
		return fmt.Errorf("loading migrations: %w", err)
	}
	cur, err := m.GetCurrentVersion(ctx)
	if err != nil {
		return fmt.Errorf("reading the schema version: %w", err)
	}
	if cur > SchemaVersion {
		return fmt.Errorf("%w: the store is schema version %d, this groundcrew supports up to %d — run the newer groundcrew, or restore a backup from before the upgrade", ErrTooNew, cur, SchemaVersion)
	}
	if err := m.Migrate(ctx); err != nil {
		var bad migrate.BadVersionError
		if errors.As(err, &bad) {
			return fmt.Errorf("%w: %s", ErrTooNew, bad)
		}
		return fmt.Errorf("migrating the schema from version %d to %d: %w", cur, SchemaVersion, err)
	}
	return nil
}

// Close closes the connection pool.
func (s *DB) Close() error { s.pool.Close(); return nil }

// Pool is the connection pool (the leader lease uses it).
func (s *DB) Pool() *pgxpool.Pool { return s.pool.Pool }

// Ping reports whether the database answers (readiness).
func (s *DB) Ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.pool.Ping(ctx)
}

// SchemaVersionOf returns the schema version of the database (tests, store copy).
func (s *DB) SchemaVersionOf(ctx context.Context) (int32, error) {
	var v int32
	err := s.pool.QueryRow(ctx, "select version from "+versionTable).Scan(&v)
	return v, err
}

// SetEpoch sets the leadership epoch this process holds (0: none). A fenced
// store writes only while the database's lease has this epoch.
func (s *DB) SetEpoch(epoch int64) { s.epoch.Store(epoch) }

// Size is the size of the database in bytes.
func (s *DB) Size() (int64, error) {
	var n int64
	err := s.pool.QueryRow(context.Background(), "select pg_database_size(current_database())").Scan(&n)
	return n, err
}

// write runs fn in one transaction, after the fence check.
func (s *DB) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return s.writeTx(ctx, true, fn)
}

// writeTx runs fn in one transaction; with fence false fn checks the
// fence itself (fenceOK) in its first statement, saving a round trip.
func (s *DB) writeTx(ctx context.Context, fence bool, fn func(tx pgx.Tx) error) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("starting a store transaction: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if fence {
		if err := s.checkFence(ctx, tx); err != nil {
			return err
		}
	}
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("committing a store transaction: %w", err)
	}
	return nil
}

func (s *DB) checkFence(ctx context.Context, tx pgx.Tx) error {
	if !s.fenced {
		return nil
	}
	mine := s.epoch.Load()
	if mine == 0 {
		return ErrFenced
	}
	var epoch int64
	var live bool
	if err := tx.QueryRow(ctx, "select epoch, expires_at > now() from leader where id = 1 for share").Scan(&epoch, &live); err != nil {
		return fmt.Errorf("checking the leadership fence: %w", err)
	}
	return s.fenceOK(epoch, live)
}

// fenceOK checks the lease row as read (FOR SHARE) in a write transaction.
func (s *DB) fenceOK(epoch int64, live bool) error {
	if !s.fenced {
		return nil
	}
	mine := s.epoch.Load()
	if mine == 0 {
		return ErrFenced
	}
	if epoch != mine {
		return fmt.Errorf("%w (this process held epoch %d, the store is at epoch %d)", ErrFenced, mine, epoch)
	}
	if !live {
		return fmt.Errorf("%w (the lease of epoch %d expired)", ErrFenced, mine)
	}
	return nil
}

// runID is the key of a run id: ids are lowercase, and a person may type
// them in any case.
func runID(id string) string { return strings.ToLower(strings.TrimSpace(id)) }

// storedRun is a run as stored: its spec by reference.
type storedRun struct {
	*runmodel.Run
	SpecRef string `json:"spec_ref,omitempty"`
}

// putRun queues the write of r (with its journal sequence) on q;
// loadedRef is the spec reference the row had (its spec is already stored).
func (s *DB) putRun(q *pgx.Batch, r *runmodel.Run, insert bool, loadedRef string, journalSeq int64) error {
	cp := *r
	st := storedRun{Run: &cp}
	if r.Spec != nil {
		ref, data, err := s.specs.ref(r.Spec)
		if err != nil {
			return fmt.Errorf("encoding the runbook of run %s: %w", r.ID, err)
		}
		if ref != loadedRef {
			if data == nil {
				if data, err = json.Marshal(r.Spec); err != nil {
					return fmt.Errorf("encoding the runbook of run %s: %w", r.ID, err)
				}
			}
			q.Queue("insert into specs (ref, data) values ($1, $2) on conflict (ref) do nothing", ref, data)
		}
		cp.Spec, st.SpecRef = nil, ref
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.ID, err)
	}
	ended := r.FinishedAt
	if ended.IsZero() {
		ended = r.UpdatedAt
	}
	if insert {
		q.Queue(`insert into runs (id, created_at, state, active, ended_at, thread, root_id, spec_ref, journal_seq, data, runbook, target)
			values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			r.ID, r.CreatedAt, string(r.State), !r.State.Terminal(), ended, r.Conversation.Thread, r.Root.ID, st.SpecRef, journalSeq, data, r.Runbook, r.Target)
	} else {
		q.Queue(`update runs set state = $2, active = $3, ended_at = $4, thread = $5, root_id = $6, spec_ref = $7, journal_seq = $8, data = $9,
			runbook = $10, target = $11 where id = $1`,
			r.ID, string(r.State), !r.State.Terminal(), ended, r.Conversation.Thread, r.Root.ID, st.SpecRef, journalSeq, data, r.Runbook, r.Target)
	}
	return nil
}

// send sends the queued statements in one round trip.
func send(ctx context.Context, tx pgx.Tx, q *pgx.Batch, what string) error {
	if q.Len() == 0 {
		return nil
	}
	if err := tx.SendBatch(ctx, q).Close(); err != nil {
		return fmt.Errorf("writing %s: %w", what, err)
	}
	return nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// decodeRun decodes a stored run and attaches its spec.
func (s *DB) decodeRun(ctx context.Context, q querier, id string, raw []byte) (*runmodel.Run, string, error) {
	st := storedRun{Run: &runmodel.Run{}}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, "", fmt.Errorf("decoding run %s: %w", id, err)
	}
	if st.SpecRef != "" {
		spec, err := s.specs.get(ctx, q, st.SpecRef)
		if err != nil {
			return nil, "", fmt.Errorf("run %s: %w", id, err)
		}
		st.Run.Spec = spec
	}
	return st.Run, st.SpecRef, nil
}

// CreateRun implements runmodel.Runs. It fails with runmodel.ErrExists if the id is taken.
func (s *DB) CreateRun(ctx context.Context, r *runmodel.Run, b *runmodel.Batch) error {
	r.ID = strings.ToLower(r.ID)
	return s.write(ctx, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, "select exists (select 1 from runs where id = $1)", r.ID).Scan(&exists); err != nil {
			return fmt.Errorf("run %s: %w", r.ID, err)
		}
		if exists {
			return fmt.Errorf("run %s: %w", r.ID, runmodel.ErrExists)
		}
		var q pgx.Batch
		if err := s.writeBatch(ctx, tx, &q, r.ID, 0, b, func(seq int64) error { return s.putRun(&q, r, true, "", seq) }); err != nil {
			return err
		}
		notify(&q, "run", r.ID)
		if r.Conversation.Thread != "" {
			notify(&q, "thread", r.Conversation.Thread) // an incident's page lists the runs of its thread
		}
		return send(ctx, tx, &q, "run "+r.ID)
	})
}

// UpdateRun implements runmodel.Runs. The run's row is locked (FOR UPDATE) for
// the transaction, so concurrent updates of one run serialise and each
// sees the one before.
func (s *DB) UpdateRun(ctx context.Context, id string, fn func(*runmodel.Run, *runmodel.Batch) error) (*runmodel.Run, error) {
	var out *runmodel.Run
	err := s.writeTx(ctx, false, func(tx pgx.Tx) error {
		key := runID(id)
		var raw []byte
		var seq, epoch int64
		var live bool
		// The run's row lock and the fence in one round trip.
		err := tx.QueryRow(ctx, `select r.data, r.journal_seq, l.epoch, l.expires_at > now() from runs r, leader l
			where r.id = $1 and l.id = 1 for update of r for share of l`, key).Scan(&raw, &seq, &epoch, &live)
		if errors.Is(err, pgx.ErrNoRows) {
			if ferr := s.checkFence(ctx, tx); ferr != nil {
				return ferr
			}
			return fmt.Errorf("run %s: %w", id, chatmodel.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("reading run %s: %w", id, err)
		}
		if err := s.fenceOK(epoch, live); err != nil {
			return err
		}
		r, ref, err := s.decodeRun(ctx, tx, key, raw)
		if err != nil {
			return err
		}
		var b runmodel.Batch
		if err := fn(r, &b); err != nil {
			return err
		}
		r.ID = key
		var q pgx.Batch
		if err := s.writeBatch(ctx, tx, &q, key, seq, &b, func(seq int64) error { return s.putRun(&q, r, false, ref, seq) }); err != nil {
			return err
		}
		notify(&q, "run", key)
		if err := send(ctx, tx, &q, "run "+key); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}

// writeBatch writes the audit entries of b (they read the chain's head)
// and queues the run (put, with the journal's new sequence) and the rest
// of b on q.
func (s *DB) writeBatch(ctx context.Context, tx pgx.Tx, q *pgx.Batch, runID string, seq int64, b *runmodel.Batch, put func(seq int64) error) error {
	if b == nil {
		b = &runmodel.Batch{}
	}
	if len(b.Audit) > 0 {
		entries := make([]runmodel.AuditEntry, len(b.Audit))
		for i, e := range b.Audit {
			if e.RunID == "" {
				e.RunID = runID
			}
			entries[i] = e
		}
		if err := queueAudit(ctx, tx, q, entries); err != nil {
			return err
		}
	}
	var seqs []int64
	var datas [][]byte
	for _, e := range b.Journal {
		seq++
		e.RunID, e.Seq = runID, uint64(seq)
		data, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding journal entry: %w", err)
		}
		seqs, datas = append(seqs, seq), append(datas, data)
	}
	if err := put(seq); err != nil {
		return err
	}
	if len(seqs) > 0 {
		q.Queue("insert into journal (run_id, seq, data) select $1, unnest($2::bigint[]), unnest($3::bytea[])", runID, seqs, datas)
	}
	for _, m := range b.Messages {
		if m.Ref.IsZero() {
			continue
		}
		data, _ := json.Marshal(m)
		q.Queue(`insert into messages (platform, channel, id, run_id, data) values ($1, $2, $3, $4, $5)
			on conflict (platform, channel, id) do update set run_id = excluded.run_id, data = excluded.data`,
			m.Ref.Platform, m.Ref.Channel, m.Ref.ID, strings.ToLower(m.RunID), data)
	}
	return nil
}

// GetRun implements runmodel.Runs.
func (s *DB) GetRun(ctx context.Context, id string) (*runmodel.Run, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, "select data from runs where id = $1", runID(id)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, chatmodel.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading run %s: %w", id, err)
	}
	r, _, err := s.decodeRun(ctx, s.pool, runID(id), raw)
	return r, err
}

// ListRuns implements runmodel.Runs; most recent first.
func (s *DB) ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error) {
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if q.Active {
		where = append(where, "active")
	}
	if q.Thread != "" {
		p := arg(q.Thread)
		where = append(where, "(thread = "+p+" or root_id = "+p+")")
	}
	if !q.Since.IsZero() {
		where = append(where, "created_at >= "+arg(q.Since.Truncate(time.Second)))
	}
	if len(q.States) > 0 {
		states := make([]string, len(q.States))
		for i, st := range q.States {
			states[i] = string(st)
		}
		where = append(where, "state = any("+arg(states)+")")
	}
	if q.Runbook != "" {
		where = append(where, "runbook = "+arg(q.Runbook))
	}
	if q.Target != "" {
		where = append(where, "target = "+arg(q.Target))
	}
	if q.After.ID != "" {
		at, id := arg(q.After.CreatedAt), arg(strings.ToLower(q.After.ID))
		where = append(where, "(created_at < "+at+" or (created_at = "+at+" and id collate \"C\" < "+id+"))")
	}
	sql := "select id, data from runs"
	if len(where) > 0 {
		sql += " where " + strings.Join(where, " and ")
	}
	sql += " order by created_at desc, id collate \"C\" desc"
	if q.Limit > 0 {
		sql += " limit " + arg(q.Limit)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	type raw struct {
		id   string
		data []byte
	}
	var raws []raw
	for rows.Next() {
		var r raw
		if err := rows.Scan(&r.id, &r.data); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing runs: %w", err)
		}
		raws = append(raws, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	out := make([]*runmodel.Run, 0, len(raws))
	for _, r := range raws {
		run, _, err := s.decodeRun(ctx, s.pool, r.id, r.data)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// RunByMessage implements runmodel.Runs.
func (s *DB) RunByMessage(ctx context.Context, ref chatmodel.MessageRef) (runmodel.MessageIndex, error) {
	var m runmodel.MessageIndex
	var raw []byte
	err := s.pool.QueryRow(ctx, "select data from messages where platform = $1 and channel = $2 and id = $3",
		ref.Platform, ref.Channel, ref.ID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, fmt.Errorf("message %s: %w", ref.ID, chatmodel.ErrNotFound)
	}
	if err != nil {
		return m, fmt.Errorf("reading message %s: %w", ref.ID, err)
	}
	return m, json.Unmarshal(raw, &m)
}

// Journal implements runmodel.Journals.
func (s *DB) Journal(ctx context.Context, id string) ([]runmodel.JournalEntry, error) {
	rows, err := s.pool.Query(ctx, "select data from journal where run_id = $1 order by seq", runID(id))
	if err != nil {
		return nil, fmt.Errorf("reading the journal of %s: %w", id, err)
	}
	defer rows.Close()
	var out []runmodel.JournalEntry
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("reading the journal of %s: %w", id, err)
		}
		var e runmodel.JournalEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("decoding the journal of %s: %w", id, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// SeenEvent implements runmodel.Dedupe.
func (s *DB) SeenEvent(ctx context.Context, id string, now time.Time) (bool, error) {
	seen := false
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "insert into events (id, seen_at) values ($1, $2) on conflict (id) do nothing", id, now.UTC())
		if err != nil {
			return fmt.Errorf("recording event %s: %w", id, err)
		}
		seen = tag.RowsAffected() == 0
		return nil
	})
	return seen, err
}

// PutOutbox implements runmodel.Outbox.
func (s *DB) PutOutbox(ctx context.Context, it runmodel.OutboxItem) error {
	data, err := json.Marshal(it)
	if err != nil {
		return fmt.Errorf("encoding outbox item %s: %w", it.ID, err)
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "insert into outbox (id, data) values ($1, $2) on conflict (id) do update set data = excluded.data", it.ID, data)
		if err != nil {
			return fmt.Errorf("writing outbox item %s: %w", it.ID, err)
		}
		return nil
	})
}

// ListOutbox implements runmodel.Outbox, ordered by id.
func (s *DB) ListOutbox(ctx context.Context) ([]runmodel.OutboxItem, error) {
	rows, err := s.pool.Query(ctx, "select data from outbox order by id collate \"C\"")
	if err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}
	defer rows.Close()
	var out []runmodel.OutboxItem
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("reading the outbox: %w", err)
		}
		var it runmodel.OutboxItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("decoding the outbox: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the outbox: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteOutbox implements runmodel.Outbox.
func (s *DB) DeleteOutbox(ctx context.Context, id string) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "delete from outbox where id = $1", id); err != nil {
			return fmt.Errorf("deleting outbox item %s: %w", id, err)
		}
		return nil
	})
}

// GetKV reads a small value (schedules, caches); nil when unset.
func (s *DB) GetKV(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, "select value from kv where key = $1", key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", key, err)
	}
	return v, nil
}

// PutKV writes a small value.
func (s *DB) PutKV(ctx context.Context, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "insert into kv (key, value) values ($1, $2) on conflict (key) do update set value = excluded.value", key, value); err != nil {
			return fmt.Errorf("writing %s: %w", key, err)
		}
		return nil
	})
}

// Housekeep implements runmodel.Housekeeper: it forgets inbound event ids older
// than the event TTL and deletes finished runs (with their journal and
// message index) that finished more than the retention ago, in
// transactions of at most 1,000 runs. The audit log is kept whole.
func (s *DB) Housekeep(ctx context.Context, now time.Time) (runmodel.HousekeepResult, error) {
	var res runmodel.HousekeepResult
	err := s.write(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "delete from events where seen_at < $1", now.Add(-s.eventTTL))
		res.Events = int(tag.RowsAffected())
		return err
	})
	if err != nil {
		return res, fmt.Errorf("forgetting old event ids: %w", err)
	}
	cutoff := now.Add(-s.retention)
	for {
		var n, msgs int
		err := s.write(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `delete from runs where id in (
				select id from runs where not active and ended_at < $1 and created_at < $1 order by ended_at limit 1000)
				returning id`, cutoff)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			n = len(ids)
			if n == 0 {
				return nil
			}
			if _, err := tx.Exec(ctx, "delete from journal where run_id = any($1)", ids); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, "delete from messages where run_id = any($1)", ids)
			msgs = int(tag.RowsAffected())
			return err
		})
		res.Runs += n
		res.Messages += msgs
		if err != nil {
			return res, fmt.Errorf("deleting runs finished before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		if n < 1000 {
			return res, nil
		}
	}
}

// specCache maps runbook specs to their content hash and back, as the
// bbolt store does: runs of one runbook version share one decoded spec.
type specCache struct {
	mu    sync.Mutex
	byRef map[string]*runbookmodel.Runbook
	refOf map[*runbookmodel.Runbook]string
}

func newSpecCache() *specCache {
	return &specCache{byRef: map[string]*runbookmodel.Runbook{}, refOf: map[*runbookmodel.Runbook]string{}}
}

// ref returns spec's reference, and its JSON when it had to encode it.
func (c *specCache) ref(spec *runbookmodel.Runbook) (string, []byte, error) {
	c.mu.Lock()
	ref, ok := c.refOf[spec]
	c.mu.Unlock()
	if ok {
		return ref, nil, nil
	}
	data, err := json.Marshal(spec)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(data)
	ref = hex.EncodeToString(sum[:16])
	c.mu.Lock()
	c.refOf[spec] = ref
	c.mu.Unlock()
	return ref, data, nil
}

func (c *specCache) get(ctx context.Context, q querier, ref string) (*runbookmodel.Runbook, error) {
	c.mu.Lock()
	spec, ok := c.byRef[ref]
	c.mu.Unlock()
	if ok {
		return spec, nil
	}
	var raw []byte
	err := q.QueryRow(ctx, "select data from specs where ref = $1", ref).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("its runbook %s is missing from the store", ref)
	}
	if err != nil {
		return nil, fmt.Errorf("reading runbook %s: %w", ref, err)
	}
	spec = &runbookmodel.Runbook{}
	if err := json.Unmarshal(raw, spec); err != nil {
		return nil, fmt.Errorf("decoding runbook %s: %w", ref, err)
	}
	c.mu.Lock()
	if prev, ok := c.byRef[ref]; ok {
		spec = prev
	} else {
		c.byRef[ref] = spec
		c.refOf[spec] = ref
	}
	c.mu.Unlock()
	return spec, nil
}

// Path names the store for messages: its DSN without the password.
func (s *DB) Path() string {
	c := s.pool.Config().ConnConfig
	return fmt.Sprintf("postgres://%s@%s:%d/%s", c.User, c.Host, c.Port, c.Database)
}
