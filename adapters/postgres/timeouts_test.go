package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// While another session holds a lock on the table, a purge must give up
// within its lock_timeout (or statement_timeout, or the caller's context)
// with a message that says what to do, and change nothing.
func TestPurge_Locked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	demoTable := eventsTable(KindPipeline, w.demo)
	truncate := opmodel.Args{"team": "main", "pipeline": "demo"}
	older := opmodel.Args{"team": "main", "pipeline": "demo", "mode": "older_than", "days": 30}
	plans := map[string]opmodel.Plan{}
	for name, args := range map[string]opmodel.Args{"truncate": truncate, "older": older} {
		plan, err := opByName(t, w.provider(t, DatabaseConfig{}), OpPurge).Plan(ctx, call(args))
		require.NoError(t, err)
		plans[name] = plan
	}

	cases := []struct {
		name    string
		plan    string
		hold    func(t *testing.T) func()
		cfg     DatabaseConfig
		ctxWait time.Duration // cancel the call after this long (0: never)
		check   func(t *testing.T, err error)
	}{
		{
			name: "truncate while a reader holds the table",
			plan: "truncate",
			hold: func(t *testing.T) func() { return w.holdLock(t, demoTable, "ACCESS SHARE") },
			cfg:  DatabaseConfig{LockTimeout: 200 * time.Millisecond},
			check: func(t *testing.T, err error) {
				assert.True(t, errors.Is(err, ErrLockTimeout))
				assert.Contains(t, err.Error(), fmt.Sprintf("purge of %s on infra-prd: the table is locked by another session (lock_timeout 200ms); "+
					"try again when Concourse is quiet or scale concourse-web down (see the runbook); lock held by pid ", demoTable))
				assert.Contains(t, err.Error(), "idle in transaction for ")
			},
		},
		{
			name: "delete while a session holds a SHARE lock",
			plan: "older",
			hold: func(t *testing.T) func() { return w.holdLock(t, demoTable, "SHARE") },
			cfg:  DatabaseConfig{LockTimeout: 200 * time.Millisecond},
			check: func(t *testing.T, err error) {
				assert.True(t, errors.Is(err, ErrLockTimeout))
				assert.Contains(t, err.Error(), "the table is locked by another session (lock_timeout 200ms)")
			},
		},
		{
			name: "delete while Concourse updates one of the builds",
			plan: "older",
			hold: func(t *testing.T) func() { return w.holdRowLock(t, w.demoOld[1]) },
			cfg:  DatabaseConfig{LockTimeout: 200 * time.Millisecond},
			check: func(t *testing.T, err error) {
				assert.True(t, errors.Is(err, ErrLockTimeout))
			},
		},
		{
			name: "statement timeout fires first",
			plan: "truncate",
			hold: func(t *testing.T) func() { return w.holdLock(t, demoTable, "ACCESS SHARE") },
			cfg:  DatabaseConfig{LockTimeout: 10 * time.Second, StatementTimeout: 300 * time.Millisecond},
			check: func(t *testing.T, err error) {
				assert.True(t, errors.Is(err, ErrStatementTimeout))
				assert.False(t, errors.Is(err, ErrLockTimeout))
				assert.Contains(t, err.Error(), fmt.Sprintf("purge of %s on infra-prd: the statement ran longer than statement_timeout 300ms "+
					"and was cancelled, so its transaction changed nothing", demoTable))
				assert.Contains(t, err.Error(), "; lock held by pid ")
			},
		},
		{
			name:    "the caller gives up",
			plan:    "truncate",
			hold:    func(t *testing.T) func() { return w.holdLock(t, demoTable, "ACCESS SHARE") },
			cfg:     DatabaseConfig{LockTimeout: 10 * time.Second, StatementTimeout: 10 * time.Second},
			ctxWait: 300 * time.Millisecond,
			check: func(t *testing.T, err error) {
				assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
				assert.False(t, errors.Is(err, ErrStatementTimeout))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			release := tc.hold(t)
			op := opByName(t, w.provider(t, tc.cfg), OpPurge)
			callCtx := ctx
			if tc.ctxWait > 0 {
				var cancel context.CancelFunc
				callCtx, cancel = context.WithTimeout(ctx, tc.ctxWait)
				defer cancel()
			}
			start := time.Now()
			res, err := op.Apply(callCtx, call(nil), plans[tc.plan])
			elapsed := time.Since(start)
			release()
			require.Error(t, err)
			assert.Less(t, elapsed, 3*time.Second, "gave up in time")
			tc.check(t, err)
			assert.True(t, res.Warn)
			require.Len(t, res.Items, 1)
			assert.Equal(t, opmodel.OutcomeFailed, res.Items[0].Outcome)
			assert.Equal(t, err.Error(), res.Items[0].Reason)

			assert.Equal(t, w.demoRows, w.count(t, demoTable, ""), "nothing purged")
			assert.Equal(t, []string{"", "", ""}, w.reapTimes(t, w.demoOld...), "nothing reaped")
			assert.Eventually(t, func() bool {
				return w.int(t, `SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = $1::regclass`, demoTable) == 0
			}, 5*time.Second, 50*time.Millisecond, "no lock request left waiting")
		})
	}
}

func TestTableSizes_Locked(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	demoTable := eventsTable(KindPipeline, w.demo)
	release := w.holdLock(t, demoTable, "ACCESS EXCLUSIVE")
	defer release()
	op := opByName(t, w.provider(t, DatabaseConfig{LockTimeout: 200 * time.Millisecond}), OpTableSizes)
	_, err := op.Do(context.Background(), call(nil))
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrLockTimeout))
	assert.Contains(t, err.Error(), "reading table sizes on infra-prd: the table is locked by another session (lock_timeout 200ms)")
}
