package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// ErrAuditCut is returned by VerifyAuditHead when the chain no longer
// contains a head published earlier: entries were removed from its end or
// the log was rewritten since.
var ErrAuditCut = errors.New("audit log does not contain the expected head")

// AuditHead returns the head of the audit chain (its last entry). It does
// not verify the chain; VerifyAudit does.
func (s *DB) AuditHead(_ context.Context) (runmodel.AuditHead, error) {
	var h runmodel.AuditHead
	err := s.db.View(func(tx *bolt.Tx) error {
		k, v := tx.Bucket(bAudit).Cursor().Last()
		if k == nil {
			return nil
		}
		var e runmodel.AuditEntry
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("%w: last entry is not valid JSON", ErrAuditTampered)
		}
		h = runmodel.AuditHead{Count: e.Seq, Hash: e.Hash}
		return nil
	})
	return h, err
}

// VerifyAuditHead checks that the chain still contains want: entry
// want.Count exists and has want.Hash (a prefix of at least 12 characters
// is accepted). Run VerifyAudit too: it checks that the entries up to the
// head follow each other.
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
			ErrAuditCut, head.Count, want, want.Count, n, what)
	}
	var e runmodel.AuditEntry
	err = s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bAudit).Get(u64(want.Count))
		if v == nil {
			return fmt.Errorf("%w: entry %d of the checkpoint %s is missing", ErrAuditCut, want.Count, want)
		}
		if err := json.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("%w: entry %d is not valid JSON", ErrAuditTampered, want.Count)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !strings.HasPrefix(e.Hash, want.Hash) || want.Hash == "" {
		return fmt.Errorf("%w: entry %d has hash %s, not the checkpoint's %s — the log was rewritten since the checkpoint",
			ErrAuditCut, want.Count, e.Hash, want.Hash)
	}
	return nil
}
