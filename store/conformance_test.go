package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, o storetest.Options) storetest.Store {
		db, err := store.Open(filepath.Join(t.TempDir(), "gc.db"), store.Options{
			Timeout: time.Second, Retention: o.Retention, EventTTL: o.EventTTL, NoSync: true})
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	})
}
