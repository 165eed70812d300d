package store

import (
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Dump receives everything a store holds, for `groundcrew store copy`.
// Each function is called once per item; an error stops the dump.
type Dump struct {
	Run         func(r *runmodel.Run, journal []runmodel.JournalEntry) error
	Message     func(m runmodel.MessageIndex) error
	Audit       func(e runmodel.AuditEntry) error // in chain order, hashes as stored
	Event       func(id string, seen time.Time) error
	Outbox      func(it runmodel.OutboxItem) error
	Digest      func(key string, data []byte) error // a digest.Record as JSON
	KV          func(key string, value []byte) error
	Incident    func(in *incident.Incident) error
	IncidentKey func(key, incidentID string) error // the latest incident of each key
}

// Dump walks the whole store in one read transaction (a consistent copy)
// and calls d's functions.
func (s *DB) Dump(d Dump) error {
	return s.db.View(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bRuns).ForEach(func(k, _ []byte) error {
			r, err := s.getRun(tx, string(k))
			if err != nil {
				return err
			}
			var journal []runmodel.JournalEntry
			if jb := tx.Bucket(bJournal).Bucket(k); jb != nil {
				if err := jb.ForEach(func(_, v []byte) error {
					var e runmodel.JournalEntry
					if err := json.Unmarshal(v, &e); err != nil {
						return fmt.Errorf("decoding the journal of %s: %w", k, err)
					}
					journal = append(journal, e)
					return nil
				}); err != nil {
					return err
				}
			}
			return d.Run(r, journal)
		}); err != nil {
			return fmt.Errorf("runs: %w", err)
		}
		each := func(name string, b []byte, fn func(k, v []byte) error) error {
			bk := tx.Bucket(b)
			if bk == nil {
				return nil
			}
			if err := bk.ForEach(fn); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		}
		if err := each("message index", bMessages, func(_, v []byte) error {
			var m runmodel.MessageIndex
			if err := json.Unmarshal(v, &m); err != nil {
				return err
			}
			return d.Message(m)
		}); err != nil {
			return err
		}
		if err := each("audit log", bAudit, func(_, v []byte) error {
			var e runmodel.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			return d.Audit(e)
		}); err != nil {
			return err
		}
		if err := each("event ids", bEvents, func(k, v []byte) error {
			t, err := time.Parse(time.RFC3339, string(v))
			if err != nil {
				return fmt.Errorf("event %s: time %q: %w", k, v, err)
			}
			return d.Event(string(k), t)
		}); err != nil {
			return err
		}
		if err := each("outbox", bOutbox, func(_, v []byte) error {
			var it runmodel.OutboxItem
			if err := json.Unmarshal(v, &it); err != nil {
				return err
			}
			return d.Outbox(it)
		}); err != nil {
			return err
		}
		if err := each("digests", bDigests, func(k, v []byte) error { return d.Digest(string(k), v) }); err != nil {
			return err
		}
		if err := each("kv", bKV, func(k, v []byte) error { return d.KV(string(k), v) }); err != nil {
			return err
		}
		if err := each("incidents", bIncidents, func(k, _ []byte) error {
			in, err := getIncident(tx, string(k))
			if err != nil {
				return err
			}
			return d.Incident(in)
		}); err != nil {
			return err
		}
		return each("incident keys", bIncidentKeys, func(k, v []byte) error { return d.IncidentKey(string(k), string(v)) })
	})
}
