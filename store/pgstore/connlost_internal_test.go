package pgstore

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
)

func TestConnLost_OnlyWhatTheServerCannotHaveRun(t *testing.T) {
	assert.True(t, connLost(fmt.Errorf("reading: %w", &pgconn.PgError{Code: "57P01"})), "admin_shutdown")
	assert.True(t, connLost(&pgconn.PgError{Code: "57P03"}), "cannot_connect_now")
	assert.False(t, connLost(&pgconn.PgError{Code: "57014"}), "a statement timeout is an answer")
	assert.False(t, connLost(&pgconn.PgError{Code: "40001"}), "a serialization failure is the caller's to retry")
	assert.False(t, connLost(errors.New("committing: unexpected EOF")))
	assert.False(t, connLost(nil))
}
