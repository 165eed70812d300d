package web

import (
	"context"

	"github.com/groundcrew/groundcrew/digest"
	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// The pages only read. These are the small parts of the store they read
// (both stores implement all of them), and what only the engine can
// render, handed in by the composition root as functions.

// Runs reads runs.
type Runs interface {
	GetRun(ctx context.Context, id string) (*runmodel.Run, error)
	ListRuns(ctx context.Context, q runmodel.RunQuery) ([]*runmodel.Run, error)
}

// Journals reads a run's journal and audit entries, and the head of the
// audit chain.
type Journals interface {
	Journal(ctx context.Context, runID string) ([]runmodel.JournalEntry, error)
	AuditEntries(ctx context.Context, runID string) ([]runmodel.AuditEntry, error)
	AuditHead(ctx context.Context) (runmodel.AuditHead, error)
}

// Incidents reads incidents.
type Incidents interface {
	GetIncident(ctx context.Context, id string) (*incident.Incident, error)
	ListIncidents(ctx context.Context, q incident.Query) ([]*incident.Incident, error)
	// IncidentByMessage finds the incident whose root message is ref (the
	// incident of a run's thread).
	IncidentByMessage(ctx context.Context, ref chatmodel.MessageRef) (*incident.Incident, error)
}

// Digests reads the digest history (the charts of /targets/<name>).
type Digests interface {
	LastDigest(ctx context.Context, key string) (*digest.Record, error)
}

// Change is one change of the run's Changes list (bot.Change).
type Change struct {
	Step string
	Text string
}

// Words are the engine's renderings of a run, which this package shows
// but does not compute (it does not import the engine): the composition
// root passes bot.RunMarkdown, bot.RunChanges and bot.JournalLine.
type Words struct {
	// Markdown is the post-mortem Markdown of `groundcrew runs show`.
	Markdown func(r *runmodel.Run, journal []runmodel.JournalEntry) string
	// Changes lists what the run changed (the Changes of its summary).
	Changes func(r *runmodel.Run, journal []runmodel.JournalEntry) []Change
	// JournalLine is one journal entry in words.
	JournalLine func(e runmodel.JournalEntry, r *runmodel.Run) string
	// Stopped points at the step a failed run stopped at, whose error the
	// page shows on that step (bot.RunStopped): the step's id and the
	// words, in the engine's Markdown ("failed at step 1/1 (Pause nope)").
	// ok is false when the run's error belongs to no step.
	Stopped func(r *runmodel.Run) (step, words string, ok bool)
}

// Target is a configured target and its digests.
type Target struct {
	Name string
	// Digests are the history keys of its digests (digest.Schedule: one
	// per schedule, and "now:<target>" for those asked with /runbook
	// digest), with how people name them.
	Digests []DigestRef
}

// DigestRef names one digest history.
type DigestRef struct {
	Key   string
	Label string // "#ci-ops at 0 8 * * * (Europe/Paris)"
}
