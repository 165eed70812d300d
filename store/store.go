// Package store keeps groundcrew's state in one bbolt file: runs, their
// step journal, approvals (inside runs), the hash-chained audit log, inbound
// event ids for de-duplication, the chat outbox and digest history.
//
// Every method is one transaction. Values are JSON with string enums; the
// schema version lives in the meta bucket and migrations are append-only.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Bucket names.
var (
	bMeta       = []byte("meta")
	bRuns       = []byte("runs")
	bRunsByTime = []byte("runs_by_time")
	bJournal    = []byte("journal")
	bAudit      = []byte("audit")
	bMessages   = []byte("messages")
	bEvents     = []byte("events")
	bOutbox     = []byte("outbox")
	bDigests    = []byte("digests")
	bKV         = []byte("kv")
	// bActive indexes the runs in a non-terminal state (run id → created
	// time): Tick, Resume and /runbook status read only these, so their cost
	// does not grow with the finished runs kept for the record.
	bActive = []byte("runs_active")
	// bSpecs holds each runbook version runs were started with, once, by
	// content hash: a run refers to its spec instead of carrying a copy.
	bSpecs = []byte("specs")
	// bByThread indexes runs by the chat thread they belong to (key:
	// thread id, NUL, run id), for the incident summary of a thread.
	bByThread = []byte("runs_by_thread")
	// bRunMessages indexes the message index by run (key: run id, NUL,
	// message key), so deleting a run deletes its own entries.
	bRunMessages = []byte("runs_messages")
	// bEventsByTime indexes the inbound event ids by when they were first
	// seen (key: 8-byte Unix seconds, event id), so forgetting the old ones
	// reads only those.
	bEventsByTime = []byte("events_by_time")
	// bAuditByRun indexes the audit log by run (key: run id, NUL, 8-byte
	// sequence number), so a run's entries are read without the others.
	bAuditByRun = []byte("audit_by_run")
	// bRunsByRunbook, bRunsByTarget and bRunsByState index the runs by
	// runbook, target and state (key: the value, NUL, the run's
	// runs-by-time key; no value), so a listing filtered by them reads the
	// runs that match, not every run back to since (listIndexed).
	bRunsByRunbook = []byte("runs_by_runbook")
	bRunsByTarget  = []byte("runs_by_target")
	bRunsByState   = []byte("runs_by_state")
)

var allBuckets = [][]byte{bMeta, bRuns, bRunsByTime, bJournal, bAudit, bMessages, bEvents, bOutbox, bDigests, bKV}

// SchemaVersion is the version this binary writes.
const SchemaVersion = 7

// DefaultRetention is how long finished runs are kept (Options.Retention).
const DefaultRetention = 400 * 24 * time.Hour

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for the file lock (default 1s).
	Timeout time.Duration
	// EventTTL is how long inbound event ids are remembered (default 7 days).
	EventTTL time.Duration
	// Retention is how long a finished run (with its journal and message
	// index) is kept after it finished (default DefaultRetention). The audit
	// log is never pruned.
	Retention time.Duration
	// NoSync skips the fsync after each transaction. Only for tests and
	// benchmarks that fill a store quickly: a crash may lose data.
	NoSync bool
}

// DB is the bbolt store. It implements runmodel.Store and is safe for concurrent use.
type DB struct {
	db        *bolt.DB
	eventTTL  time.Duration
	retention time.Duration
	specs     *specCache
	waiting   atomic.Int32 // writes waiting for bbolt's writer lock (update)
}

var (
	_ runmodel.Store       = (*DB)(nil)
	_ runmodel.Housekeeper = (*DB)(nil)
)

// Open opens (creating if needed) the store at path. It fails with an error
// wrapping runmodel.ErrLocked when another process holds the file.
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.EventTTL <= 0 {
		opts.EventTTL = 7 * 24 * time.Hour
	}
	if opts.Retention <= 0 {
		opts.Retention = DefaultRetention
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating store directory %s: %w", dir, err)
		}
	}
	db, err := openLocked(path, opts)
	if err != nil {
		return nil, err
	}
	s := &DB{db: db, eventTTL: opts.EventTTL, retention: opts.Retention, specs: newSpecCache()}
	if err := s.migrate(); err != nil {
		s.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return s, nil
}

