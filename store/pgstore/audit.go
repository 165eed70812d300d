package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
)

// appendAudit appends e to the chain.
func appendAudit(ctx context.Context, tx pgx.Tx, e runmodel.AuditEntry) error {
	var q pgx.Batch
	if err := queueAudit(ctx, tx, &q, []runmodel.AuditEntry{e}); err != nil {
		return err
	}
	return send(ctx, tx, &q, "the audit log")
}

// queueAudit chains entries after the head and queues their writes on q.
// The head row is locked for the transaction, so appends serialise and
// the chain stays one chain.
func queueAudit(ctx context.Context, tx pgx.Tx, q *pgx.Batch, entries []runmodel.AuditEntry) error {
	var seq int64
	var prev string
	if err := tx.QueryRow(ctx, "select seq, hash from audit_head where id = 1 for update").Scan(&seq, &prev); err != nil {
		return fmt.Errorf("reading the audit head: %w", err)
	}
	seqs := make([]int64, 0, len(entries))
	runs := make([]string, 0, len(entries))
	datas := make([][]byte, 0, len(entries))
	for _, e := range entries {
		seq++
		e.Seq, e.Prev = uint64(seq), prev
		e.Time = e.Time.UTC()
		e.Hash = store.AuditHash(e)
		data, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encoding audit entry: %w", err)
		}
		seqs, runs, datas = append(seqs, seq), append(runs, strings.ToLower(e.RunID)), append(datas, data)
		prev = e.Hash
	}
	q.Queue("insert into audit (seq, run_id, data) select unnest($1::bigint[]), unnest($2::text[]), unnest($3::bytea[])", seqs, runs, datas)
	q.Queue("update audit_head set seq = $1, hash = $2 where id = 1", seq, prev)
	return nil
}

// AppendAudit implements runmodel.Journals.
func (s *DB) AppendAudit(ctx context.Context, e runmodel.AuditEntry) error {
	return s.write(ctx, func(tx pgx.Tx) error { return appendAudit(ctx, tx, e) })
}

// AuditEntries implements runmodel.Journals: the entries of one run, or all of
// them when runID is empty.
func (s *DB) AuditEntries(ctx context.Context, runID string) ([]runmodel.AuditEntry, error) {
	var out []runmodel.AuditEntry
	err := s.eachAudit(ctx, runID, func(_ int64, e runmodel.AuditEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// eachAudit calls fn with every entry (of runID, or all), in order.
func (s *DB) eachAudit(ctx context.Context, runID string, fn func(seq int64, e runmodel.AuditEntry, err error) error) error {
	sql, args := "select seq, data from audit order by seq", []any(nil)
	if runID != "" {
		sql, args = "select seq, data from audit where run_id = $1 order by seq", []any{strings.ToLower(runID)}
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var raw []byte
		if err := rows.Scan(&seq, &raw); err != nil {
			return fmt.Errorf("reading the audit log: %w", err)
		}
		var e runmodel.AuditEntry
		var derr error
		if err := json.Unmarshal(raw, &e); err != nil {
			derr = fmt.Errorf("%w: entry %d is not valid JSON", store.ErrAuditTampered, seq)
		}
		if err := fn(seq, e, derr); err != nil {
			return err
		}
	}
	return rows.Err()
}

// VerifyAudit walks the audit chain and reports the first entry that was
// edited, deleted or reordered. It returns the number of entries checked.
func (s *DB) VerifyAudit(ctx context.Context) (int, error) {
	n, prev, want := 0, "", uint64(1)
	err := s.eachAudit(ctx, "", func(seq int64, e runmodel.AuditEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case uint64(seq) != want || e.Seq != uint64(seq):
			return fmt.Errorf("%w: entry %d missing or out of order (found %d)", store.ErrAuditTampered, want, e.Seq)
		case e.Prev != prev:
			return fmt.Errorf("%w: entry %d does not follow entry %d (an entry was deleted or edited)", store.ErrAuditTampered, e.Seq, e.Seq-1)
		case store.AuditHash(e) != e.Hash:
			return fmt.Errorf("%w: entry %d was edited (hash mismatch)", store.ErrAuditTampered, e.Seq)
		}
		prev, want = e.Hash, want+1
		n++
		return nil
	})
	if err != nil {
		return n, err
	}
	var head int64
	var hash string
	if err := s.pool.QueryRow(ctx, "select seq, hash from audit_head where id = 1").Scan(&head, &hash); err != nil {
		return n, fmt.Errorf("reading the audit head: %w", err)
	}
	if uint64(head) != uint64(n) || hash != prev {
		return n, fmt.Errorf("%w: the head says entry %d, the log ends at entry %d (entries were removed from the end)", store.ErrAuditTampered, head, n)
	}
	return n, nil
}

// AuditHead returns the head of the audit chain (its last entry).
func (s *DB) AuditHead(ctx context.Context) (runmodel.AuditHead, error) {
	var raw []byte
	var seq int64
	err := s.pool.QueryRow(ctx, "select seq, data from audit order by seq desc limit 1").Scan(&seq, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return runmodel.AuditHead{}, nil
	}
	if err != nil {
		return runmodel.AuditHead{}, fmt.Errorf("reading the audit head: %w", err)
	}
	var e runmodel.AuditEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return runmodel.AuditHead{}, fmt.Errorf("%w: last entry is not valid JSON", store.ErrAuditTampered)
	}
	return runmodel.AuditHead{Count: e.Seq, Hash: e.Hash}, nil
}

// VerifyAuditHead checks that the chain still contains want (see
// store.DB.VerifyAuditHead).
func (s *DB) VerifyAuditHead(ctx context.Context, want runmodel.AuditHead) error {
	if want.Count == 0 {
		return nil
	}
	head, err := s.AuditHead(ctx)
	if err != nil {
		return err
	}
	if head.Count < want.Count {
		n, what := want.Count-head.Count, "entries were"
		if n == 1 {
			what = "entry was"
		}
		return fmt.Errorf("%w: the log ends at entry %d but the checkpoint %s has entry %d — at least %d %s removed from the end",
			store.ErrAuditCut, head.Count, want, want.Count, n, what)
	}
	var raw []byte
	err = s.pool.QueryRow(ctx, "select data from audit where seq = $1", int64(want.Count)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%w: entry %d of the checkpoint %s is missing", store.ErrAuditCut, want.Count, want)
	}
	if err != nil {
		return fmt.Errorf("reading audit entry %d: %w", want.Count, err)
	}
	var e runmodel.AuditEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("%w: entry %d is not valid JSON", store.ErrAuditTampered, want.Count)
	}
	if !strings.HasPrefix(e.Hash, want.Hash) || want.Hash == "" {
		return fmt.Errorf("%w: entry %d has hash %s, not the checkpoint's %s — the log was rewritten since the checkpoint",
			store.ErrAuditCut, want.Count, e.Hash, want.Hash)
	}
	return nil
}

// AuditAfter returns up to limit audit entries after sequence number seq,
// in order: the audit log a page at a time (audit export).
func (s *DB) AuditAfter(ctx context.Context, seq uint64, limit int) ([]runmodel.AuditEntry, error) {
	rows, err := s.pool.Query(ctx, "select seq, data from audit where seq > $1 order by seq limit $2", int64(seq), limit)
	if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer rows.Close()
	var out []runmodel.AuditEntry
	for rows.Next() {
		var n int64
		var raw []byte
		if err := rows.Scan(&n, &raw); err != nil {
			return nil, fmt.Errorf("reading the audit log: %w", err)
		}
		var e runmodel.AuditEntry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%w: entry %d is not valid JSON", store.ErrAuditTampered, n)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
