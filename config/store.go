package config

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/internal/secret"
)

// EnvStoreDSN names the environment variable with the DSN of a PostgreSQL
// store; when set, the store is PostgreSQL whatever the file says.
const EnvStoreDSN = "GROUNDCREW_STORE_DSN"

// StorePostgres is a PostgreSQL store (store: {postgres: {dsn_file: …}}).
type StorePostgres struct {
	// DSN is a libpq connection string or postgres:// URL. Prefer DSNFile
	// (a mounted secret) or GROUNDCREW_STORE_DSN.
	DSN     secret.Secret `yaml:"dsn"`
	DSNFile string        `yaml:"dsn_file"`
}

// StoreSetting is the store key as written: a path (the bbolt file) or a
// mapping with postgres.
type StoreSetting struct {
	Path     string
	Postgres *StorePostgres
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *StoreSetting) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if err := n.Decode(&s.Path); err != nil {
			return err
		}
		if scheme, _, ok := strings.Cut(s.Path, "://"); ok && !IsPostgresURL(s.Path) && !strings.ContainsAny(scheme, "/\\") {
			return fmt.Errorf("line %d: store: %q is neither a bbolt file path nor a postgres:// (or postgresql://) URL", n.Line, scheme+"://…")
		}
		if IsPostgresURL(s.Path) {
			// store: postgres://… is the DSN written inline, not a file
			// named "postgres:" (which a bbolt path would silently become).
			s.Postgres, s.Path = &StorePostgres{DSN: secret.Secret(s.Path)}, ""
		}
		return nil
	case yaml.MappingNode:
		var m struct {
			Path     string         `yaml:"path"`
			Postgres *StorePostgres `yaml:"postgres"`
		}
		if err := decodeKnown(n, &m); err != nil {
			return err
		}
		if m.Path != "" && m.Postgres != nil {
			return fmt.Errorf("line %d: store: give either path (a bbolt file) or postgres, not both", n.Line)
		}
		s.Path, s.Postgres = m.Path, m.Postgres
		if s.Postgres == nil && s.Path == "" {
			return fmt.Errorf("line %d: store: write a bbolt file path or postgres: {dsn_file: …}", n.Line)
		}
		return nil
	}
	return fmt.Errorf("line %d: store: write a bbolt file path or postgres: {dsn_file: …}", n.Line)
}

// IsPostgresURL reports whether a store setting is a PostgreSQL URL
// (postgres:// or postgresql://) rather than a bbolt file path.
func IsPostgresURL(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return strings.HasPrefix(v, "postgres://") || strings.HasPrefix(v, "postgresql://")
}

// decodeKnown decodes n refusing unknown keys (as the whole file is).
func decodeKnown(n *yaml.Node, v any) error {
	data, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("line %d: store: %v", n.Line, err)
	}
	return nil
}

// takeStore copies the store setting into Store / StorePostgres.
func (c *Config) takeStore() {
	if c.StoreYAML.Postgres != nil {
		c.StorePostgres = c.StoreYAML.Postgres
	} else if c.StoreYAML.Path != "" {
		c.Store = c.StoreYAML.Path
	}
	if v := os.Getenv("GROUNDCREW_STORE"); IsPostgresURL(v) {
		c.StorePostgres, c.Store = &StorePostgres{DSN: secret.Secret(v)}, ""
	}
	if v := os.Getenv(EnvStoreDSN); v != "" {
		if c.StorePostgres == nil {
			c.StorePostgres = &StorePostgres{}
		}
	}
}

// validateStore resolves the DSN of a PostgreSQL store.
func (c *Config) validateStore(add func(path, format string, args ...any)) {
	p := c.StorePostgres
	if p == nil {
		return
	}
	dsn, err := secret.Resolve("store.postgres.dsn", p.DSN, p.DSNFile, EnvStoreDSN)
	switch {
	case err != nil:
		add("store.postgres.dsn", "%v", err)
	case !dsn.IsSet():
		add("store.postgres", "needs dsn_file (a file with the DSN, e.g. a mounted secret) or %s", EnvStoreDSN)
	default:
		p.DSN, p.DSNFile = dsn, ""
		// What serve would refuse at start (the error names no password).
		if _, err := pgconn.ParseConfig(dsn.Value()); err != nil {
			add("store.postgres.dsn", "%v", err)
		}
	}
}

// PostgresStore reports whether the store is PostgreSQL.
func (c *Config) PostgresStore() bool { return c.StorePostgres != nil }