// boltOptions are the bbolt settings of a store. bbolt's free page list is
// a hash map (as in etcd): allocating and freeing pages costs the same
// however many pages are free. Whether a commit writes that list is
// decided as the store runs (tuneFreelist), not here.
func boltOptions(opts Options) *bolt.Options {
	return &bolt.Options{Timeout: opts.Timeout, NoSync: opts.NoSync, FreelistType: bolt.FreelistMapType, NoFreelistSync: true}
}

// freelistSyncMax is how many free pages bbolt's free page list may hold
// and still be written at every commit (16 MiB of free space at 4 KiB
// pages). Past it, commits leave the list out. Writing it means encoding
// every free page id: after the first retention pass over 100,000 runs
// (154,000 free pages, a 1.2 MB list) that made each commit cost 3 ms of
// CPU (13 ms with the hash map) instead of 0.2 ms, and a commit of every
// vote and run update as much. The list is written once more when the
// store is closed, so the next start reads it (30–80 ms at 154,000 free
// pages); after a crash bbolt rebuilds it by walking the file (0.5–0.85 s
// at 100,000 runs). store compact gives the free pages back: the list is
// short again and written at every commit.
var freelistSyncMax = 4096

// tuneFreelist decides whether commits write bbolt's free page list (see
// freelistSyncMax), from the free pages the last commit left. It is called
// in a write transaction: the writer lock guards the flag.
func (s *DB) tuneFreelist() {
	st := s.db.Stats()
	s.db.NoFreelistSync = st.FreePageN+st.PendingPageN > freelistSyncMax
}

// update runs fn in a write transaction: every write of the store goes
// through it. It counts the writes waiting for the writer (a housekeeping
// batch ends early for them), and each decides whether its commit writes
// the free page list.
func (s *DB) update(fn func(*bolt.Tx) error) error {
	s.waiting.Add(1)
	in := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		in = true
		s.waiting.Add(-1)
		s.tuneFreelist()
		return fn(tx)
	})
	if !in {
		s.waiting.Add(-1)
	}
	return err
}

// openLocked opens the bbolt file at path and takes its lock. When the
// file was replaced while this process waited for the lock (store compact
// renames the compacted copy over it), it opens the new file instead.
func openLocked(path string, opts Options) (*bolt.DB, error) {
	for attempt := 0; ; attempt++ {
		before, _ := os.Stat(path)
		db, err := bolt.Open(path, 0o600, boltOptions(opts))
		if err != nil {
			if errors.Is(err, bolterrors.ErrTimeout) {
				return nil, fmt.Errorf("opening store %s: %w (is another groundcrew running with this store?)", path, runmodel.ErrLocked)
			}
			return nil, fmt.Errorf("opening store %s: %w", path, err)
		}
		after, err := os.Stat(path)
		if err == nil && (before == nil || os.SameFile(before, after)) || attempt == 2 {
			return db, nil
		}
		db.Close()
	}
}

// Close closes the store. When commits have been leaving bbolt's free page
// list out (tuneFreelist), a last commit writes it, so the next start reads
// the list instead of rebuilding it.
func (s *DB) Close() error {
	err := s.db.Update(func(*bolt.Tx) error {
		if !s.db.NoFreelistSync {
			return errListWritten // nothing to commit
		}
		s.db.NoFreelistSync = false
		return nil
	})
	if errors.Is(err, errListWritten) || errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		err = nil
	} else if err != nil {
		err = fmt.Errorf("writing the free page list of %s: %w", s.db.Path(), err)
	}
	return errors.Join(err, s.db.Close())
}

var errListWritten = errors.New("the free page list is written at every commit")

// Path returns the file path.
func (s *DB) Path() string { return s.db.Path() }

// Ping reports whether the store is open and readable (readiness).
func (s *DB) Ping() error { return s.db.View(func(*bolt.Tx) error { return nil }) }

