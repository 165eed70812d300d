package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Lease is the leader lease in the store's leader table (package leader).
// Every comparison uses the database's clock.
type Lease struct{ s *DB }

// Lease returns the store's leader lease.
func (s *DB) Lease() Lease { return Lease{s} }

// Acquire takes the lease when it expired or was released. The update
// waits for the writes in flight of the previous holder (they hold the
// lease row FOR SHARE) and raises the epoch.
func (l Lease) Acquire(ctx context.Context, holder string, ttl time.Duration) (int64, bool, string, error) {
	var epoch int64
	var cur string
	var live bool
	if err := l.s.pool.QueryRow(ctx, "select holder, expires_at > now() from leader where id = 1").Scan(&cur, &live); err != nil {
		return 0, false, "", fmt.Errorf("reading the leader lease: %w", err)
	}
	if live && cur != "" {
		return 0, false, cur, nil
	}
	err := l.s.pool.QueryRow(ctx, `update leader set holder = $1, epoch = epoch + 1, expires_at = now() + make_interval(secs => $2), changed_at = now()
		where id = 1 and (expires_at <= now() or holder = '') returning epoch`, holder, ttl.Seconds()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, cur, nil
	}
	if err != nil {
		return 0, false, "", fmt.Errorf("taking the leader lease: %w", err)
	}
	return epoch, true, holder, nil
}

// Renew extends the lease of holder at epoch while it has not expired.
func (l Lease) Renew(ctx context.Context, holder string, epoch int64, ttl time.Duration) (bool, error) {
	tag, err := l.s.pool.Exec(ctx, `update leader set expires_at = now() + make_interval(secs => $3)
		where id = 1 and holder = $1 and epoch = $2 and expires_at > now()`, holder, epoch, ttl.Seconds())
	if err != nil {
		return false, fmt.Errorf("renewing the leader lease: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release gives the lease up.
func (l Lease) Release(ctx context.Context, holder string, epoch int64) error {
	_, err := l.s.pool.Exec(ctx, `update leader set holder = '', expires_at = now(), changed_at = now()
		where id = 1 and holder = $1 and epoch = $2`, holder, epoch)
	if err != nil {
		return fmt.Errorf("releasing the leader lease: %w", err)
	}
	return nil
}
