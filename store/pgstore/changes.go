package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ChangesChannel is the PostgreSQL notification channel every committed
// run and incident write announces itself on ("run:<id>",
// "incident:<id>"; a new run also "thread:<thread>", its chat thread). pg_notify inside the write's transaction is delivered
// only when it commits, in commit order, to every session LISTENing: each
// replica (the leader and the standbys) learns of the leader's commits
// with no query while nothing changes and no table or row lock of its
// own. The web pages' live updates follow them (Listen).
const ChangesChannel = "groundcrew_changes"

// notify queues the announcement of kind id on q (sent with the write).
func notify(q *pgx.Batch, kind, id string) {
	q.Queue("select pg_notify($1, $2)", ChangesChannel, kind+":"+id)
}

// Listen calls changed for every run and incident write committed (by
// any replica) until ctx ends, on a connection of its own (LISTEN needs a
// session: not through a transaction-mode pooler). When it connects — at
// start and after a lost connection, when notifications may have been
// missed — it calls resync first. It retries with a growing pause (at most
// 10 s) and returns only when ctx ends.
func (s *DB) Listen(ctx context.Context, changed func(kind, id string), resync func(), log *slog.Logger) error {
	wait := 200 * time.Millisecond
	for {
		err := s.listenOnce(ctx, changed, resync)
		if ctx.Err() != nil {
			return nil
		}
		log.Warn("store: listening for changes failed; live pages miss updates until it is back", "err", err, "retry_in", wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(wait*2, 10*time.Second)
	}
}

func (s *DB) listenOnce(ctx context.Context, changed func(kind, id string), resync func()) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "listen "+ChangesChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	resync() // what committed while no one listened
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if kind, id, ok := strings.Cut(n.Payload, ":"); ok {
			changed(kind, id)
		}
	}
}