// Size returns the size of the store file in bytes.
func (s *DB) Size() (int64, error) {
	st, err := os.Stat(s.db.Path())
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// migration upgrades the schema from one version to the next.
type migration struct {
	from, to int
	fn       func(tx *bolt.Tx) error
}

// migrations is append-only.
var migrations = []migration{
	{0, 1, func(tx *bolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return fmt.Errorf("creating bucket %q: %w", b, err)
			}
		}
		return nil
	}},
	// 2: the index of active runs.
	{1, 2, func(tx *bolt.Tx) error {
		ab, err := tx.CreateBucketIfNotExists(bActive)
		if err != nil {
			return fmt.Errorf("creating bucket %q: %w", bActive, err)
		}
		return tx.Bucket(bRuns).ForEach(func(k, v []byte) error {
			var r struct {
				State     runmodel.RunState `json:"state"`
				CreatedAt time.Time         `json:"created_at"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decoding run %s: %w", k, err)
			}
			if r.State.Terminal() {
				return nil
			}
			return ab.Put(k, []byte(r.CreatedAt.UTC().Format(time.RFC3339Nano)))
		})
	}},
	// 3: runbook specs stored once (runs written before keep theirs inline).
	{2, 3, func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bSpecs)
		return err
	}},
	// 4: the index of runs by thread.
	{3, 4, func(tx *bolt.Tx) error {
		tb, err := tx.CreateBucketIfNotExists(bByThread)
		if err != nil {
			return err
		}
		return tx.Bucket(bRuns).ForEach(func(k, v []byte) error {
			var r struct {
				Conversation chatmodel.Conversation `json:"conversation"`
				Root         chatmodel.MessageRef   `json:"root"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decoding run %s: %w", k, err)
			}
			for _, th := range []string{r.Conversation.Thread, r.Root.ID} {
				if th != "" {
					if err := tb.Put(threadKey(th, string(k)), nil); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}},
	// 5: the message index by run and the event ids by time (housekeeping
	// without a sweep of the store); entries of runs deleted before are
	// dropped.
	{4, 5, migrateIndexesByRunAndTime},
	// 6: the audit log indexed by run.
	{5, 6, func(tx *bolt.Tx) error {
		ar, err := tx.CreateBucketIfNotExists(bAuditByRun)
		if err != nil {
			return fmt.Errorf("creating bucket %q: %w", bAuditByRun, err)
		}
		return tx.Bucket(bAudit).ForEach(func(k, v []byte) error {
			var e struct {
				RunID string `json:"run_id"`
			}
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decoding audit entry %d: %w", binary.BigEndian.Uint64(k), err)
			}
			if e.RunID == "" {
				return nil
			}
			return ar.Put(auditRunKey(e.RunID, k), nil)
		})
	}},
	// 7: the runs indexed by runbook, target and state.
	{6, 7, migrateFilterIndexes},
}

// auditRunKey is the key of an audit entry (its 8-byte sequence number)
// in bAuditByRun.
func auditRunKey(runID string, seq []byte) []byte {
	return append(append(runKey(runID), 0), seq...)
}

// ErrTooNew is returned when the store was written by a newer groundcrew.
var ErrTooNew = errors.New("store schema is newer than this binary")

func (s *DB) migrate() error {
	return s.update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bMeta)
		if err != nil {
			return err
		}
		v := 0
		if raw := meta.Get([]byte("schema_version")); raw != nil {
			fmt.Sscanf(string(raw), "%d", &v)
		}
		if v > SchemaVersion {
			return fmt.Errorf("%w: store is version %d, binary supports %d", ErrTooNew, v, SchemaVersion)
		}
		for _, m := range migrations {
			if m.from != v {
				continue
			}
			if err := m.fn(tx); err != nil {
				return fmt.Errorf("migrating store from version %d to %d: %w", m.from, m.to, err)
			}
			v = m.to
		}
		return meta.Put([]byte("schema_version"), []byte(fmt.Sprint(v)))
	})
}

func u64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// runKey is the key of a run id: ids are lowercase, and a person may type
// them in any case (R-5FB1 finds r-5fb1).
func runKey(id string) []byte { return []byte(strings.ToLower(strings.TrimSpace(id))) }

func threadKey(thread, runID string) []byte {
	return []byte(thread + "\x00" + strings.ToLower(runID))
}

func msgKey(ref chatmodel.MessageRef) []byte {
	return []byte(ref.Platform + "\x00" + ref.Channel + "\x00" + ref.ID)
}

