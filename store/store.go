// Package store keeps groundcrew's state in one bbolt file: runs, their
// step journal, approvals (inside runs), the hash-chained audit log, inbound
// event ids for de-duplication, the chat outbox and digest history.
//
// Every method is one transaction. Values are JSON with string enums; the
// schema version lives in the meta bucket and migrations are append-only.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/groundcrew/groundcrew/bot"
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
)

var allBuckets = [][]byte{bMeta, bRuns, bRunsByTime, bJournal, bAudit, bMessages, bEvents, bOutbox, bDigests, bKV}

// SchemaVersion is the version this binary writes.
const SchemaVersion = 1

// Options configure Open.
type Options struct {
	// Timeout bounds the wait for the file lock (default 1s).
	Timeout time.Duration
	// EventTTL is how long inbound event ids are remembered (default 7 days).
	EventTTL time.Duration
}

// DB is the bbolt store. It implements bot.Store and is safe for concurrent use.
type DB struct {
	db       *bolt.DB
	eventTTL time.Duration
}

var _ bot.Store = (*DB)(nil)

// Open opens (creating if needed) the store at path. It fails with an error
// wrapping bot.ErrLocked when another process holds the file.
func Open(path string, opts Options) (*DB, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.EventTTL <= 0 {
		opts.EventTTL = 7 * 24 * time.Hour
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating store directory %s: %w", dir, err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.Timeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("opening store %s: %w (is another groundcrew running with this store?)", path, bot.ErrLocked)
		}
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	s := &DB{db: db, eventTTL: opts.EventTTL}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	return s, nil
}

// Close closes the store.
func (s *DB) Close() error { return s.db.Close() }

// Path returns the file path.
func (s *DB) Path() string { return s.db.Path() }

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
}

// ErrTooNew is returned when the store was written by a newer groundcrew.
var ErrTooNew = errors.New("store schema is newer than this binary")

func (s *DB) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
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

func msgKey(ref bot.MessageRef) []byte {
	return []byte(ref.Platform + "\x00" + ref.Channel + "\x00" + ref.ID)
}

// CreateRun implements bot.Runs. It fails with bot.ErrExists if the id is taken.
func (s *DB) CreateRun(_ context.Context, r *bot.Run, b *bot.Batch) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		runs := tx.Bucket(bRuns)
		if runs.Get([]byte(r.ID)) != nil {
			return fmt.Errorf("run %s: %w", r.ID, bot.ErrExists)
		}
		if err := putRun(tx, r); err != nil {
			return err
		}
		key := r.CreatedAt.UTC().Format(time.RFC3339) + "|" + r.ID
		if err := tx.Bucket(bRunsByTime).Put([]byte(key), []byte(r.ID)); err != nil {
			return err
		}
		return writeBatch(tx, r.ID, b)
	})
}

func putRun(tx *bolt.Tx, r *bot.Run) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.ID, err)
	}
	return tx.Bucket(bRuns).Put([]byte(r.ID), data)
}

func getRun(tx *bolt.Tx, id string) (*bot.Run, error) {
	raw := tx.Bucket(bRuns).Get([]byte(id))
	if raw == nil {
		return nil, fmt.Errorf("run %s: %w", id, bot.ErrNotFound)
	}
	var r bot.Run
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decoding run %s: %w", id, err)
	}
	return &r, nil
}

// UpdateRun implements bot.Runs.
func (s *DB) UpdateRun(_ context.Context, id string, fn func(*bot.Run, *bot.Batch) error) (*bot.Run, error) {
	var out *bot.Run
	err := s.db.Update(func(tx *bolt.Tx) error {
		r, err := getRun(tx, id)
		if err != nil {
			return err
		}
		var b bot.Batch
		if err := fn(r, &b); err != nil {
			return err
		}
		if err := putRun(tx, r); err != nil {
			return err
		}
		if err := writeBatch(tx, id, &b); err != nil {
			return err
		}
		out = r
		return nil
	})
	return out, err
}

func writeBatch(tx *bolt.Tx, runID string, b *bot.Batch) error {
	if b == nil {
		return nil
	}
	if len(b.Journal) > 0 {
		jb, err := tx.Bucket(bJournal).CreateBucketIfNotExists([]byte(runID))
		if err != nil {
			return fmt.Errorf("journal bucket for %s: %w", runID, err)
		}
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
	}
	return nil
}

