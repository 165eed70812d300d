package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// CompactResult says what Compact did.
type CompactResult struct {
	Before, After int64              // file sizes in bytes
	Audit         int                // audit entries verified in the compacted file
	Head          runmodel.AuditHead // the audit chain's head, the same before and after
	Runs          int
	Took          time.Duration
}

// compactTxSize is how much Compact copies per write transaction.
const compactTxSize = 64 << 20

// Compact rewrites the store at path into a new file holding only the data
// (bbolt never shrinks its file: pages freed by retention are reused, not
// returned), then replaces the file with it. It refuses a store another
// process holds (a running serve), and a store whose audit chain does not
// verify; the compacted copy must verify to the same head and hold the
// same runs before it replaces the original, which is kept locked until
// then. It needs free disk space for the copy.
func Compact(ctx context.Context, path string) (CompactResult, error) {
	var res CompactResult
	start := time.Now()
	src, err := Open(path, Options{Timeout: 200 * time.Millisecond})
	if errors.Is(err, runmodel.ErrLocked) {
		return res, fmt.Errorf("not compacting %s: %w: stop groundcrew serve first (compaction needs the store to itself)", path, runmodel.ErrLocked)
	}
	if err != nil {
		return res, err
	}
	defer src.Close()
	if res.Before, err = src.Size(); err != nil {
		return res, err
	}
	n, err := src.VerifyAudit(ctx)
	if err != nil {
		return res, fmt.Errorf("not compacting %s: the audit log does not verify before compaction (%d good entries): %w", path, n, err)
	}
	if res.Head, err = src.AuditHead(ctx); err != nil {
		return res, err
	}
	if res.Runs, err = src.countRuns(); err != nil {
		return res, err
	}

	tmp := path + ".compacting"
	_ = os.Remove(tmp) // left by an interrupted compaction
	fail := func(err error) (CompactResult, error) {
		_ = os.Remove(tmp)
		return res, err
	}
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true})
	if err != nil {
		return fail(fmt.Errorf("creating %s: %w", tmp, err))
	}
	if err := bolt.Compact(dst, src.db, compactTxSize); err != nil {
		dst.Close()
		return fail(fmt.Errorf("copying %s into %s: %w", path, tmp, err))
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return fail(fmt.Errorf("syncing %s: %w", tmp, err))
	}
	if err := dst.Close(); err != nil {
		return fail(fmt.Errorf("closing %s: %w", tmp, err))
	}

	// The copy must be the same store: the chain verifies to the same head,
	// the same runs are there.
	cp, err := Open(tmp, Options{})
	if err != nil {
		return fail(fmt.Errorf("opening the compacted copy %s: %w", tmp, err))
	}
	m, verr := cp.VerifyAudit(ctx)
	head, herr := cp.AuditHead(ctx)
	runs, rerr := cp.countRuns()
	size, serr := cp.Size()
	cp.Close()
	switch {
	case errors.Join(verr, herr, rerr, serr) != nil:
		return fail(fmt.Errorf("checking the compacted copy %s: %w; the store is unchanged", tmp, errors.Join(verr, herr, rerr, serr)))
	case m != n || head != res.Head:
		return fail(fmt.Errorf("the compacted copy's audit log (%d entries, head %s) differs from the store's (%d, head %s); the store is unchanged", m, head, n, res.Head))
	case runs != res.Runs:
		return fail(fmt.Errorf("the compacted copy holds %d runs, the store %d; the store is unchanged", runs, res.Runs))
	}
	// Replaced while the original is still locked: a serve starting now
	// waits for the lock, then finds the path no longer names the file it
	// opened and opens the compacted one (Open).
	if err := os.Rename(tmp, path); err != nil {
		return fail(fmt.Errorf("replacing %s with its compacted copy: %w", path, err))
	}
	res.After, res.Audit, res.Took = size, m, time.Since(start)
	return res, nil
}

func (s *DB) countRuns() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bRuns).Stats().KeyN; return nil })
	return n, err
}