// CreateRun implements runmodel.Runs. It fails with runmodel.ErrExists if the id is taken.
func (s *DB) CreateRun(_ context.Context, r *runmodel.Run, b *runmodel.Batch) error {
	return s.update(func(tx *bolt.Tx) error {
		r.ID = strings.ToLower(r.ID)
		runs := tx.Bucket(bRuns)
		if runs.Get(runKey(r.ID)) != nil {
			return fmt.Errorf("run %s: %w", r.ID, runmodel.ErrExists)
		}
		if err := s.putRun(tx, r, nil); err != nil {
			return err
		}
		key := timeKey(r.CreatedAt, r.ID)
		byTime := tx.Bucket(bRunsByTime)
		byTime.FillPercent = appendFill
		if err := byTime.Put([]byte(key), []byte(r.ID)); err != nil {
			return err
		}
		return writeBatch(tx, r.ID, b)
	})
}

// storedRun is a run as stored: its spec by reference (SpecRef), or inline
// (Run.Spec) in runs written before schema version 3.
type storedRun struct {
	*runmodel.Run
	SpecRef string `json:"spec_ref,omitempty"`
}

func (s *DB) putRun(tx *bolt.Tx, r *runmodel.Run, was *indexed) error {
	if err := putIndexes(tx, indexedOf(r), was); err != nil {
		return fmt.Errorf("indexing run %s: %w", r.ID, err)
	}
	cp := *r
	st := storedRun{Run: &cp}
	if r.Spec != nil {
		ref, err := s.specs.put(tx, r.Spec)
		if err != nil {
			return fmt.Errorf("storing the runbook of run %s: %w", r.ID, err)
		}
		cp.Spec, st.SpecRef = nil, ref
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.ID, err)
	}
	if err := tx.Bucket(bRuns).Put(runKey(r.ID), data); err != nil {
		return err
	}
	for _, th := range []string{r.Conversation.Thread, r.Root.ID} {
		if th != "" {
			if err := tx.Bucket(bByThread).Put(threadKey(th, r.ID), nil); err != nil {
				return err
			}
		}
	}
	if r.State.Terminal() {
		return tx.Bucket(bActive).Delete(runKey(r.ID))
	}
	return tx.Bucket(bActive).Put(runKey(r.ID), []byte(r.CreatedAt.UTC().Format(time.RFC3339Nano)))
}

func (s *DB) getRun(tx *bolt.Tx, id string) (*runmodel.Run, error) {
	raw := tx.Bucket(bRuns).Get(runKey(id))
	if raw == nil {
		return nil, fmt.Errorf("run %s: %w", id, chatmodel.ErrNotFound)
	}
	st := storedRun{Run: &runmodel.Run{}}
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", id, err)
	}
	if st.SpecRef != "" {
		spec, err := s.specs.get(tx, st.SpecRef)
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", id, err)
		}
		st.Run.Spec = spec
	}
	return st.Run, nil
}