// GetRun implements bot.Runs.
func (s *DB) GetRun(_ context.Context, id string) (*bot.Run, error) {
	var r *bot.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		r, err = getRun(tx, id)
		return err
	})
	return r, err
}

// ListRuns implements bot.Runs; most recent first.
func (s *DB) ListRuns(_ context.Context, q bot.RunQuery) ([]*bot.Run, error) {
	var out []*bot.Run
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bRunsByTime).Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if !q.Since.IsZero() {
				ts, _, _ := strings.Cut(string(k), "|")
				if t, err := time.Parse(time.RFC3339, ts); err == nil && t.Before(q.Since.Truncate(time.Second)) {
					break
				}
			}
			r, err := getRun(tx, string(v))
			if err != nil {
				return err
			}
			if q.Active && r.State.Terminal() {
				continue
			}
			if q.Thread != "" && r.Conversation.Thread != q.Thread && r.Root.ID != q.Thread {
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

// RunByMessage implements bot.Runs.
func (s *DB) RunByMessage(_ context.Context, ref bot.MessageRef) (bot.MessageIndex, error) {
	var m bot.MessageIndex
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bMessages).Get(msgKey(ref))
		if raw == nil {
			return fmt.Errorf("message %s: %w", ref.ID, bot.ErrNotFound)
		}
		return json.Unmarshal(raw, &m)
	})
	return m, err
}

// Journal implements bot.Journals.
func (s *DB) Journal(_ context.Context, runID string) ([]bot.JournalEntry, error) {
	var out []bot.JournalEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		jb := tx.Bucket(bJournal).Bucket([]byte(runID))
		if jb == nil {
			return nil
		}
		return jb.ForEach(func(_, v []byte) error {
			var e bot.JournalEntry
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
func auditHash(e bot.AuditEntry) string {
	e.Hash = ""
	data, _ := json.Marshal(e)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func appendAudit(tx *bolt.Tx, e bot.AuditEntry) error {
	ab := tx.Bucket(bAudit)
	prev := ""
	if k, v := ab.Cursor().Last(); k != nil {
		var last bot.AuditEntry
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
	return ab.Put(u64(seq), data)
}

// AppendAudit implements bot.Journals.
func (s *DB) AppendAudit(_ context.Context, e bot.AuditEntry) error {
	return s.db.Update(func(tx *bolt.Tx) error { return appendAudit(tx, e) })
}

// AuditEntries implements bot.Journals: the audit entries of one run, or all
// of them when runID is empty.
func (s *DB) AuditEntries(_ context.Context, runID string) ([]bot.AuditEntry, error) {
	var out []bot.AuditEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bAudit).ForEach(func(_, v []byte) error {
			var e bot.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if runID == "" || e.RunID == runID {
				out = append(out, e)
			}
			return nil
		})
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
			var e bot.AuditEntry
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

// SeenEvent implements bot.Dedupe. Old ids are dropped as new ones arrive.
func (s *DB) SeenEvent(_ context.Context, id string, now time.Time) (bool, error) {
	seen := false
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvents)
		if b.Get([]byte(id)) != nil {
			seen = true
			return nil
		}
		return b.Put([]byte(id), []byte(now.UTC().Format(time.RFC3339)))
	})
	return seen, err
}

// GCEvents forgets event ids older than the TTL; it returns how many.
func (s *DB) GCEvents(now time.Time) (int, error) {
	n := 0
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bEvents)
		var old [][]byte
		_ = b.ForEach(func(k, v []byte) error {
			if t, err := time.Parse(time.RFC3339, string(v)); err == nil && now.Sub(t) > s.eventTTL {
				old = append(old, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range old {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(old)
		return nil
	})
	return n, err
}

// PutOutbox implements bot.Outbox.
func (s *DB) PutOutbox(_ context.Context, it bot.OutboxItem) error {
	data, err := json.Marshal(it)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bOutbox).Put([]byte(it.ID), data) })
}

// ListOutbox implements bot.Outbox, oldest first.
func (s *DB) ListOutbox(_ context.Context) ([]bot.OutboxItem, error) {
	var out []bot.OutboxItem
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bOutbox).ForEach(func(_, v []byte) error {
			var it bot.OutboxItem
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

// DeleteOutbox implements bot.Outbox.
func (s *DB) DeleteOutbox(_ context.Context, id string) error {
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bOutbox).Delete([]byte(id)) })
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
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bKV).Put([]byte(key), value) })
}
