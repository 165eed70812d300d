// Package storetest is the conformance suite of groundcrew's store ports:
// every store (bbolt, PostgreSQL) runs the same tests, so a behaviour that
// differs between two stores is a failing test.
//
// A store package calls Run from its own test with a function that opens
// an empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Store { … })
//	}
//
// Add a case by adding a function to the cases table below; it gets a fresh
// empty store.
package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// Store is everything a groundcrew store implements.
type Store interface {
	runmodel.Store
	runmodel.Housekeeper
	incident.Store
	digest.History
	GetKV(ctx context.Context, key string) ([]byte, error)
	PutKV(ctx context.Context, key string, value []byte) error
	AuditHead(ctx context.Context) (runmodel.AuditHead, error)
	VerifyAuditHead(ctx context.Context, want runmodel.AuditHead) error
	VerifyAudit(ctx context.Context) (int, error)
	AuditAfter(ctx context.Context, seq uint64, limit int) ([]runmodel.AuditEntry, error)
	Close() error
}

// Options are what a case asks of the store it opens. Zero values mean the
// store's defaults.
type Options struct {
	Retention time.Duration
	EventTTL  time.Duration
}

// Open opens a new, empty store. It registers the store's cleanup with t.
type Open func(t *testing.T, o Options) Store

// Case is one conformance test.
type Case struct {
	Name string
	Fn   func(t *testing.T, open Open)
}

// Cases are the conformance tests, in the order Run runs them.
var Cases = []Case{
	{"Runs/CreateGet", testCreateGet},
	{"Runs/UpdateAtomicWithBatch", testUpdateAtomic},
	{"Runs/UpdateNotFound", testUpdateNotFound},
	{"Runs/SpecRoundTrip", testSpecRoundTrip},
	{"Runs/ListOrderLimitSince", testListOrder},
	{"Runs/ListFiltersAndPages", testListFiltersAndPages},
	{"Runs/ListFilteredAgreesWithTheWholeListing", testListFilteredAgreesWithTheWholeListing},
	{"Runs/ListActive", testListActive},
	{"Runs/ListThread", testListThread},
	{"Runs/RunByMessage", testRunByMessage},
	{"Runs/ConcurrentUpdatesSerialise", testConcurrentUpdates},
	{"Runs/LargeValues", testLargeValues},
	{"Journal/SeqPerRun", testJournalSeq},
	{"Audit/Chain", testAuditChain},
	{"Audit/Head", testAuditHead},
	{"Audit/Pages", testAuditPages},
	{"Audit/ConcurrentAppends", testAuditConcurrent},
	{"Dedupe/SeenAndTTL", testDedupe},
	{"Outbox/PutListDelete", testOutbox},
	{"KV/GetPut", testKV},
	{"Digests/History", testDigests},
	{"Incidents/UpsertUpdateList", testIncidents},
	{"Incidents/ByMessage", testIncidentByMessage},
	{"Incidents/ConcurrentUpserts", testIncidentConcurrent},
	{"Retention/Housekeep", testRetention},
}

// Run runs every case against stores opened by open.
func Run(t *testing.T, open Open) {
	for _, c := range Cases {
		t.Run(c.Name, func(t *testing.T) { c.Fn(t, open) })
	}
}

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

func ctx() context.Context { return context.Background() }