// UpdateRun implements runmodel.Runs.
func (s *DB) UpdateRun(_ context.Context, id string, fn func(*runmodel.Run, *runmodel.Batch) error) (*runmodel.Run, error) {
	var out *runmodel.Run
	err := s.update(func(tx *bolt.Tx) error {
		r, err := s.getRun(tx, id)
		if err != nil {
			return err
		}
		was := indexedOf(r)
		var b runmodel.Batch
		if err := fn(r, &b); err != nil {
			return err
		}
		if err := s.putRun(tx, r, &was); err != nil {
			return err
		}
		if err := writeBatch(tx, strings.ToLower(strings.TrimSpace(id)), &b); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}

func writeBatch(tx *bolt.Tx, runID string, b *runmodel.Batch) error {
	if b == nil {
		return nil
	}
	if len(b.Journal) > 0 {
		jb, err := tx.Bucket(bJournal).CreateBucketIfNotExists(runKey(runID))
		if err != nil {
			return fmt.Errorf("journal bucket for %s: %w", runID, err)
		}
		jb.FillPercent = appendFill
		for _, e := range b.Journal {
			seq, err := jb.NextSequence()
			if err != nil {
				return err
			}
			e.RunID, e.Seq = runID, seq
			data, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("encoding journal entry: %w", err)
			}
			if err := jb.Put(u64(seq), data); err != nil {
				return err
			}
		}
	}
	for _, e := range b.Audit {
		if e.RunID == "" {
			e.RunID = runID
		}
		if err := appendAudit(tx, e); err != nil {
			return err
		}
	}
	for _, m := range b.Messages {
		if m.Ref.IsZero() {
			continue
		}
		data, _ := json.Marshal(m)
		if err := tx.Bucket(bMessages).Put(msgKey(m.Ref), data); err != nil {
			return err
		}
		if m.RunID != "" {
			if err := tx.Bucket(bRunMessages).Put(runMessageKey(m.RunID, msgKey(m.Ref)), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// GetRun implements runmodel.Runs.
func (s *DB) GetRun(_ context.Context, id string) (*runmodel.Run, error) {
	var r *runmodel.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		r, err = s.getRun(tx, id)
		return err
	})
	return r, err
}

// timeKey is a run's key in bRunsByTime: the listing order (most recent
// first is the reverse key order).
func timeKey(created time.Time, id string) string {
	return created.UTC().Format(time.RFC3339) + "|" + strings.ToLower(id)
}

// runMatches reports whether r is selected by the filters of q other than
// Limit and After.
func runMatches(r *runmodel.Run, q runmodel.RunQuery) bool {
	switch {
	case q.Active && r.State.Terminal():
		return false
	case q.Thread != "" && r.Conversation.Thread != q.Thread && r.Root.ID != q.Thread:
		return false
	case !q.Since.IsZero() && r.CreatedAt.Before(q.Since.Truncate(time.Second)):
		return false
	case q.Runbook != "" && r.Runbook != q.Runbook:
		return false
	case q.Target != "" && r.Target != q.Target:
		return false
	case len(q.States) > 0 && !slices.Contains(q.States, r.State):
		return false
	}
	return true
}

// ListRuns implements runmodel.Runs; most recent first. A query for active runs
// reads only the index of active runs, one for a thread the thread index,
// one filtered by runbook, target or one state the indexes of those
// (listIndexed); the others walk the runs by time from q.After on,
// decoding each run once and stopping at q.Since or q.Limit.
func (s *DB) ListRuns(_ context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error) {
	var out []*runmodel.Run
	if q.Active {
		return s.listActive(q)
	}
	if q.Thread != "" {
		return s.listThread(q)
	}
	if ix := filterIndexes(q); len(ix) > 0 {
		return s.listIndexed(q, ix)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bRunsByTime).Cursor()
		k, v := c.Last()
		if q.After.ID != "" {
			after := []byte(timeKey(q.After.CreatedAt, q.After.ID))
			if k, _ = c.Seek(after); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev() // the first key before after
			}
		}
		for ; k != nil; k, v = c.Prev() {
			if !q.Since.IsZero() {
				ts, _, _ := strings.Cut(string(k), "|")
				if t, err := time.Parse(time.RFC3339, ts); err == nil && t.Before(q.Since.Truncate(time.Second)) {
					break
				}
			}
			r, err := s.getRun(tx, string(v))
			if errors.Is(err, chatmodel.ErrNotFound) {
				continue // an index entry left behind
			}
			if err != nil {
				return err
			}
			if !runMatches(r, q) {
				continue
			}
			out = append(out, r)
			if q.Limit > 0 && len(out) >= q.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// listThread reads the runs of one thread through the thread index.
func (s *DB) listThread(q runmodel.RunQuery) ([]*runmodel.Run, error) {
	var out []*runmodel.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		prefix := []byte(q.Thread + "\x00")
		c := tx.Bucket(bByThread).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			r, err := s.getRun(tx, string(k[len(prefix):]))
			if errors.Is(err, chatmodel.ErrNotFound) {
				continue // deleted by retention
			}
			if err != nil {
				return err
			}
			if runMatches(r, q) {
				out = append(out, r)
			}
		}
		return nil
	})
	return recentFirst(out, q), err
}

// recentFirst sorts runs most recent first (the order of the runs by
// time), keeps those after q.After and the first q.Limit of them (all when
// it is 0).
func recentFirst(out []*runmodel.Run, q runmodel.RunQuery) []*runmodel.Run {
	keys := make(map[*runmodel.Run]string, len(out))
	for _, r := range out {
		keys[r] = timeKey(r.CreatedAt, r.ID)
	}
	sort.SliceStable(out, func(i, j int) bool { return keys[out[i]] > keys[out[j]] })
	if q.After.ID != "" {
		after := timeKey(q.After.CreatedAt, q.After.ID)
		i := sort.Search(len(out), func(i int) bool { return keys[out[i]] < after })
		out = out[i:]
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (s *DB) listActive(q runmodel.RunQuery) ([]*runmodel.Run, error) {
	var out []*runmodel.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bActive).ForEach(func(k, _ []byte) error {
			r, err := s.getRun(tx, string(k))
			if err != nil {
				return err
			}
			if runMatches(r, q) {
				out = append(out, r)
			}
			return nil
		})
	})
	return recentFirst(out, q), err
}

