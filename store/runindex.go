package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// The indexes of runs by runbook, target and state. Each key is the
// value, NUL, and the run's runs-by-time key (creation second, "|", id):
// within one value the keys are in the listing's order, so a listing
// filtered by one of them walks its index backwards from q.After, and one
// filtered by several walks them together (listIndexed), reading only the
// runs every filter selects.

// indexed is what the filter indexes of a run are made of.
type indexed struct {
	ID, Runbook, Target string
	State               runmodel.RunState
	CreatedAt           time.Time
}

func indexedOf(r *runmodel.Run) indexed {
	return indexed{ID: r.ID, Runbook: r.Runbook, Target: r.Target, State: r.State, CreatedAt: r.CreatedAt}
}

func filterKey(value, timeKey string) []byte {
	return []byte(value + "\x00" + timeKey)
}

// filterEntries are the run's entries in the three indexes.
func (x indexed) entries() [3]struct {
	bucket []byte
	key    []byte
} {
	tk := timeKey(x.CreatedAt, x.ID)
	return [3]struct {
		bucket []byte
		key    []byte
	}{
		{bRunsByRunbook, filterKey(x.Runbook, tk)},
		{bRunsByTarget, filterKey(x.Target, tk)},
		{bRunsByState, filterKey(string(x.State), tk)},
	}
}

// putIndexes writes the entries of now, and deletes those of was (the
// run before the change; nil for a new run) that changed: a run update
// that changes neither state, runbook nor target writes no index.
func putIndexes(tx *bolt.Tx, now indexed, was *indexed) error {
	next := now.entries()
	var prev [3]struct {
		bucket []byte
		key    []byte
	}
	if was != nil {
		prev = was.entries()
	}
	for i, e := range next {
		if was != nil && bytes.Equal(prev[i].key, e.key) {
			continue
		}
		b := tx.Bucket(e.bucket)
		if was != nil {
			if err := b.Delete(prev[i].key); err != nil {
				return err
			}
		}
		if err := b.Put(e.key, nil); err != nil {
			return err
		}
	}
	return nil
}

// deleteIndexes deletes the entries of x.
func deleteIndexes(tx *bolt.Tx, x indexed) error {
	for _, e := range x.entries() {
		if err := tx.Bucket(e.bucket).Delete(e.key); err != nil {
			return err
		}
	}
	return nil
}

