package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pool is the connection pool with one addition: a statement that fails
// because the server had already ended its connection (pg_terminate_backend,
// a restart or failover of the database, an idle timeout of a proxy) is
// sent again on another connection. The pool only notices a dead idle
// connection when it uses it, so without this every connection the server
// ended would fail one read or write (an approval typed then answered
// "Could not read run …: FATAL: terminating connection due to administrator
// command"). Only statements the server cannot have carried out are
// repeated (connLost): reads, the BEGIN of a write transaction and the
// lease's single statements; a statement inside a transaction and its
// COMMIT are never repeated (the transaction's caller retries it whole).
type pool struct {
	*pgxpool.Pool
}

// connLost reports whether err says the connection was gone before the
// statement ran: nothing was sent (pgconn.SafeToRetry), or the server
// ended the session (class 57 "operator intervention", except 57014
// query_canceled: a statement timeout is an answer, not a lost connection).
func connLost(err error) bool {
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "57P01", "57P02", "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		}
	}
	return false
}

// attempts bounds the tries: every pooled connection may be dead, and the
// pool destroys each one as it fails, so one more than the pool holds
// reaches a new connection.
func (p pool) attempts() int { return int(p.Config().MaxConns) + 1 }

func (p pool) Begin(ctx context.Context) (tx pgx.Tx, err error) {
	for range p.attempts() {
		if tx, err = p.Pool.Begin(ctx); !connLost(err) || ctx.Err() != nil {
			break
		}
	}
	return tx, err
}

func (p pool) Exec(ctx context.Context, sql string, args ...any) (tag pgconn.CommandTag, err error) {
	for range p.attempts() {
		if tag, err = p.Pool.Exec(ctx, sql, args...); !connLost(err) || ctx.Err() != nil {
			break
		}
	}
	return tag, err
}

func (p pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return retryRow{p: p, ctx: ctx, sql: sql, args: args}
}

type retryRow struct {
	p    pool
	ctx  context.Context
	sql  string
	args []any
}

func (r retryRow) Scan(dest ...any) (err error) {
	for range r.p.attempts() {
		if err = r.p.Pool.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...); !connLost(err) || r.ctx.Err() != nil {
			break
		}
	}
	return err
}

// Query reads the first row before returning, so that a connection found
// dead then is replaced; once a row was read nothing is repeated.
func (p pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	var err error
	for range p.attempts() {
		var rows pgx.Rows
		rows, err = p.Pool.Query(ctx, sql, args...)
		if err != nil {
			if !connLost(err) || ctx.Err() != nil {
				return nil, err
			}
			continue
		}
		first := rows.Next()
		if !first && connLost(rows.Err()) && ctx.Err() == nil {
			err = rows.Err()
			rows.Close()
			continue
		}
		return &peekedRows{Rows: rows, peeked: true, first: first}, nil
	}
	return nil, err
}

// peekedRows gives back the first Next that Query already called.
type peekedRows struct {
	pgx.Rows
	peeked, first bool
}

func (r *peekedRows) Next() bool {
	if r.peeked {
		r.peeked = false
		return r.first
	}
	return r.Rows.Next()
}
