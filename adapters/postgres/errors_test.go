package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testWhere() where {
	return where{
		target: "infra-prd", endpoint: "concourse@db:5432/concourse", user: "concourse", database: "concourse",
		hostPort: "db:5432", lock: 5 * time.Second, stmt: 30 * time.Second, connect: 5 * time.Second,
	}
}

func TestClassify_ServerErrors(t *testing.T) {
	cases := []struct {
		code string
		kind error
		want string
	}{
		{codeInvalidPassword, ErrAuth, `purge of pipeline_build_events_12 on infra-prd: PostgreSQL at db:5432 refused user "concourse"`},
		{codeInvalidAuthSpec, ErrAuth, "targets.infra-prd.database.dsn_file"},
		{codeInvalidCatalog, ErrDatabaseMissing, `database "concourse" does not exist on db:5432; check the database name in the DSN`},
		{codeLockNotAvailable, ErrLockTimeout, "purge of pipeline_build_events_12 on infra-prd: the table is locked by another session (lock_timeout 5s); try again when Concourse is quiet or scale concourse-web down (see the runbook)"},
		{codeQueryCanceled, ErrStatementTimeout, "ran longer than statement_timeout 30s and was cancelled"},
		{codeReadOnlyTransaction, ErrReadOnly, "read-only replica; point the DSN at the leader"},
		{codeInsufficientPrivilege, ErrPermission, `user "concourse" lacks the privilege`},
		{codeTooManyConnections, ErrUnavailable, "not accepting sessions"},
		{codeUndefinedTable, ErrNotFound, "is the DSN pointing at Concourse's database?"},
	}
	for _, tc := range cases {
		t.Run(tc.code, func(t *testing.T) {
			pgErr := &pgconn.PgError{Code: tc.code, Message: "server says no"}
			err := classify(context.Background(), fmt.Errorf("exec: %w", pgErr), "purge of pipeline_build_events_12", testWhere())
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.kind), "kind")
			var got *pgconn.PgError
			require.True(t, errors.As(err, &got), "cause reachable")
			assert.Equal(t, tc.code, got.Code)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestClassify_Other(t *testing.T) {
	w := testWhere()
	t.Run("nil", func(t *testing.T) {
		assert.NoError(t, classify(context.Background(), nil, "x", w))
	})
	t.Run("cancelled context wins", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := classify(ctx, &pgconn.PgError{Code: codeQueryCanceled}, "purge of t", w)
		assert.True(t, errors.Is(err, context.Canceled))
		assert.False(t, errors.Is(err, ErrStatementTimeout), "the user stopped it; it did not time out")
		assert.Contains(t, err.Error(), "purge of t on infra-prd: stopped")
	})
	t.Run("unknown server error wrapped", func(t *testing.T) {
		err := classify(context.Background(), &pgconn.PgError{Code: "XX000", Message: "boom"}, "reading sizes", w)
		assert.Contains(t, err.Error(), "reading sizes on infra-prd: ")
		var e *Error
		assert.False(t, errors.As(err, &e))
	})
	t.Run("already classified kept", func(t *testing.T) {
		in := fmt.Errorf("w: %w", newError(ErrNotFound, nil, "team x not found"))
		out := classify(context.Background(), in, "a", w)
		assert.Equal(t, in, out)
		assert.True(t, errors.Is(out, ErrNotFound))
	})
}
