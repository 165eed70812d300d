package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

var (
	_ incident.Store = (*DB)(nil)
	_ digest.History = (*DB)(nil)
	_ runmodel.Store = (*DB)(nil)
)

func getIncident(ctx context.Context, q querier, id string, lock bool) (*incident.Incident, error) {
	sql := "select data from incidents where id = $1"
	if lock {
		sql += " for update"
	}
	var raw []byte
	err := q.QueryRow(ctx, sql, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("incident %s: %w", id, incident.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading incident %s: %w", id, err)
	}
	var in incident.Incident
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("decoding incident %s: %w", id, err)
	}
	return &in, nil
}

func putIncident(ctx context.Context, tx pgx.Tx, in *incident.Incident) error {
	if in.ID == "" || in.Key == "" {
		return fmt.Errorf("incident without id or key")
	}
	data, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("encoding incident %s: %w", in.ID, err)
	}
	if _, err := tx.Exec(ctx, `insert into incidents (id, key, open, opened_at, data) values ($1, $2, $3, $4, $5)
		on conflict (id) do update set key = excluded.key, open = excluded.open, opened_at = excluded.opened_at, data = excluded.data`,
		in.ID, in.Key, in.State != incident.StateResolved, in.OpenedAt, data); err != nil {
		return fmt.Errorf("writing incident %s: %w", in.ID, err)
	}
	if _, err := tx.Exec(ctx, `insert into incident_keys (key, incident_id) values ($1, $2)
		on conflict (key) do update set incident_id = excluded.incident_id`, in.Key, in.ID); err != nil {
		return fmt.Errorf("writing incident %s: %w", in.ID, err)
	}
	if _, err := tx.Exec(ctx, "select pg_notify($1, $2)", ChangesChannel, "incident:"+in.ID); err != nil {
		return fmt.Errorf("announcing incident %s: %w", in.ID, err)
	}
	if !in.Root.IsZero() {
		if _, err := tx.Exec(ctx, `insert into incident_by_msg (platform, channel, id, incident_id) values ($1, $2, $3, $4)
			on conflict (platform, channel, id) do update set incident_id = excluded.incident_id`,
			in.Root.Platform, in.Root.Channel, in.Root.ID, in.ID); err != nil {
			return fmt.Errorf("indexing the root message of incident %s: %w", in.ID, err)
		}
	}
	return nil
}

// UpsertIncident implements incident.Store. Upserts of one key serialise
// on a transaction advisory lock of the key (the key may have no row yet).
func (s *DB) UpsertIncident(ctx context.Context, key string, fn func(cur *incident.Incident) (*incident.Incident, error)) (*incident.Incident, error) {
	var out *incident.Incident
	err := s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "select pg_advisory_xact_lock(hashtextextended('groundcrew incident ' || $1, 0))", key); err != nil {
			return fmt.Errorf("locking incident key %q: %w", key, err)
		}
		var cur *incident.Incident
		var id string
		err := tx.QueryRow(ctx, "select incident_id from incident_keys where key = $1", key).Scan(&id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("reading incident key %q: %w", key, err)
		default:
			if cur, err = getIncident(ctx, tx, id, true); err != nil {
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
			var exists bool
			if err := tx.QueryRow(ctx, "select exists (select 1 from incidents where id = $1)", next.ID).Scan(&exists); err != nil {
				return fmt.Errorf("incident %s: %w", next.ID, err)
			}
			if exists {
				return fmt.Errorf("incident %s: %w", next.ID, runmodel.ErrExists)
			}
		}
		out = next
		return putIncident(ctx, tx, next)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateIncident implements incident.Store.
func (s *DB) UpdateIncident(ctx context.Context, id string, fn func(in *incident.Incident) error) (*incident.Incident, error) {
	var out *incident.Incident
	err := s.write(ctx, func(tx pgx.Tx) error {
		in, err := getIncident(ctx, tx, id, true)
		if err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
		in.ID = id
		out = in
		return putIncident(ctx, tx, in)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetIncident implements incident.Store.
func (s *DB) GetIncident(ctx context.Context, id string) (*incident.Incident, error) {
	return getIncident(ctx, s.pool, id, false)
}

// ListIncidents implements incident.Store: most recently opened first.
func (s *DB) ListIncidents(ctx context.Context, q incident.Query) ([]*incident.Incident, error) {
	sql := "select data from incidents"
	if q.Open {
		sql += " where open"
	}
	sql += " order by opened_at desc"
	var args []any
	if q.Limit > 0 {
		sql += " limit $1"
		args = append(args, q.Limit)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("listing incidents: %w", err)
	}
	defer rows.Close()
	var out []*incident.Incident
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("listing incidents: %w", err)
		}
		var in incident.Incident
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("decoding an incident: %w", err)
		}
		out = append(out, &in)
	}
	return out, rows.Err()
}

// IncidentByMessage implements incident.Store.
func (s *DB) IncidentByMessage(ctx context.Context, ref chatmodel.MessageRef) (*incident.Incident, error) {
	var id string
	err := s.pool.QueryRow(ctx, "select incident_id from incident_by_msg where platform = $1 and channel = $2 and id = $3",
		ref.Platform, ref.Channel, ref.ID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("message %s: %w", ref.ID, incident.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading message %s: %w", ref.ID, err)
	}
	return getIncident(ctx, s.pool, id, false)
}

// LastDigest implements digest.History.
func (s *DB) LastDigest(ctx context.Context, key string) (*digest.Record, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, "select data from digests where key = $1", key).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading digest record %q: %w", key, err)
	}
	var rec digest.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("decoding digest record %q: %w", key, err)
	}
	return &rec, nil
}

// SaveDigest implements digest.History: the record is committed when it returns.
func (s *DB) SaveDigest(ctx context.Context, key string, rec digest.Record) error {
	if key == "" {
		return fmt.Errorf("saving digest record: empty key")
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encoding digest record %q: %w", key, err)
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "insert into digests (key, data) values ($1, $2) on conflict (key) do update set data = excluded.data", key, data); err != nil {
			return fmt.Errorf("saving digest record %q: %w", key, err)
		}
		return nil
	})
}