// migrateFilterIndexes builds the indexes of the runs stored (schema 7).
// It walks the runs by time (their keys are the indexes' suffixes) and
// reads of each run only the fields before its steps (leadFields); the
// keys are put in key order, each index at once: bbolt inserts into one
// growing node until the commit, where keys out of order would each move
// the ones after them (7 minutes at 100,000 runs, against seconds).
func migrateFilterIndexes(tx *bolt.Tx) error {
	names := [][]byte{bRunsByRunbook, bRunsByTarget, bRunsByState}
	for _, name := range names {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("creating bucket %q: %w", name, err)
		}
	}
	runs := tx.Bucket(bRuns)
	keys := make([][][]byte, len(names))
	if err := tx.Bucket(bRunsByTime).ForEach(func(tk, id []byte) error {
		raw := runs.Get(runKey(string(id)))
		if raw == nil {
			return nil // an index entry left behind
		}
		f, err := leadFields(raw)
		if err != nil {
			return fmt.Errorf("decoding run %s: %w", id, err)
		}
		for i, v := range []string{f.Runbook, f.Target, string(f.State)} {
			keys[i] = append(keys[i], filterKey(v, string(tk)))
		}
		return nil
	}); err != nil {
		return err
	}
	for i, name := range names {
		slices.SortFunc(keys[i], bytes.Compare)
		b := tx.Bucket(name)
		for _, k := range keys[i] {
			if err := b.Put(k, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// runLead is what the filter indexes need of a stored run.
type runLead struct {
	Runbook, Target string
	State           runmodel.RunState
}

// leadFields reads a stored run's runbook, target and state, stopping
// there: they come before its steps and its runbook, the bulk of it.
func leadFields(raw []byte) (runLead, error) {
	var f runLead
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return f, fmt.Errorf("not a JSON object: %v", err)
	}
	found := 0
	for found < 3 && dec.More() {
		t, err := dec.Token()
		if err != nil {
			return f, err
		}
		var dst any
		switch t {
		case "runbook":
			dst = &f.Runbook
		case "target":
			dst = &f.Target
		case "state":
			dst = &f.State
		default:
			dst = &json.RawMessage{}
			found--
		}
		if err := dec.Decode(dst); err != nil {
			return f, err
		}
		found++
	}
	return f, nil
}

// filterIndex is one filter a listing can walk an index for: the bucket
// and the prefix of its matching keys.
type filterIndex struct {
	bucket []byte
	prefix []byte
}

// filterIndexes are the indexes q can be listed through: its runbook, its
// target, its state when it asks for one (the finished runs of any state,
// the index's usual question, are most runs: walking the runs by time is
// as good).
func filterIndexes(q runmodel.RunQuery) []filterIndex {
	var out []filterIndex
	if q.Runbook != "" {
		out = append(out, filterIndex{bRunsByRunbook, []byte(q.Runbook + "\x00")})
	}
	if q.Target != "" {
		out = append(out, filterIndex{bRunsByTarget, []byte(q.Target + "\x00")})
	}
	if len(q.States) == 1 {
		out = append(out, filterIndex{bRunsByState, []byte(string(q.States[0]) + "\x00")})
	}
	return out
}

// indexWalk walks one index backwards (most recent first) through the
// keys of its prefix; at is the current key's runs-by-time key, "" once
// past the last.
type indexWalk struct {
	c      *bolt.Cursor
	prefix []byte
	at     string
}

// seek moves to the last key at or before tk (before it when strictly).
func (w *indexWalk) seek(tk string, strictly bool) {
	want := append(append([]byte(nil), w.prefix...), tk...)
	k, _ := w.c.Seek(want)
	switch {
	case k == nil:
		k, _ = w.c.Last()
	case bytes.Equal(k, want) && !strictly:
	default:
		k, _ = w.c.Prev()
	}
	w.set(k)
}

func (w *indexWalk) prev() {
	k, _ := w.c.Prev()
	w.set(k)
}

func (w *indexWalk) set(k []byte) {
	if k == nil || !bytes.HasPrefix(k, w.prefix) {
		w.at = ""
		return
	}
	w.at = string(k[len(w.prefix):])
}

// listIndexed lists the runs q selects through the indexes ix: the runs
// in every index are found by walking them together backwards, each
// moving to the latest key at or before the earliest of the others (a
// leapfrog join), so a filter that matches few runs reads few index keys
// and decodes only the runs that match, however many runs there are.
func (s *DB) listIndexed(q runmodel.RunQuery, ix []filterIndex) ([]*runmodel.Run, error) {
	var out []*runmodel.Run
	since := ""
	if !q.Since.IsZero() {
		since = q.Since.Truncate(time.Second).UTC().Format(time.RFC3339)
	}
	err := s.db.View(func(tx *bolt.Tx) error {
		walks := make([]*indexWalk, len(ix))
		start, strictly := "\xff", false
		if q.After.ID != "" {
			start, strictly = timeKey(q.After.CreatedAt, q.After.ID), true
		}
		for i, x := range ix {
			walks[i] = &indexWalk{c: tx.Bucket(x.bucket).Cursor(), prefix: x.prefix}
			walks[i].seek(start, strictly)
		}
		for {
			low := walks[0].at
			for _, w := range walks[1:] {
				if w.at < low {
					low = w.at
				}
			}
			if low == "" || low < since { // an index is done, or before since
				return nil
			}
			match := true
			for _, w := range walks {
				if w.at != low {
					w.seek(low, false)
					match = match && w.at == low
				}
			}
			if !match {
				continue
			}
			_, id, _ := strings.Cut(low, "|")
			r, err := s.getRun(tx, id)
			switch {
			case errors.Is(err, chatmodel.ErrNotFound):
				// an entry left behind
			case err != nil:
				return err
			case runMatches(r, q):
				out = append(out, r)
				if q.Limit > 0 && len(out) >= q.Limit {
					return nil
				}
			}
			for _, w := range walks {
				w.prev()
			}
		}
	})
	return out, err
}
