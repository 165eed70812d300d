package delivery

import (
	"context"
	"sort"
	"sync"

	"github.com/groundcrew/groundcrew/model/runmodel"
)

// memoryStore keeps the queue in memory: for an Outbox built without a
// store (a subsystem used on its own, tests). Nothing survives a restart.
type memoryStore struct {
	mu    sync.Mutex
	items map[string]runmodel.OutboxItem
}

func (s *memoryStore) PutOutbox(_ context.Context, it runmodel.OutboxItem) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[it.ID] = it
	return nil
}

func (s *memoryStore) ListOutbox(context.Context) ([]runmodel.OutboxItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]runmodel.OutboxItem, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, it)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (s *memoryStore) DeleteOutbox(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, id)
	return nil
}
