package leader_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/leader"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store/pgstore"
	"github.com/groundcrew/groundcrew/store/pgstore/pgtest"
)

// replica is one process: its fenced store and its elector.
type replica struct {
	name    string
	db      *pgstore.DB
	el      *leader.Elector
	reg     *prometheus.Registry
	terms   atomic.Int32
	cancel  context.CancelFunc
	done    chan error
	leading chan int64 // the epoch at the start of each term
}

func start(t *testing.T, dsn, name string, lease func(pgstore.Lease) leader.Lease) *replica {
	t.Helper()
	db, err := pgstore.Open(context.Background(), dsn, pgstore.Options{Fenced: true})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	var l leader.Lease = db.Lease()
	if lease != nil {
		l = lease(db.Lease())
	}
	r := &replica{name: name, db: db, reg: prometheus.NewRegistry(), done: make(chan error, 1), leading: make(chan int64, 10)}
	r.el = leader.New(leader.Options{Lease: l, Holder: name, TTL: time.Second, Renew: 200 * time.Millisecond, Retry: 50 * time.Millisecond,
		OnEpoch: db.SetEpoch, Registerer: r.reg, Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- r.el.Run(ctx, func(ctx context.Context) error {
			r.terms.Add(1)
			r.leading <- r.el.Epoch()
			<-ctx.Done()
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func waitLeading(t *testing.T, r *replica, within time.Duration) int64 {
	t.Helper()
	select {
	case e := <-r.leading:
		return e
	case <-time.After(within):
		t.Fatalf("%s did not lead within %s", r.name, within)
		return 0
	}
}

func write(db *pgstore.DB, i int) error {
	return db.PutKV(context.Background(), fmt.Sprint("k", i), []byte("v"))
}

func TestElector_OneLeaderAndHandOver(t *testing.T) {
	dsn := pgtest.NewDatabase(t, nil)
	a := start(t, dsn, "a", nil)
	e1 := waitLeading(t, a, 3*time.Second)
	b := start(t, dsn, "b", nil)
	time.Sleep(300 * time.Millisecond)
	assert.True(t, a.el.Leading())
	assert.False(t, b.el.Leading(), "one leader")
	assert.Equal(t, "a", b.el.Current())
	require.NoError(t, write(a.db, 1))
	require.ErrorIs(t, write(b.db, 2), pgstore.ErrFenced, "a standby writes nothing")
	assert.Equal(t, 1.0, metric(t, a.reg, "groundcrew_leader"))
	assert.Equal(t, 0.0, metric(t, b.reg, "groundcrew_leader"))

	// Shutdown hands over: b leads well within a lease.
	start := time.Now()
	a.cancel()
	require.NoError(t, <-a.done)
	a.done <- nil
	e2 := waitLeading(t, b, 2*time.Second)
	assert.Less(t, time.Since(start), 500*time.Millisecond, "hand over, not expiry")
	assert.Greater(t, e2, e1, "every term has a new epoch")
	require.ErrorIs(t, write(a.db, 3), pgstore.ErrFenced)
	require.NoError(t, write(b.db, 4))
}

// stallable wraps a lease whose renewals can be made to hang (a paused
// process, or one cut off from the store).
type stallable struct {
	leader.Lease
	stalled atomic.Bool
}

func (s *stallable) Acquire(ctx context.Context, holder string, ttl time.Duration) (int64, bool, string, error) {
	if s.stalled.Load() {
		return 0, false, "", fmt.Errorf("cut off")
	}
	return s.Lease.Acquire(ctx, holder, ttl)
}

func (s *stallable) Renew(ctx context.Context, holder string, epoch int64, ttl time.Duration) (bool, error) {
	if s.stalled.Load() {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return s.Lease.Renew(ctx, holder, epoch, ttl)
}

func TestElector_StepsDownWhenItCannotRenewAndTheFenceHolds(t *testing.T) {
	dsn := pgtest.NewDatabase(t, nil)
	var sa *stallable
	a := start(t, dsn, "a", func(l pgstore.Lease) leader.Lease { sa = &stallable{Lease: l}; return sa })
	waitLeading(t, a, 3*time.Second)
	b := start(t, dsn, "b", nil)
	require.NoError(t, write(a.db, 1))

	sa.stalled.Store(true)
	// b takes over once a's lease expired in the store; a stops writing at
	// the latest when its own clock says the lease ran out.
	waitLeading(t, b, 3*time.Second)
	require.Eventually(t, func() bool { return !a.el.Leading() }, 2*time.Second, 20*time.Millisecond)
	assert.Empty(t, a.el.Current(), "cut off, a does not know who leads; it no longer says itself (/readyz: \"standby: a leads\")")
	require.ErrorIs(t, write(a.db, 2), pgstore.ErrFenced)
	require.NoError(t, write(b.db, 3))
	sa.stalled.Store(false)
	time.Sleep(300 * time.Millisecond)
	assert.False(t, a.el.Leading(), "a stays a standby while b renews")
	assert.Equal(t, "b", a.el.Current())
	assert.Equal(t, int32(1), a.terms.Load())
}

func TestElector_TakenOverLeaderStepsDownAtOnce(t *testing.T) {
	dsn := pgtest.NewDatabase(t, nil)
	a := start(t, dsn, "a", nil)
	waitLeading(t, a, 3*time.Second)
	// Someone else holds the lease now (as after a pause past the TTL).
	_, err := a.db.Pool().Exec(context.Background(), "update leader set holder = 'z', epoch = epoch + 1, expires_at = now() + interval '1 hour'")
	require.NoError(t, err)
	require.ErrorIs(t, write(a.db, 1), pgstore.ErrFenced, "the fence refuses before the elector even notices")
	require.Eventually(t, func() bool { return !a.el.Leading() }, time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(0), a.el.Epoch())
	assert.Equal(t, 2.0, metric(t, a.reg, "groundcrew_leader_changes_total"), "started and stopped leading")
	assert.Equal(t, 0.0, metric(t, a.reg, "groundcrew_leader"))
}

func TestElector_ConcurrentUpdatesAcrossATakeover(t *testing.T) {
	// Writers of the old leader racing a takeover: every write is either
	// before the takeover (epoch 1) or refused; none lands after it.
	dsn := pgtest.NewDatabase(t, nil)
	a := start(t, dsn, "a", nil)
	waitLeading(t, a, 3*time.Second)
	ctx := context.Background()
	require.NoError(t, a.db.CreateRun(ctx, &runmodel.Run{ID: "r-1", State: runmodel.RunRunning, CreatedAt: time.Now()}, nil))
	var wg sync.WaitGroup
	var ok, refused atomic.Int32
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := a.db.UpdateRun(ctx, "r-1", func(r *runmodel.Run, b *runmodel.Batch) error {
					r.Cursor++
					b.Note(runmodel.JournalEntry{Type: runmodel.JIntent})
					return nil
				})
				if err == nil {
					ok.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	_, err := a.db.Pool().Exec(ctx, "update leader set holder = 'z', epoch = epoch + 1, expires_at = now() + interval '1 hour'")
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wg.Wait()
	r, err := a.db.GetRun(ctx, "r-1")
	require.NoError(t, err)
	assert.Equal(t, int(ok.Load()), r.Cursor, "every accepted write is in, no refused one is")
	j, err := a.db.Journal(ctx, "r-1")
	require.NoError(t, err)
	assert.Len(t, j, int(ok.Load()))
	assert.Positive(t, refused.Load())
}

func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestElector_HeldUntil (#35.3): the lease fences outside calls on this
// process's monotonic clock: it is surely held until the start of the last
// successful renewal + TTL − margin, which moves on with every renewal,
// stops moving when renewals fail (before the store lets a standby take
// over), and is zero the instant this process steps down.
func TestElector_HeldUntil(t *testing.T) {
	dsn := pgtest.NewDatabase(t, nil)
	var sa *stallable
	a := start(t, dsn, "a", func(l pgstore.Lease) leader.Lease { sa = &stallable{Lease: l}; return sa })
	assert.True(t, a.el.HeldUntil().IsZero(), "a standby holds nothing")
	waitLeading(t, a, 3*time.Second)
	// TTL 1 s, margin TTL/5, renew every 200 ms.
	left := time.Until(a.el.HeldUntil())
	assert.Greater(t, left, 300*time.Millisecond)
	assert.LessOrEqual(t, left, 800*time.Millisecond, "TTL − margin at most")
	assert.Equal(t, 400*time.Millisecond, a.el.CallTimeout(), "TTL − margin − 2 × renew")
	first := a.el.HeldUntil()
	require.Eventually(t, func() bool { return a.el.HeldUntil().After(first) }, time.Second, 10*time.Millisecond, "renewals move it on")

	sa.stalled.Store(true)
	stalled := a.el.HeldUntil()
	time.Sleep(300 * time.Millisecond)
	assert.False(t, a.el.HeldUntil().After(stalled), "a renewal that does not come moves nothing")
	require.Eventually(t, func() bool { return !a.el.Leading() }, 2*time.Second, 10*time.Millisecond)
	assert.True(t, a.el.HeldUntil().IsZero(), "stepped down: no call may go out")
	b := start(t, dsn, "b", nil)
	waitLeading(t, b, 3*time.Second)
	assert.True(t, stalled.Before(time.Now()), "a's calls stopped before b led")
}
