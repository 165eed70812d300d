package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// fileHasFreelist reads the bbolt file's current meta page (of the two, the
// one with the higher transaction id) and says whether it points at a free
// page list. It reads the file itself, so it works while the store is open.
func fileHasFreelist(t *testing.T, path string) bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	// A page starts with a 16-byte header; the meta page's fields follow:
	// magic, version, page size, flags (4 bytes each), root bucket (16),
	// free list page id (8), high water mark (8), transaction id (8).
	const meta = 16
	pageSize := int(binary.NativeEndian.Uint32(raw[meta+8:]))
	var freelist, txid uint64
	for _, at := range []int{0, pageSize} {
		if tx := binary.NativeEndian.Uint64(raw[at+meta+48:]); tx >= txid {
			txid, freelist = tx, binary.NativeEndian.Uint64(raw[at+meta+32:])
		}
	}
	return freelist != ^uint64(0) // bbolt's "no free list" page id
}

func freePages(db *DB) int {
	st := db.db.Stats()
	return st.FreePageN + st.PendingPageN
}

// storeWithFreePages fills a store with finished runs with long journals
// and deletes them by retention: it is left with many free pages.
func storeWithFreePages(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path, Options{Retention: time.Hour, NoSync: true})
	require.NoError(t, err)
	ctx := context.Background()
	long := strings.Repeat("output ", 500)
	for i := range 60 {
		r, b := finishedRun(fmt.Sprintf("r-%03d", i), t0)
		for range 4 {
			b.Journal = append(b.Journal, runmodel.JournalEntry{Type: runmodel.JStepDone, Message: long})
		}
		require.NoError(t, db.CreateRun(ctx, r, b))
	}
	require.NoError(t, db.CreateRun(ctx, &runmodel.Run{ID: "r-active", State: runmodel.RunAwaitingApproval, CreatedAt: t0.Add(48 * time.Hour)}, nil))
	res, err := db.Housekeep(ctx, t0.Add(47*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 60, res.Runs)
	return db
}

func touch(t *testing.T, db *DB) {
	t.Helper()
	_, err := db.UpdateRun(context.Background(), "r-active", func(r *runmodel.Run, _ *runmodel.Batch) error {
		r.UpdatedAt = r.UpdatedAt.Add(time.Second)
		return nil
	})
	require.NoError(t, err)
}

// Once a housekeeping pass left many pages free, commits stop writing
// bbolt's list of them (its cost grows with every free page); Close writes
// it once more, so the next start reads the list instead of rebuilding it.
func TestFreelist_LeftOutOfCommitsWhenLongWrittenOnClose(t *testing.T) {
	defer func(n int) { freelistSyncMax = n }(freelistSyncMax)
	freelistSyncMax = 32
	p := filepath.Join(t.TempDir(), "gc.db")
	db := storeWithFreePages(t, p)
	free := freePages(db)
	require.Greater(t, free, freelistSyncMax, "the pass freed the runs' pages")
	touch(t, db) // a vote, after the pass
	assert.False(t, fileHasFreelist(t, p), "commits leave the long list out")

	require.NoError(t, db.Close())
	assert.True(t, fileHasFreelist(t, p), "Close writes it")
	db, err := Open(p, Options{NoSync: true})
	require.NoError(t, err)
	defer db.Close()
	assert.InDelta(t, free, freePages(db), 2, "the next start reads the same free pages")
	touch(t, db)
	assert.False(t, fileHasFreelist(t, p), "and its commits leave it out again")
	_, err = db.GetRun(context.Background(), "r-active")
	assert.NoError(t, err)
}

// A store with few free pages writes the list at every commit (a start
// after a crash reads it, nothing to rebuild).
func TestFreelist_ShortListWrittenAtEveryCommit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gc.db")
	db := storeWithFreePages(t, p)
	defer db.Close()
	require.LessOrEqual(t, freePages(db), freelistSyncMax)
	touch(t, db)
	assert.True(t, fileHasFreelist(t, p))
}

// After a crash while commits left the list out, the store opens (bbolt
// rebuilds the list by walking the file), is consistent and keeps its data;
// the free pages are found again, not lost.
func TestFreelist_CrashWithoutTheListOpens(t *testing.T) {
	defer func(n int) { freelistSyncMax = n }(freelistSyncMax)
	freelistSyncMax = 32
	dir := t.TempDir()
	db := storeWithFreePages(t, filepath.Join(dir, "gc.db"))
	defer db.Close()
	touch(t, db)
	free := freePages(db)
	// The file as a crash leaves it: the last commit, no Close.
	crashed := filepath.Join(dir, "crashed.db")
	in, err := os.Open(db.Path())
	require.NoError(t, err)
	out, err := os.Create(crashed)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, errors.Join(in.Close(), out.Close()))
	require.False(t, fileHasFreelist(t, crashed))

	c, err := Open(crashed, Options{NoSync: true})
	require.NoError(t, err)
	defer c.Close()
	assert.InDelta(t, free, freePages(c), 8, "the free pages are found again")
	require.NoError(t, c.db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	}))
	r, err := c.GetRun(context.Background(), "r-active")
	require.NoError(t, err)
	assert.Equal(t, time.Time{}.Add(time.Second), r.UpdatedAt, "the last commit before the crash is there")
	n, err := c.VerifyAudit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 60, n)
	touch(t, c)
}
