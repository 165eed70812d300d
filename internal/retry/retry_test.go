package retry_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/internal/retry"
)

func TestUntilRetriesUntilItSucceeds(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	n := 0
	err := retry.Until(context.Background(), log, "listing open incidents", func(context.Context) error {
		if n++; n < 3 {
			return errors.New("FATAL: the database system is shutting down (SQLSTATE 57P03)")
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Contains(t, logs.String(), `msg="failed; retrying" what="listing open incidents" attempt=2 retry_in=200ms`)
	assert.Contains(t, logs.String(), `msg="succeeded after retrying" what="listing open incidents" attempts=3`)
}

func TestUntilEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err := retry.Until(ctx, slog.New(slog.DiscardHandler), "x", func(context.Context) error { return errors.New("down") })
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
