package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Incident buckets. They are created by the first write, so a store from
// before incidents needs no migration.
var (
	bIncidents     = []byte("incidents")       // id → incident JSON
	bIncidentKeys  = []byte("incident_keys")   // dedupe key → latest incident id
	bIncidentOpen  = []byte("incident_open")   // id of every unresolved incident
	bIncidentByMsg = []byte("incident_by_msg") // root message key → incident id
)

var _ incident.Store = (*DB)(nil)

func incidentBuckets(tx *bolt.Tx) error {
	for _, b := range [][]byte{bIncidents, bIncidentKeys, bIncidentOpen, bIncidentByMsg} {
		if _, err := tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("creating bucket %q: %w", b, err)
		}
	}
	return nil
}

func getIncident(tx *bolt.Tx, id string) (*incident.Incident, error) {
	b := tx.Bucket(bIncidents)
	var raw []byte
	if b != nil {
		raw = b.Get([]byte(id))
	}
	if raw == nil {
		return nil, fmt.Errorf("incident %s: %w", id, incident.ErrNotFound)
	}
	var in incident.Incident
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("decoding incident %s: %w", id, err)
	}
	return &in, nil
}

// putIncident writes the incident and its indexes (buckets must exist).
func putIncident(tx *bolt.Tx, in *incident.Incident) error {
	if in.ID == "" || in.Key == "" {
		return fmt.Errorf("incident without id or key")
	}
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding incident %s: %w", in.ID, err)
	}
	if err := tx.Bucket(bIncidents).Put([]byte(in.ID), data); err != nil {
		return err
	}
	if err := tx.Bucket(bIncidentKeys).Put([]byte(in.Key), []byte(in.ID)); err != nil {
		return err
	}
	open := tx.Bucket(bIncidentOpen)
	if in.State == incident.StateResolved {
		err = open.Delete([]byte(in.ID))
	} else {
		err = open.Put([]byte(in.ID), nil)
	}
	if err != nil {
		return err
	}
	if !in.Root.IsZero() {
		return tx.Bucket(bIncidentByMsg).Put(msgKey(in.Root), []byte(in.ID))
	}
	return nil
}

// UpsertIncident implements incident.Store.
func (s *DB) UpsertIncident(_ context.Context, key string, fn func(cur *incident.Incident) (*incident.Incident, error)) (*incident.Incident, error) {
	var out *incident.Incident
	// Group commit: a storm of notifications shares fsyncs. fn may run
	// more than once (a failed batch is retried one by one); it only computes.
	err := groupCommit(s, func(tx *bolt.Tx) error {
		out = nil
		if err := incidentBuckets(tx); err != nil {
			return err
		}
		var cur *incident.Incident
		if id := tx.Bucket(bIncidentKeys).Get([]byte(key)); id != nil {
			var err error
			if cur, err = getIncident(tx, string(id)); err != nil {
				return err
			}
		}
		next, err := fn(cur)
		if err != nil || next == nil {
			return err
		}
		if next.Key != key {
			return fmt.Errorf("incident %s: key %q is not %q", next.ID, next.Key, key)
		}
		if cur == nil || cur.ID != next.ID {
			if tx.Bucket(bIncidents).Get([]byte(next.ID)) != nil {
				return fmt.Errorf("incident %s: %w", next.ID, runmodel.ErrExists)
			}
		}
		out = next
		return putIncident(tx, next)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateIncident implements incident.Store.
func (s *DB) UpdateIncident(_ context.Context, id string, fn func(in *incident.Incident) error) (*incident.Incident, error) {
	var out *incident.Incident
	err := groupCommit(s, func(tx *bolt.Tx) error {
		out = nil
		if err := incidentBuckets(tx); err != nil {
			return err
		}
		in, err := getIncident(tx, id)
		if err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
		in.ID = id
		out = in
		return putIncident(tx, in)
	})
	return out, err
}

// GetIncident implements incident.Store.
func (s *DB) GetIncident(_ context.Context, id string) (*incident.Incident, error) {
	var out *incident.Incident
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = getIncident(tx, id)
		return err
	})
	return out, err
}

// ListIncidents implements incident.Store: most recently opened first.
func (s *DB) ListIncidents(_ context.Context, q incident.Query) ([]*incident.Incident, error) {
	var out []*incident.Incident
	err := s.db.View(func(tx *bolt.Tx) error {
		src := tx.Bucket(bIncidents)
		if q.Open {
			src = tx.Bucket(bIncidentOpen)
		}
		if src == nil {
			return nil
		}
		return src.ForEach(func(k, _ []byte) error {
			in, err := getIncident(tx, string(k))
			if err != nil {
				return err
			}
			out = append(out, in)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].OpenedAt.After(out[j].OpenedAt) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// IncidentByMessage implements incident.Store.
func (s *DB) IncidentByMessage(_ context.Context, ref chatmodel.MessageRef) (*incident.Incident, error) {
	var out *incident.Incident
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bIncidentByMsg)
		var id []byte
		if b != nil {
			id = b.Get(msgKey(ref))
		}
		if id == nil {
			return fmt.Errorf("message %s: %w", ref.ID, incident.ErrNotFound)
		}
		var err error
		out, err = getIncident(tx, string(id))
		return err
	})
	return out, err
}

// committer groups the incident writes that arrive while a commit is in
// flight into the next transaction — one fsync for many webhooks, and no
// waiting when there is no storm (bbolt's Batch always waits MaxBatchDelay).
type committer struct {
	mu      sync.Mutex
	pending []*commitOp
	running bool
}

type commitOp struct {
	fn   func(*bolt.Tx) error
	done chan commitResult
}

type commitResult struct {
	err  error
	lead bool // this op's caller now runs the next group
}

var committers sync.Map // *bolt.DB → *committer

// groupCommit runs fn in a read-write transaction shared with the other
// writes queued meanwhile. If any fn of a group fails, the group is rolled
// back and each fn runs again in its own transaction, so one failing write
// never takes another down.
func groupCommit(s *DB, fn func(*bolt.Tx) error) error {
	v, _ := committers.LoadOrStore(s.db, &committer{})
	c := v.(*committer)
	op := &commitOp{fn: fn, done: make(chan commitResult, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, op)
	if c.running {
		c.mu.Unlock()
		r := <-op.done
		if !r.lead {
			return r.err
		}
		c.mu.Lock()
	}
	c.running = true
	group := c.pending
	c.pending = nil
	c.mu.Unlock()

	errs := make([]error, len(group))
	err := s.update(func(tx *bolt.Tx) error {
		for i, o := range group {
			if errs[i] = o.fn(tx); errs[i] != nil {
				return errs[i]
			}
		}
		return nil
	})
	if err != nil && len(group) > 1 {
		for i, o := range group {
			errs[i] = s.update(o.fn)
		}
	} else if err != nil {
		errs[0] = err
	}

	// Hand over: the first queued writer leads the next group.
	c.mu.Lock()
	if len(c.pending) > 0 {
		next := c.pending[0]
		c.pending = c.pending[1:]
		c.pending = append([]*commitOp{next}, c.pending...)
		next.done <- commitResult{lead: true}
	} else {
		c.running = false
	}
	c.mu.Unlock()
	var mine error
	for i, o := range group {
		if o == op {
			mine = errs[i]
			continue
		}
		o.done <- commitResult{err: errs[i]}
	}
	return mine
}