// RunByMessage implements runmodel.Runs.
func (s *DB) RunByMessage(_ context.Context, ref chatmodel.MessageRef) (runmodel.MessageIndex, error) {
	var m runmodel.MessageIndex
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bMessages).Get(msgKey(ref))
		if raw == nil {
			return fmt.Errorf("message %s: %w", ref.ID, chatmodel.ErrNotFound)
		}
		return json.Unmarshal(raw, &m)
	})
	return m, err
}

// Journal implements runmodel.Journals.
func (s *DB) Journal(_ context.Context, runID string) ([]runmodel.JournalEntry, error) {
	var out []runmodel.JournalEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		jb := tx.Bucket(bJournal).Bucket(runKey(runID))
		if jb == nil {
			return nil
		}
		return jb.ForEach(func(_, v []byte) error {
			var e runmodel.JournalEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decoding journal of %s: %w", runID, err)
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// auditHash is the hash of an entry: it covers every field but Hash itself,
// including Prev, so editing or deleting any entry breaks the chain.
func auditHash(e runmodel.AuditEntry) string {
	e.Hash = ""
	data, _ := json.Marshal(e)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// appendFill is how full bbolt packs the pages of buckets written in key
// order (audit log, journals, runs by time): nearly full, since nothing is
// inserted between existing keys (bbolt's default of half-full pages
// doubles the file for append-only data).
const appendFill = 0.95

func appendAudit(tx *bolt.Tx, e runmodel.AuditEntry) error {
	ab := tx.Bucket(bAudit)
	ab.FillPercent = appendFill
	prev := ""
	if k, v := ab.Cursor().Last(); k != nil {
		var last runmodel.AuditEntry
		if err := json.Unmarshal(v, &last); err != nil {
			return fmt.Errorf("decoding last audit entry: %w", err)
		}
		prev = last.Hash
	}
	seq, err := ab.NextSequence()
	if err != nil {
		return err
	}
	e.Seq, e.Prev = seq, prev
	e.Time = e.Time.UTC()
	e.Hash = auditHash(e)
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := ab.Put(u64(seq), data); err != nil {
		return err
	}
	if e.RunID == "" {
		return nil
	}
	ar := tx.Bucket(bAuditByRun)
	ar.FillPercent = appendFill
	return ar.Put(auditRunKey(e.RunID, u64(seq)), nil)
}

// AppendAudit implements runmodel.Journals.
func (s *DB) AppendAudit(_ context.Context, e runmodel.AuditEntry) error {
	return s.update(func(tx *bolt.Tx) error { return appendAudit(tx, e) })
}

// AuditEntries implements runmodel.Journals: the audit entries of one run
// (through the index by run), or all of them when runID is empty.
func (s *DB) AuditEntries(_ context.Context, runID string) ([]runmodel.AuditEntry, error) {
	var out []runmodel.AuditEntry
	decode := func(v []byte) error {
		var e runmodel.AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("decoding audit entry: %w", err)
		}
		out = append(out, e)
		return nil
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		ab := tx.Bucket(bAudit)
		if runID == "" {
			return ab.ForEach(func(_, v []byte) error { return decode(v) })
		}
		prefix := append(runKey(runID), 0)
		c := tx.Bucket(bAuditByRun).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			v := ab.Get(k[len(prefix):])
			if v == nil {
				return fmt.Errorf("audit entry %d of run %s: %w", binary.BigEndian.Uint64(k[len(prefix):]), runID, ErrAuditTampered)
			}
			if err := decode(v); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// AuditAfter returns up to limit audit entries after sequence number seq,
// in order: the audit log a page at a time (audit export), each page its
// own short read.
func (s *DB) AuditAfter(_ context.Context, seq uint64, limit int) ([]runmodel.AuditEntry, error) {
	var out []runmodel.AuditEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bAudit).Cursor()
		for k, v := c.Seek(u64(seq + 1)); k != nil && len(out) < limit; k, v = c.Next() {
			var e runmodel.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("%w: entry %d is not valid JSON", ErrAuditTampered, binary.BigEndian.Uint64(k))
			}
			out = append(out, e)
		}
		return nil
	})
	return out, err
}

// ErrAuditTampered is returned by VerifyAudit when the chain is broken.
var ErrAuditTampered = errors.New("audit log chain is broken")

// VerifyAudit walks the audit chain and reports the first entry that was
// edited, deleted or reordered. It returns the number of entries checked.
func (s *DB) VerifyAudit(_ context.Context) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		prev := ""
		var want uint64 = 1
		return tx.Bucket(bAudit).ForEach(func(k, v []byte) error {
			var e runmodel.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("%w: entry %d is not valid JSON", ErrAuditTampered, binary.BigEndian.Uint64(k))
			}
			key := binary.BigEndian.Uint64(k)
			switch {
			case key != want || e.Seq != key:
				return fmt.Errorf("%w: entry %d missing or out of order (found %d)", ErrAuditTampered, want, e.Seq)
			case e.Prev != prev:
				return fmt.Errorf("%w: entry %d does not follow entry %d (an entry was deleted or edited)", ErrAuditTampered, e.Seq, e.Seq-1)
			case auditHash(e) != e.Hash:
				return fmt.Errorf("%w: entry %d was edited (hash mismatch)", ErrAuditTampered, e.Seq)
			}
			prev, want = e.Hash, want+1
			n++
			return nil
		})
	})
	return n, err
}

