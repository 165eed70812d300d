package store

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Cutting the last entries keeps the chain valid; only a head published
// earlier shows the cut.
func TestAuditHead_DetectsCutTail(t *testing.T) {
	db, _ := openTemp(t)
	defer db.Close()
	ctx := context.Background()

	h, err := db.AuditHead(ctx)
	require.NoError(t, err)
	assert.Equal(t, runmodel.AuditHead{}, h)
	require.NoError(t, db.VerifyAuditHead(ctx, h), "an empty head is always contained")

	for i := range 5 {
		require.NoError(t, db.AppendAudit(ctx, runmodel.AuditEntry{Actor: "alice", Action: "approve", Detail: string(rune('a' + i))}))
	}
	head, err := db.AuditHead(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), head.Count)
	assert.Len(t, head.Hash, 64)
	require.NoError(t, db.VerifyAuditHead(ctx, head))
	require.NoError(t, db.VerifyAuditHead(ctx, runmodel.AuditHead{Count: 5, Hash: head.Hash[:12]}), "a 12-character prefix is enough")

	// An earlier head is still contained once more entries are appended.
	require.NoError(t, db.AppendAudit(ctx, runmodel.AuditEntry{Actor: "bob", Action: "approve"}))
	require.NoError(t, db.VerifyAuditHead(ctx, head))

	// Cut the last two entries: the chain is still valid…
	require.NoError(t, db.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAudit)
		if err := b.Delete(u64(6)); err != nil {
			return err
		}
		return b.Delete(u64(5))
	}))
	n, err := db.VerifyAudit(ctx)
	require.NoError(t, err, "a hash chain alone cannot see a cut tail")
	assert.Equal(t, 4, n)
	// …but not the checkpoint.
	err = db.VerifyAuditHead(ctx, head)
	require.ErrorIs(t, err, ErrAuditCut)
	assert.Contains(t, err.Error(), "the log ends at entry 4 but the checkpoint 5:"+head.Hash+" has entry 5 — at least 1 entry was removed from the end")

	// Same count, another hash: rewritten.
	err = db.VerifyAuditHead(ctx, runmodel.AuditHead{Count: 3, Hash: "0123456789ab"})
	require.ErrorIs(t, err, ErrAuditCut)
	assert.Contains(t, err.Error(), "entry 3 has hash")
	assert.Contains(t, err.Error(), "the log was rewritten since the checkpoint")
}

func TestParseAuditHead(t *testing.T) {
	h, err := runmodel.ParseAuditHead("12:ABCDEF0123456789")
	require.NoError(t, err)
	assert.Equal(t, runmodel.AuditHead{Count: 12, Hash: "abcdef0123456789"}, h)
	assert.Equal(t, "12:abcdef0123456789", h.String())
	for _, bad := range []string{"", "12", "x:abc", "3:abc", "3:zzzzzzzzzzzzzz"} {
		_, err := runmodel.ParseAuditHead(bad)
		assert.Error(t, err, bad)
	}
}
