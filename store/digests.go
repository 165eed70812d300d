package store

import (
	"context"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/digest"
)

var _ digest.History = (*DB)(nil)

// LastDigest implements digest.History: the record of a digest
// schedule, or nil when it has none yet.
func (s *DB) LastDigest(_ context.Context, key string) (*digest.Record, error) {
	var out *digest.Record
	err := s.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bDigests).Get([]byte(key))
		if raw == nil {
			return nil
		}
		var rec digest.Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return fmt.Errorf("decoding digest record %q: %w", key, err)
		}
		out = &rec
		return nil
	})
	return out, err
}

// SaveDigest implements digest.History. The record is on disk when it
// returns (bbolt syncs every committed transaction), which the scheduler's
// at-most-once delivery relies on.
func (s *DB) SaveDigest(_ context.Context, key string, rec digest.Record) error {
	if key == "" {
		return fmt.Errorf("saving digest record: empty key")
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding digest record %q: %w", key, err)
	}
	return s.update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bDigests).Put([]byte(key), data); err != nil {
			return fmt.Errorf("saving digest record %q: %w", key, err)
		}
		return nil
	})
}