// SeenEvent implements runmodel.Dedupe. Old ids are dropped as new ones arrive.
func (s *DB) SeenEvent(_ context.Context, id string, now time.Time) (bool, error) {
	seen := false
	err := s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvents)
		if b.Get([]byte(id)) != nil {
			seen = true
			return nil
		}
		if err := b.Put([]byte(id), []byte(now.UTC().Format(time.RFC3339))); err != nil {
			return err
		}
		return tx.Bucket(bEventsByTime).Put(eventTimeKey(now, id), nil)
	})
	return seen, err
}

// PutOutbox implements runmodel.Outbox.
func (s *DB) PutOutbox(_ context.Context, it runmodel.OutboxItem) error {
	data, err := json.Marshal(it)
	if err != nil {
		return err
	}
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bOutbox).Put([]byte(it.ID), data) })
}

// ListOutbox implements runmodel.Outbox, oldest first.
func (s *DB) ListOutbox(_ context.Context) ([]runmodel.OutboxItem, error) {
	var out []runmodel.OutboxItem
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bOutbox).ForEach(func(_, v []byte) error {
			var it runmodel.OutboxItem
			if err := json.Unmarshal(v, &it); err != nil {
				return err
			}
			out = append(out, it)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// DeleteOutbox implements runmodel.Outbox.
func (s *DB) DeleteOutbox(_ context.Context, id string) error {
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bOutbox).Delete([]byte(id)) })
}

// GetKV reads a small value from the kv bucket (schedules, caches).
func (s *DB) GetKV(_ context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bKV).Get([]byte(key)); v != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	return out, err
}

// PutKV writes a small value to the kv bucket.
func (s *DB) PutKV(_ context.Context, key string, value []byte) error {
	return s.update(func(tx *bolt.Tx) error { return tx.Bucket(bKV).Put([]byte(key), value) })
}

// Usage reports the file size and the bytes in use by the data (pages up
// to the high-water mark, less the free pages); the difference is space
// bbolt preallocated or freed, reused by later writes.
func (s *DB) Usage() (file, used int64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		st := s.db.Stats()
		used = tx.Size() - int64(st.FreePageN+st.PendingPageN)*int64(s.db.Info().PageSize)
		return nil
	})
	if fi, serr := os.Stat(s.db.Path()); serr == nil {
		file = fi.Size()
	} else if err == nil {
		err = serr
	}
	return file, used, err
}
