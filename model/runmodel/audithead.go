package runmodel

import (
	"fmt"
	"strconv"
	"strings"
)

// AuditHead is the end of the audit chain: how many entries it has and the
// hash of the last one. A hash chain alone cannot see its last entries cut
// off; a head published outside the store (the log, a chat channel) can:
// `groundcrew audit verify --expect <head>` fails when the chain no longer
// contains it.
type AuditHead struct {
	Count uint64
	Hash  string // "" when the chain is empty
}

// String renders the head as "<count>:<hash>".
func (h AuditHead) String() string { return fmt.Sprintf("%d:%s", h.Count, h.Hash) }

// minHeadHash is how short an expected hash may be (a prefix is accepted,
// for heads copied by hand).
const minHeadHash = 12

// ParseAuditHead reads "<count>:<hash>".
func ParseAuditHead(s string) (AuditHead, error) {
	n, hash, ok := strings.Cut(strings.TrimSpace(s), ":")
	count, err := strconv.ParseUint(n, 10, 64)
	if !ok || err != nil {
		return AuditHead{}, fmt.Errorf("%q is not an audit head: write <count>:<hash>, as printed by `groundcrew audit verify`", s)
	}
	hash = strings.ToLower(hash)
	if count > 0 && len(hash) < minHeadHash {
		return AuditHead{}, fmt.Errorf("%q: the hash needs at least %d characters", s, minHeadHash)
	}
	for _, c := range hash {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return AuditHead{}, fmt.Errorf("%q: the hash is hexadecimal (0-9, a-f)", s)
		}
	}
	return AuditHead{Count: count, Hash: hash}, nil
}
