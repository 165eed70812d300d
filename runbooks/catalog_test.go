package runbooks

import (
	"sort"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// fakeCatalog is the operation catalog the tests load runbooks against.
type fakeCatalog map[string]runbookmodel.OpInfo

func (c fakeCatalog) Lookup(name string) (runbookmodel.OpInfo, bool) {
	op, ok := c[name]
	return op, ok
}

// Names implements OpNamer.
func (c fakeCatalog) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// lookupOnly hides Names, for testing catalogs without it.
type lookupOnly struct{ Catalog }

func testCatalog() fakeCatalog {
	return fakeCatalog{
		"core.echo":    {Name: "core.echo", Class: "read", Args: []runbookmodel.ArgInfo{{Name: "message", Required: true}}},
		"core.sleep":   {Name: "core.sleep", Class: "read", Args: []runbookmodel.ArgInfo{{Name: "duration", Required: true}}},
		"fake.status":  {Name: "fake.status", Class: "read", Args: []runbookmodel.ArgInfo{{Name: "name"}}},
		"fake.write":   {Name: "fake.write", Class: "write", Args: []runbookmodel.ArgInfo{{Name: "name", Required: true}, {Name: "note"}}},
		"fake.destroy": {Name: "fake.destroy", Class: "destructive", Args: []runbookmodel.ArgInfo{{Name: "name", Required: true}, {Name: "force"}}},
	}
}
