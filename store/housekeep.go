package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// A housekeeping pass deletes in batches, each its own write transaction,
// so a vote, a run update or an outbox write waits for one batch at most,
// never for the whole pass. A batch ends as soon as another write waits for
// the writer (then it waits for this batch's commit only), after batchItems
// deletions, or once its work and the commit it will take (as long as the
// last one took) come to batchTime, whichever comes first; it always has
// minBatchWork, so a slow disk makes batches small, not empty.
const (
	batchItems   = 500
	batchTime    = 3 * time.Millisecond
	minBatchWork = time.Millisecond
	// batchPause is left between two batches, for the writes waiting.
	batchPause = time.Millisecond
)

func runMessageKey(runID string, msg []byte) []byte {
	k := make([]byte, 0, len(runID)+1+len(msg))
	k = append(k, runKey(runID)...)
	k = append(k, 0)
	return append(k, msg...)
}

func eventTimeKey(t time.Time, id string) []byte {
	k := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(k, uint64(max(t.Unix(), 0)))
	return append(k, id...)
}

// migrateIndexesByRunAndTime builds bRunMessages and bEventsByTime
// (schema 5). Message index entries of runs already deleted are dropped.
func migrateIndexesByRunAndTime(tx *bolt.Tx) error {
	rm, err := tx.CreateBucketIfNotExists(bRunMessages)
	if err != nil {
		return fmt.Errorf("creating bucket %q: %w", bRunMessages, err)
	}
	et, err := tx.CreateBucketIfNotExists(bEventsByTime)
	if err != nil {
		return fmt.Errorf("creating bucket %q: %w", bEventsByTime, err)
	}
	msgs, runs := tx.Bucket(bMessages), tx.Bucket(bRuns)
	var dead [][]byte
	if err := msgs.ForEach(func(k, v []byte) error {
		var m struct {
			RunID string `json:"run_id"`
		}
		if json.Unmarshal(v, &m) != nil || m.RunID == "" {
			return nil
		}
		if runs.Get(runKey(m.RunID)) == nil {
			dead = append(dead, append([]byte(nil), k...))
			return nil
		}
		return rm.Put(runMessageKey(m.RunID, k), nil)
	}); err != nil {
		return err
	}
	for _, k := range dead {
		if err := msgs.Delete(k); err != nil {
			return err
		}
	}
	return tx.Bucket(bEvents).ForEach(func(k, v []byte) error {
		t, _ := time.Parse(time.RFC3339, string(v)) // unreadable: forgotten at the next pass
		return et.Put(eventTimeKey(t, string(k)), nil)
	})
}

