package pgstore_test

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

// TestOpen_ConnectionErrors (#35.4): a store that cannot be reached is
// said once (pgx tries again without TLS under sslmode=prefer and listed
// both attempts) and is worth waiting for; a refusal no retry mends (no
// such role, no such database) says what to fix and is not.
func TestOpen_ConnectionErrors(t *testing.T) {
	srv := pgtest.Server(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	with := func(user, db string) string {
		u := *srv
		if user != "" {
			u.User = url.User(user)
		}
		u.Path = "/" + db
		q := u.Query()
		q.Set("sslmode", "prefer")
		u.RawQuery = q.Encode()
		return u.String()
	}
	cases := []struct {
		name        string
		dsn         string
		unreachable bool
		says        string
		once        string
	}{
		{"nothing listens", "postgres://postgres@" + closed + "/groundcrew?sslmode=prefer", true,
			"failed to connect to `user=postgres database=groundcrew`: " + closed + " (127.0.0.1): dial error: dial tcp " + closed + ": connect: connection refused",
			"connection refused"},
		{"no such host", "postgres://postgres@db.invalid:5432/groundcrew?sslmode=prefer", true,
			"hostname resolving error: lookup db.invalid", "no such host"},
		{"no such database", with("", "groundcrew_no_such_db"), false,
			`database "groundcrew_no_such_db" does not exist: create it (empty, owned by the role; groundcrew creates its schema) or fix the DSN — failed to connect`,
			"(SQLSTATE 3D000)"},
		{"no such role", with("groundcrew_no_such_role", "postgres"), false,
			`the server does not let role "groundcrew_no_such_role" in (no such role, or pg_hba.conf refuses it): create the role or fix the DSN — failed to connect`,
			"FATAL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := pgstore.Open(ctx, c.dsn, pgstore.Options{})
			require.Error(t, err)
			assert.Equal(t, c.unreachable, pgstore.Unreachable(err), "%v", err)
			assert.Equal(t, !c.unreachable, errors.Is(err, pgstore.ErrRefused), "%v", err)
			assert.Contains(t, err.Error(), c.says)
			assert.Equal(t, 1, strings.Count(err.Error(), c.once), "said once: %v", err)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}
