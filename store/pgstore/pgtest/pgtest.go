// Package pgtest gives tests a throwaway PostgreSQL database on the test
// server: GROUNDCREW_TEST_PG (a postgres:// URL of a superuser; trust auth
// is fine), by default 127.0.0.1:5432. Without a server the test is
// skipped, unless CI is set: then it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultServer is the test server when GROUNDCREW_TEST_PG is unset.
const DefaultServer = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// Server returns the test server's URL, skipping (or, with CI set,
// failing) the test when it does not answer.
func Server(t testing.TB) *url.URL {
	t.Helper()
	dsn := os.Getenv("GROUNDCREW_TEST_PG")
	if dsn == "" {
		dsn = DefaultServer
	}
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("GROUNDCREW_TEST_PG must be a postgres:// URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		msg := "no PostgreSQL at " + u.Redacted() + " (" + err.Error() + "); start it or point GROUNDCREW_TEST_PG at one"
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set, so the PostgreSQL tests must run: %s", msg)
		}
		t.Skip("skipping: " + msg)
	}
	_ = conn.Close(ctx)
	return u
}

// NewDatabase creates an empty database on server (Server(t) when nil),
// drops it when the test ends and returns its DSN.
func NewDatabase(t testing.TB, server *url.URL) string {
	t.Helper()
	if server == nil {
		server = Server(t)
	}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "groundcrew_storetest_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, server.String())
	if err != nil {
		t.Fatalf("connecting to %s: %v", server.Redacted(), err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "create database "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, server.String())
		if err != nil {
			t.Logf("dropping database %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "drop database if exists "+pgx.Identifier{name}.Sanitize()+" with (force)"); err != nil {
			t.Logf("dropping database %s: %v", name, err)
		}
	})
	u := *server
	u.Path = "/" + name
	return u.String()
}