// Housekeep implements runmodel.Housekeeper: it forgets inbound event ids older
// than the event TTL and deletes finished runs (with their journal, thread
// and message index entries) that finished more than the retention ago.
// The audit log is kept whole, so the chain still verifies. It reads only
// what it deletes (through the indexes by time and by run), in batches of
// a few milliseconds each.
func (s *DB) Housekeep(ctx context.Context, now time.Time) (runmodel.HousekeepResult, error) {
	var res runmodel.HousekeepResult
	commit := batchTime / 2 // how long the last batch's commit took
	// batch runs fn in one write transaction, timed; between two batches
	// the writes waiting go first.
	batch := func(fn func(tx *bolt.Tx, stop func() bool) error) error {
		if res.Batches > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(batchPause):
			}
		}
		start := time.Now()
		var worked time.Duration
		err := s.update(func(tx *bolt.Tx) error {
			deadline := time.Now().Add(max(batchTime-commit, minBatchWork))
			err := fn(tx, func() bool { return s.waiting.Load() > 0 || time.Now().After(deadline) })
			worked = time.Since(start)
			return err
		})
		took := time.Since(start)
		commit = took - worked
		res.Batches++
		res.WriterTime += took
		res.LongestBatch = max(res.LongestBatch, took)
		return err
	}
	ttlCutoff := now.Add(-s.eventTTL)
	for {
		due := false
		if err := s.db.View(func(tx *bolt.Tx) error {
			k, _ := tx.Bucket(bEventsByTime).Cursor().First()
			due = len(k) >= 8 && binary.BigEndian.Uint64(k[:8]) < uint64(max(ttlCutoff.Unix(), 0))
			return nil
		}); err != nil {
			return res, fmt.Errorf("listing event ids seen before %s: %w", ttlCutoff.Format(time.RFC3339), err)
		}
		if !due {
			break
		}
		n := 0
		if err := batch(func(tx *bolt.Tx, stop func() bool) (err error) {
			n, err = forgetEvents(tx, ttlCutoff, stop)
			return err
		}); err != nil {
			return res, fmt.Errorf("forgetting event ids seen before %s: %w", ttlCutoff.Format(time.RFC3339), err)
		}
		res.Events += n
	}
	cutoff := now.Add(-s.retention)
	var after []byte // the runs-by-time key to list from
	for {
		var cands []candidate
		if err := s.db.View(func(tx *bolt.Tx) error {
			var err error
			cands, after, err = expired(tx, cutoff, after)
			return err
		}); err != nil {
			return res, fmt.Errorf("listing runs finished before %s: %w", cutoff.Format(time.RFC3339), err)
		}
		for len(cands) > 0 {
			var runs, msgs, done int
			if err := batch(func(tx *bolt.Tx, stop func() bool) (err error) {
				runs, msgs, done, err = pruneRuns(tx, cands, cutoff, stop)
				return err
			}); err != nil {
				return res, fmt.Errorf("deleting runs finished before %s: %w", cutoff.Format(time.RFC3339), err)
			}
			res.Runs, res.Messages, cands = res.Runs+runs, res.Messages+msgs, cands[done:]
		}
		if after == nil {
			return res, nil
		}
	}
}

