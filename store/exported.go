package store

import "github.com/groundcrew/groundcrew/bot"

// AuditHash is the hash of an audit entry as every groundcrew store
// computes it (every field but Hash, including Prev), so an audit log
// copied from one store to another still verifies.
func AuditHash(e bot.AuditEntry) string { return auditHash(e) }
