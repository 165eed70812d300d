package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Counts are how many items of each kind a store holds (store copy
// compares them after copying).
type Counts struct {
	Runs, Journal, Audit, Messages, Events, Outbox, Digests, KV, Incidents int64
}

func (c Counts) String() string {
	return fmt.Sprintf("%d runs, %d journal entries, %d audit entries, %d message index entries, %d event ids, %d outbox items, %d digest records, %d kv entries, %d incidents",
		c.Runs, c.Journal, c.Audit, c.Messages, c.Events, c.Outbox, c.Digests, c.KV, c.Incidents)
}

// Counts counts what the store holds.
func (s *DB) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := s.pool.QueryRow(ctx, `select
		(select count(*) from runs), (select count(*) from journal), (select count(*) from audit),
		(select count(*) from messages), (select count(*) from events), (select count(*) from outbox),
		(select count(*) from digests), (select count(*) from kv), (select count(*) from incidents)`).Scan(
		&c.Runs, &c.Journal, &c.Audit, &c.Messages, &c.Events, &c.Outbox, &c.Digests, &c.KV, &c.Incidents)
	if err != nil {
		return c, fmt.Errorf("counting the store: %w", err)
	}
	return c, nil
}

// Loader writes a copied store in one transaction (Load). Audit entries
// keep their sequence numbers and hashes, so checkpoints published before
// the copy still verify.
type Loader struct {
	s      *DB
	tx     pgx.Tx
	ctx    context.Context
	rows   map[string][][]any
	cols   map[string][]string
	specs  map[string]bool
	head   runmodel.AuditEntry
	counts Counts
}

const loadBatch = 1000

// Load runs fn with a Loader in one transaction and commits when fn
// succeeds. It refuses a store that is not empty.
func (s *DB) Load(ctx context.Context, fn func(l *Loader) error) (Counts, error) {
	var out Counts
	err := s.write(ctx, func(tx pgx.Tx) error {
		c, err := countsTx(ctx, tx)
		if err != nil {
			return err
		}
		if c != (Counts{}) {
			return fmt.Errorf("the target store is not empty (%s): copy only into a new database", c)
		}
		l := &Loader{s: s, tx: tx, ctx: ctx, rows: map[string][][]any{}, specs: map[string]bool{}, cols: map[string][]string{
			"runs":            {"id", "created_at", "state", "active", "ended_at", "thread", "root_id", "spec_ref", "journal_seq", "data", "runbook", "target"},
			"specs":           {"ref", "data"},
			"journal":         {"run_id", "seq", "data"},
			"audit":           {"seq", "run_id", "data"},
			"messages":        {"platform", "channel", "id", "run_id", "data"},
			"events":          {"id", "seen_at"},
			"outbox":          {"id", "data"},
			"digests":         {"key", "data"},
			"kv":              {"key", "value"},
			"incidents":       {"id", "key", "open", "opened_at", "data"},
			"incident_keys":   {"key", "incident_id"},
			"incident_by_msg": {"platform", "channel", "id", "incident_id"},
		}}
		if err := fn(l); err != nil {
			return err
		}
		for table := range l.rows {
			if err := l.flush(table); err != nil {
				return err
			}
		}
		if l.head.Seq > 0 {
			if _, err := tx.Exec(ctx, "update audit_head set seq = $1, hash = $2 where id = 1", int64(l.head.Seq), l.head.Hash); err != nil {
				return fmt.Errorf("setting the audit head: %w", err)
			}
		}
		out = l.counts
		return nil
	})
	return out, err
}

func countsTx(ctx context.Context, tx pgx.Tx) (Counts, error) {
	var c Counts
	err := tx.QueryRow(ctx, `select
		(select count(*) from runs), (select count(*) from journal), (select count(*) from audit),
		(select count(*) from messages), (select count(*) from events), (select count(*) from outbox),
		(select count(*) from digests), (select count(*) from kv), (select count(*) from incidents)`).Scan(
		&c.Runs, &c.Journal, &c.Audit, &c.Messages, &c.Events, &c.Outbox, &c.Digests, &c.KV, &c.Incidents)
	if err != nil {
		return c, fmt.Errorf("counting the target store: %w", err)
	}
	return c, nil
}

