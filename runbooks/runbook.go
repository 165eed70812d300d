// Package runbooks defines the groundcrew runbook format, its loader with
// line-numbered validation errors, and the built-in library.
//
// The package is pure: it reads files from an fs.FS and never talks to chat,
// Concourse or the store. Which operations exist (and whether they are
// destructive) is supplied by the caller through a Catalog, so the engine,
// not the runbook author, owns that knowledge. The types it produces are
// the model's (model/runbookmodel).
package runbooks

import "github.com/groundcrew/groundcrew/model/runbookmodel"

// Catalog tells the loader which operations exist. The engine's registry
// implements it.
type Catalog interface {
	Lookup(name string) (runbookmodel.OpInfo, bool)
}
