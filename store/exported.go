package store

import "github.com/groundcrew/groundcrew/model/runmodel"

// AuditHash is the hash of an audit entry as every groundcrew store
// computes it (every field but Hash, including Prev), so an audit log
// copied from one store to another still verifies.
func AuditHash(e runmodel.AuditEntry) string { return auditHash(e) }