func (l *Loader) add(table string, row ...any) error {
	l.rows[table] = append(l.rows[table], row)
	if len(l.rows[table]) >= loadBatch {
		return l.flush(table)
	}
	return nil
}

func (l *Loader) flush(table string) error {
	rows := l.rows[table]
	if len(rows) == 0 {
		return nil
	}
	if _, err := l.tx.CopyFrom(l.ctx, pgx.Identifier{table}, l.cols[table], pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("copying into %s: %w", table, err)
	}
	l.rows[table] = rows[:0]
	return nil
}

// Run copies a run with its journal.
func (l *Loader) Run(r *runmodel.Run, journal []runmodel.JournalEntry) error {
	cp := *r
	cp.ID = strings.ToLower(r.ID)
	st := storedRun{Run: &cp}
	if r.Spec != nil {
		ref, data, err := l.s.specs.ref(r.Spec)
		if err != nil {
			return fmt.Errorf("encoding the runbook of run %s: %w", r.ID, err)
		}
		if !l.specs[ref] {
			if data == nil {
				if data, err = json.Marshal(r.Spec); err != nil {
					return err
				}
			}
			l.specs[ref] = true
			if err := l.add("specs", ref, data); err != nil {
				return err
			}
		}
		cp.Spec, st.SpecRef = nil, ref
	}
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encoding run %s: %w", r.ID, err)
	}
	ended := r.FinishedAt
	if ended.IsZero() {
		ended = r.UpdatedAt
	}
	var seq int64
	for _, e := range journal {
		e.RunID = cp.ID
		if int64(e.Seq) > seq {
			seq = int64(e.Seq)
		}
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if err := l.add("journal", cp.ID, int64(e.Seq), raw); err != nil {
			return err
		}
	}
	l.counts.Runs++
	l.counts.Journal += int64(len(journal))
	return l.add("runs", cp.ID, r.CreatedAt, string(r.State), !r.State.Terminal(), ended, r.Conversation.Thread, r.Root.ID, st.SpecRef, seq, data, r.Runbook, r.Target)
}

// Message copies a message index entry.
func (l *Loader) Message(m runmodel.MessageIndex) error {
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	l.counts.Messages++
	return l.add("messages", m.Ref.Platform, m.Ref.Channel, m.Ref.ID, strings.ToLower(m.RunID), data)
}

// Audit copies an audit entry as it is (sequence, prev and hash); entries
// come in chain order.
func (l *Loader) Audit(e runmodel.AuditEntry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	l.head = e
	l.counts.Audit++
	return l.add("audit", int64(e.Seq), strings.ToLower(e.RunID), data)
}

// Event copies an inbound event id.
func (l *Loader) Event(id string, seen time.Time) error {
	l.counts.Events++
	return l.add("events", id, seen.UTC())
}

// Outbox copies an outbox item.
func (l *Loader) Outbox(it runmodel.OutboxItem) error {
	data, err := json.Marshal(it)
	if err != nil {
		return err
	}
	l.counts.Outbox++
	return l.add("outbox", it.ID, data)
}

// Digest copies a digest record (its JSON).
func (l *Loader) Digest(key string, data []byte) error {
	l.counts.Digests++
	return l.add("digests", key, append([]byte(nil), data...))
}

// KV copies a kv entry.
func (l *Loader) KV(key string, value []byte) error {
	l.counts.KV++
	return l.add("kv", key, append([]byte{}, value...))
}

// Incident copies an incident (and the index of its root message).
func (l *Loader) Incident(in *incident.Incident) error {
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	l.counts.Incidents++
	if !in.Root.IsZero() {
		if err := l.add("incident_by_msg", in.Root.Platform, in.Root.Channel, in.Root.ID, in.ID); err != nil {
			return err
		}
	}
	return l.add("incidents", in.ID, in.Key, in.State != incident.StateResolved, in.OpenedAt, data)
}

// IncidentKey copies which incident is the latest of a key.
func (l *Loader) IncidentKey(key, id string) error { return l.add("incident_keys", key, id) }
