package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

func TestIncidentsGroupCommitIsolatesFailures(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "gc.db"), Options{})
	require.NoError(t, err)
	defer db.Close()
	ctx := context.Background()
	boom := errors.New("boom")
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", i)
			_, err := db.UpsertIncident(ctx, key, func(cur *incident.Incident) (*incident.Incident, error) {
				if i%10 == 3 {
					return nil, boom
				}
				return &incident.Incident{ID: fmt.Sprintf("i-%d", i), Key: key, State: incident.StateOpen, OpenedAt: time.Now(),
					Root: chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: fmt.Sprint(i)}}, nil
			})
			if i%10 == 3 {
				assert.ErrorIs(t, err, boom)
			} else {
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	all, err := db.ListIncidents(ctx, incident.Query{Open: true})
	require.NoError(t, err)
	assert.Len(t, all, 45, "the failing writes take nothing else down")

	in, err := db.IncidentByMessage(ctx, chatmodel.MessageRef{Platform: "slack", Channel: "C1", ID: "7"})
	require.NoError(t, err)
	assert.Equal(t, "i-7", in.ID)
	_, err = db.UpdateIncident(ctx, "i-7", func(in *incident.Incident) error { in.State = incident.StateResolved; return nil })
	require.NoError(t, err)
	open, _ := db.ListIncidents(ctx, incident.Query{Open: true})
	assert.Len(t, open, 44, "resolved incidents leave the open index")
	_, err = db.GetIncident(ctx, "i-nope")
	assert.ErrorIs(t, err, incident.ErrNotFound)
	_, err = db.UpdateIncident(ctx, "i-nope", func(*incident.Incident) error { return nil })
	assert.ErrorIs(t, err, incident.ErrNotFound)
}