// forgetEvents deletes event ids first seen before cutoff, oldest first,
// until stop says so or batchItems.
func forgetEvents(tx *bolt.Tx, cutoff time.Time, stop func() bool) (n int, err error) {
	byTime, events := tx.Bucket(bEventsByTime), tx.Bucket(bEvents)
	limit := uint64(max(cutoff.Unix(), 0))
	c := byTime.Cursor()
	for k, _ := c.First(); len(k) >= 8 && binary.BigEndian.Uint64(k[:8]) < limit; k, _ = c.First() {
		if n >= batchItems || (n > 0 && stop()) {
			return n, nil
		}
		id := append([]byte(nil), k[8:]...)
		if err := c.Delete(); err != nil {
			return n, err
		}
		if err := events.Delete(id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// runEnd is what housekeeping reads of a run: enough to decide and to
// find its index entries, not the whole run.
type runEnd struct {
	ID           string            `json:"id"`
	Runbook      string            `json:"runbook"`
	Target       string            `json:"target"`
	CreatedAt    time.Time         `json:"created_at"`
	State        runmodel.RunState `json:"state"`
	UpdatedAt    time.Time         `json:"updated_at"`
	FinishedAt   time.Time         `json:"finished_at"`
	Conversation struct {
		Thread string `json:"thread"`
	} `json:"conversation"`
	Root struct {
		ID string `json:"id"`
	} `json:"root"`
}

// candidate is a run housekeeping will delete: its runs-by-time key and
// id, and the run as it was listed (raw nil: a dangling index entry).
type candidate struct {
	key, id, raw []byte
	end          runEnd
}

// expired lists, in a read transaction (which does not hold up writers),
// up to batchItems finished runs that finished before cutoff, in the order
// they were created, from the runs-by-time key after on. next is the key to
// list from for more (nil: there are no others).
func expired(tx *bolt.Tx, cutoff time.Time, after []byte) (out []candidate, next []byte, err error) {
	c := tx.Bucket(bRunsByTime).Cursor()
	k, v := c.First()
	if after != nil {
		k, v = c.Seek(after)
	}
	for ; k != nil; k, v = c.Next() {
		ts, _, _ := strings.Cut(string(k), "|")
		if t, err := time.Parse(time.RFC3339, ts); err == nil && !t.Before(cutoff) {
			return out, nil, nil // created after the cutoff: finished after it too
		}
		if len(out) >= batchItems {
			return out, append([]byte(nil), k...), nil
		}
		cd := candidate{key: append([]byte(nil), k...), id: append([]byte(nil), v...)}
		if raw := tx.Bucket(bRuns).Get(runKey(string(v))); raw != nil {
			if err := json.Unmarshal(raw, &cd.end); err != nil {
				return nil, nil, fmt.Errorf("decoding run %s: %w", v, err)
			}
			if !expiredRun(cd.end, cutoff) {
				continue
			}
			cd.raw = append([]byte(nil), raw...)
		} // else: a dangling index entry, deleted too
		out = append(out, cd)
	}
	return out, nil, nil
}

func expiredRun(r runEnd, cutoff time.Time) bool {
	end := r.FinishedAt
	if end.IsZero() {
		end = r.UpdatedAt
	}
	return r.State.Terminal() && end.Before(cutoff)
}

// pruneRuns deletes the candidates, in one write transaction, until
// stop says so; done is how many it went through.
func pruneRuns(tx *bolt.Tx, cands []candidate, cutoff time.Time, stop func() bool) (runs, msgs, done int, err error) {
	byTime := tx.Bucket(bRunsByTime)
	for _, cd := range cands {
		if done > 0 && stop() {
			return runs, msgs, done, nil
		}
		done++
		raw := tx.Bucket(bRuns).Get(runKey(string(cd.id)))
		if raw == nil {
			if err := byTime.Delete(cd.key); err != nil {
				return runs, msgs, done, err
			}
			continue
		}
		// Unchanged since it was listed (the usual case): what was decoded
		// then holds, and the writer is not held up decoding it again.
		r := cd.end
		if !bytes.Equal(raw, cd.raw) {
			r = runEnd{}
			if err := json.Unmarshal(raw, &r); err != nil {
				return runs, msgs, done, fmt.Errorf("decoding run %s: %w", cd.id, err)
			}
			if !expiredRun(r, cutoff) {
				continue // changed since it was listed
			}
		}
		if err := byTime.Delete(cd.key); err != nil {
			return runs, msgs, done, err
		}
		n, err := deleteRun(tx, string(cd.id), r)
		if err != nil {
			return runs, msgs, done, fmt.Errorf("deleting run %s: %w", cd.id, err)
		}
		runs, msgs = runs+1, msgs+n
	}
	return runs, msgs, done, nil
}

// deleteRun deletes a run and its journal, thread, filter and message
// index entries; it returns how many message references it deleted.
func deleteRun(tx *bolt.Tx, id string, r runEnd) (int, error) {
	if err := tx.Bucket(bRuns).Delete(runKey(id)); err != nil {
		return 0, err
	}
	if err := tx.Bucket(bActive).Delete(runKey(id)); err != nil {
		return 0, err
	}
	if err := deleteIndexes(tx, indexed{ID: strings.ToLower(id), Runbook: r.Runbook, Target: r.Target, State: r.State, CreatedAt: r.CreatedAt}); err != nil {
		return 0, err
	}
	for _, th := range []string{r.Conversation.Thread, r.Root.ID} {
		if th != "" {
			if err := tx.Bucket(bByThread).Delete(threadKey(th, id)); err != nil {
				return 0, err
			}
		}
	}
	if tx.Bucket(bJournal).Bucket(runKey(id)) != nil {
		if err := tx.Bucket(bJournal).DeleteBucket(runKey(id)); err != nil {
			return 0, err
		}
	}
	rm, msgs := tx.Bucket(bRunMessages), tx.Bucket(bMessages)
	prefix := runMessageKey(id, nil)
	n := 0
	c := rm.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		mk := append([]byte(nil), k[len(prefix):]...)
		if err := c.Delete(); err != nil {
			return n, err
		}
		// The reference is the run's unless a later run took it over.
		var m struct {
			RunID string `json:"run_id"`
		}
		if raw := msgs.Get(mk); raw != nil && json.Unmarshal(raw, &m) == nil && strings.EqualFold(m.RunID, id) {
			if err := msgs.Delete(mk); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}
