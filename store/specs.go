package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
)

// specCache maps runbook specs to their content hash and back. A run's
// spec never changes once the run started, and the engine only reads it,
// so runs of the same runbook version share one decoded spec: a store of
// 100,000 runs holds each runbook version once, and reading a run does not
// decode its runbook again.
type specCache struct {
	mu    sync.Mutex
	byRef map[string]*runbookmodel.Runbook
	refOf map[*runbookmodel.Runbook]string
}

func newSpecCache() *specCache {
	return &specCache{byRef: map[string]*runbookmodel.Runbook{}, refOf: map[*runbookmodel.Runbook]string{}}
}

// put stores spec in the specs bucket (once) and returns its reference.
func (c *specCache) put(tx *bolt.Tx, spec *runbookmodel.Runbook) (string, error) {
	c.mu.Lock()
	ref, ok := c.refOf[spec]
	c.mu.Unlock()
	var data []byte
	if !ok {
		var err error
		if data, err = json.Marshal(spec); err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		ref = hex.EncodeToString(sum[:16])
		c.mu.Lock()
		c.refOf[spec] = ref
		c.mu.Unlock()
	}
	b := tx.Bucket(bSpecs)
	if b.Get([]byte(ref)) != nil {
		return ref, nil
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(spec); err != nil {
			return "", err
		}
	}
	return ref, b.Put([]byte(ref), data)
}

// get returns the spec with the reference, decoding it once.
func (c *specCache) get(tx *bolt.Tx, ref string) (*runbookmodel.Runbook, error) {
	c.mu.Lock()
	spec, ok := c.byRef[ref]
	c.mu.Unlock()
	if ok {
		return spec, nil
	}
	raw := tx.Bucket(bSpecs).Get([]byte(ref))
	if raw == nil {
		return nil, fmt.Errorf("its runbook %s is missing from the store", ref)
	}
	spec = &runbookmodel.Runbook{}
	if err := json.Unmarshal(raw, spec); err != nil {
		return nil, fmt.Errorf("decoding runbook %s: %w", ref, err)
	}
	c.mu.Lock()
	if prev, ok := c.byRef[ref]; ok {
		spec = prev
	} else {
		c.byRef[ref] = spec
		c.refOf[spec] = ref
	}
	c.mu.Unlock()
	return spec, nil
}
