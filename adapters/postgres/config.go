package postgres

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults applied to a DatabaseConfig whose durations are zero.
const (
	DefaultStatementTimeout = 30 * time.Second
	DefaultLockTimeout      = 5 * time.Second
	DefaultConnectTimeout   = 5 * time.Second
)

// DatabaseConfig is the Concourse database of one target.
//
// DSN is the resolved secret (the caller reads it from a file or the
// environment); it is never logged: String, GoString and LogValue redact it.
type DatabaseConfig struct {
	// DSN is a libpq connection string, URL ("postgres://user:pw@host:5432/concourse?sslmode=require")
	// or key=value form.
	DSN string `yaml:"dsn"`
	// StatementTimeout bounds every statement groundcrew runs (default 30s).
	StatementTimeout time.Duration `yaml:"statement_timeout"`
	// LockTimeout bounds the wait for a table lock (default 5s). Keep it short:
	// while a TRUNCATE waits for its lock, Concourse's own writes to that table
	// queue behind it.
	LockTimeout time.Duration `yaml:"lock_timeout"`
	// ConnectTimeout bounds connecting (default 5s). A connect_timeout in the
	// DSN wins.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
}

// WithDefaults returns c with zero durations replaced by the defaults.
func (c DatabaseConfig) WithDefaults() DatabaseConfig {
	if c.StatementTimeout == 0 {
		c.StatementTimeout = DefaultStatementTimeout
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = DefaultLockTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	return c
}

// Validate checks the DSN parses and the durations are sane. Its errors never
// contain the DSN.
func (c DatabaseConfig) Validate() error {
	if strings.TrimSpace(c.DSN) == "" {
		return errors.New("dsn is empty")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"statement_timeout", c.StatementTimeout},
		{"lock_timeout", c.LockTimeout},
		{"connect_timeout", c.ConnectTimeout},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s: %s is negative", d.name, d.v)
		}
		if d.v > 0 && d.v < time.Millisecond {
			return fmt.Errorf("%s: %s is below 1ms", d.name, d.v)
		}
	}
	if _, err := c.poolConfig(); err != nil {
		return err
	}
	return nil
}

// ReadDSNFile reads a DSN from a secret file (a mounted Kubernetes secret,
// say), trimming surrounding whitespace. Its errors name the file, never its
// content.
func ReadDSNFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading dsn_file: %w", err)
	}
	dsn := strings.TrimSpace(string(b))
	if dsn == "" {
		return "", fmt.Errorf("dsn_file %s is empty", path)
	}
	return dsn, nil
}

// errBadDSN is returned, unwrapped, when the DSN does not parse. pgconn's
// parse errors (and url.Parse errors inside them) can quote the connection
// string, so they are dropped rather than wrapped.
var errBadDSN = errors.New("dsn is not a valid PostgreSQL connection string " +
	"(postgres://user:password@host:5432/concourse?sslmode=require, or host=... user=... dbname=...)")

// poolConfig parses the DSN and applies the timeouts that belong to the
// connection. Statement and lock timeouts are set per transaction instead,
// with set_config(..., true), so they also hold behind PgBouncer.
func (c DatabaseConfig) poolConfig() (*pgxpool.Config, error) {
	c = c.WithDefaults()
	pc, err := pgxpool.ParseConfig(c.DSN)
	if err != nil {
		return nil, errBadDSN
	}
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = c.ConnectTimeout
	}
	if _, ok := pc.ConnConfig.RuntimeParams["application_name"]; !ok {
		// Shows up in pg_stat_activity, so a DBA can tell who holds a lock.
		pc.ConnConfig.RuntimeParams["application_name"] = "groundcrew"
	}
	// An unnamed statement, described then executed: no server-side
	// prepared statements to lose behind a transaction-mode PgBouncer, and
	// the server still infers parameter types. The bot runs few queries.
	pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeDescribeExec
	pc.MaxConns = 4
	pc.MinConns = 0
	pc.MaxConnIdleTime = 5 * time.Minute
	return pc, nil
}

// String describes the config with the password redacted.
func (c DatabaseConfig) String() string {
	c = c.WithDefaults()
	return fmt.Sprintf("{dsn:%s statement_timeout:%s lock_timeout:%s connect_timeout:%s}",
		redactDSN(c.DSN), c.StatementTimeout, c.LockTimeout, c.ConnectTimeout)
}

// GoString implements fmt.GoStringer so %#v redacts too.
func (c DatabaseConfig) GoString() string { return "postgres.DatabaseConfig" + c.String() }

// LogValue implements slog.LogValuer.
func (c DatabaseConfig) LogValue() slog.Value {
	c = c.WithDefaults()
	return slog.GroupValue(
		slog.String("dsn", redactDSN(c.DSN)),
		slog.Duration("statement_timeout", c.StatementTimeout),
		slog.Duration("lock_timeout", c.LockTimeout),
		slog.Duration("connect_timeout", c.ConnectTimeout),
	)
}

// redactDSN describes where a DSN points without its password:
// "user@host:port/db". An unparsable DSN becomes "<invalid dsn>", an empty
// one "<none>".
func redactDSN(dsn string) string {
	if strings.TrimSpace(dsn) == "" {
		return "<none>"
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return "<invalid dsn>"
	}
	return endpoint(pc.ConnConfig.User, pc.ConnConfig.Host, pc.ConnConfig.Port, pc.ConnConfig.Database)
}

// endpoint is the password-free "user@host:port/db" used in messages.
func endpoint(user, host string, port uint16, db string) string {
	return fmt.Sprintf("%s@%s/%s", user, hostPort(host, port), db)
}

// hostPort is "host:port", or the socket directory for a Unix socket.
func hostPort(host string, port uint16) string {
	if port == 0 || strings.HasPrefix(host, "/") {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// ms renders a duration for set_config in milliseconds, PostgreSQL's
// default unit for both timeouts.
func ms(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	n := d.Milliseconds()
	if n == 0 {
		n = 1
	}
	return strconv.FormatInt(n, 10)
}
