package scenario

import (
	"fmt"

	"github.com/groundcrew/groundcrew/adapters/concourse"
	"github.com/groundcrew/groundcrew/adapters/core"
	"github.com/groundcrew/groundcrew/adapters/postgres/pgsim"
	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Catalog returns a registry with every operation scenarios can call
// (core, Concourse and the simulated database), for linting runbooks
// without running them. Its operations must not be called.
func Catalog() (*opmodel.Registry, error) {
	cl, err := concourse.New(concourse.TargetConfig{Name: DefaultTarget, URL: "http://127.0.0.1:1"})
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	cc, err := concourse.NewProvider(map[string]*concourse.Client{DefaultTarget: cl}, concourse.ProviderOptions{})
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	return opmodel.NewRegistry(core.Provider{}, cc, pgsim.New(DefaultTarget, pgsim.DatabaseSpec{}, nil))
}
