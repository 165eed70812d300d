package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors. Every error the provider returns for these conditions is
// an *Error whose Kind is one of them, so callers branch with errors.Is.
var (
	// ErrNoDatabase: the target has no database configured.
	ErrNoDatabase = errors.New("no database configured")
	// ErrAuth: the server refused the credentials (SQLSTATE 28P01, 28000).
	ErrAuth = errors.New("authentication failed")
	// ErrUnreachable: nothing answered at the address, or the name does not resolve.
	ErrUnreachable = errors.New("database unreachable")
	// ErrConnectTimeout: connecting took longer than connect_timeout.
	ErrConnectTimeout = errors.New("connect timeout")
	// ErrUnavailable: the server is up but refuses new sessions (too many
	// connections, starting up, shutting down).
	ErrUnavailable = errors.New("database unavailable")
	// ErrDatabaseMissing: the database named in the DSN does not exist (3D000).
	ErrDatabaseMissing = errors.New("database does not exist")
	// ErrLockTimeout: a lock was not granted within lock_timeout (55P03).
	ErrLockTimeout = errors.New("lock timeout")
	// ErrStatementTimeout: a statement ran longer than statement_timeout (57014).
	ErrStatementTimeout = errors.New("statement timeout")
	// ErrReadOnly: the server is a read-only replica (25006 or in recovery).
	ErrReadOnly = errors.New("read-only database")
	// ErrPermission: the database user lacks a privilege (42501).
	ErrPermission = errors.New("permission denied")
	// ErrNotFound: a team, pipeline or table does not exist.
	ErrNotFound = errors.New("not found")
	// ErrRefused: an argument or a plan item is refused before reaching SQL.
	ErrRefused = errors.New("refused")
	// ErrStalePlan: the database no longer matches the approved plan.
	ErrStalePlan = errors.New("stale plan")
)

// Error is a failure worded for the chat thread: what failed, why, and the
// next step. It never contains the DSN's password.
type Error struct {
	// Kind is one of the sentinel errors above.
	Kind error
	// Msg is the full human message.
	Msg string
	// Err is the underlying error (a *pgconn.PgError, a net error), if any.
	Err error
}

// Error returns the human message.
func (e *Error) Error() string { return e.Msg }

// Unwrap exposes both the kind and the cause to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func newError(kind error, cause error, format string, a ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, a...), Err: cause}
}

// SQLSTATE codes the provider classifies.
const (
	codeInvalidPassword       = "28P01"
	codeInvalidAuthSpec       = "28000"
	codeInvalidCatalog        = "3D000"
	codeLockNotAvailable      = "55P03"
	codeQueryCanceled         = "57014"
	codeReadOnlyTransaction   = "25006"
	codeInsufficientPrivilege = "42501"
	codeTooManyConnections    = "53300"
	codeCannotConnectNow      = "57P03"
	codeAdminShutdown         = "57P01"
	codeUndefinedTable        = "42P01"
)

// where describes the database of one target for messages.
type where struct {
	target   string
	endpoint string // user@host:port/db, no password
	user     string
	database string
	hostPort string
	lock     time.Duration
	stmt     time.Duration
	connect  time.Duration
}

// classify turns err from work described by action ("purge of
// pipeline_build_events_12") into an *Error with a next step, or wraps it
// with context when it is nothing the provider recognises. Context
// cancellation wins over everything: the caller asked to stop.
func classify(ctx context.Context, err error, action string, w where) error {
	if err == nil {
		return nil
	}
	var done *Error
	if errors.As(err, &done) {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s on %s: stopped: %w", action, w.target, context.Cause(ctx))
	}
	prefix := action + " on " + w.target
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case codeInvalidPassword, codeInvalidAuthSpec:
			return newError(ErrAuth, err,
				"%s: PostgreSQL at %s refused user %q (%s); check the user and password in the secret behind targets.%s.database.dsn_file, and that pg_hba.conf lets this host in",
				prefix, w.hostPort, w.user, pgErr.Message, w.target)
		case codeInvalidCatalog:
			return newError(ErrDatabaseMissing, err,
				"%s: database %q does not exist on %s; check the database name in the DSN (Concourse's is usually \"concourse\"; \\l in psql lists them)",
				prefix, w.database, w.hostPort)
		case codeLockNotAvailable:
			return newError(ErrLockTimeout, err,
				"%s: the table is locked by another session (lock_timeout %s); try again when Concourse is quiet or scale concourse-web down (see the runbook)",
				prefix, w.lock)
		case codeQueryCanceled:
			return newError(ErrStatementTimeout, err,
				"%s: the statement ran longer than statement_timeout %s and was cancelled, so its transaction changed nothing; try again when Concourse is quiet or scale concourse-web down (see the runbook), or raise targets.%s.database.statement_timeout",
				prefix, w.stmt, w.target)
		case codeReadOnlyTransaction:
			return newError(ErrReadOnly, err,
				"%s: %s is a read-only replica; point the DSN at the leader (the pod labelled spilo-role=master)",
				prefix, w.hostPort)
		case codeInsufficientPrivilege:
			return newError(ErrPermission, err,
				"%s: user %q lacks the privilege (%s); use the database user Concourse itself connects as",
				prefix, w.user, pgErr.Message)
		case codeTooManyConnections, codeCannotConnectNow, codeAdminShutdown:
			return newError(ErrUnavailable, err,
				"%s: PostgreSQL at %s is not accepting sessions (%s); wait and retry, or check the database pod",
				prefix, w.hostPort, pgErr.Message)
		case codeUndefinedTable:
			return newError(ErrNotFound, err,
				"%s: %s; is the DSN pointing at Concourse's database?", prefix, pgErr.Message)
		}
		return fmt.Errorf("%s: %w", prefix, err)
	}
	var connErr *pgconn.ConnectError
	if !errors.As(err, &connErr) {
		if pgconn.Timeout(err) {
			return newError(ErrStatementTimeout, err, "%s: no answer from %s in time; try again, or check the database pod", prefix, w.hostPort)
		}
		return fmt.Errorf("%s: %w", prefix, err)
	}
	var dnsErr *net.DNSError
	switch {
	case pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded) || isNetTimeout(err):
		return newError(ErrConnectTimeout, err,
			"%s: no answer from %s within connect_timeout %s; check the host and port in the DSN, network policies and firewalls, or whether the database pod is overloaded",
			prefix, w.hostPort, w.connect)
	case errors.Is(err, syscall.ECONNREFUSED):
		return newError(ErrUnreachable, err,
			"%s: nothing accepts connections at %s (connection refused); is the PostgreSQL pod or service up? check the host and port in the DSN",
			prefix, w.hostPort)
	case errors.As(err, &dnsErr):
		return newError(ErrUnreachable, err,
			"%s: cannot resolve host %q; check the host in the DSN and the cluster DNS",
			prefix, dnsErr.Name)
	}
	return newError(ErrUnreachable, err, "%s: cannot connect to %s: %s", prefix, w.endpoint, connectCause(connErr))
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// connectCause is the connect error without pgx's "failed to connect to"
// prefix, which repeats the user and database.
func connectCause(e *pgconn.ConnectError) string {
	if inner := errors.Unwrap(e); inner != nil {
		return inner.Error()
	}
	return e.Error()
}
