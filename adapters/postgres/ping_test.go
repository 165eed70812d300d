package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

func TestOps_Registry(t *testing.T) {
	p, err := New(Options{})
	require.NoError(t, err)
	reg, err := opmodel.NewRegistry(p)
	require.NoError(t, err, "the engine accepts the operations")
	classes := map[string]opmodel.Class{}
	for _, op := range reg.List() {
		classes[op.Name] = op.Class
	}
	assert.Equal(t, map[string]opmodel.Class{
		OpPing:       opmodel.ClassRead,
		OpTableSizes: opmodel.ClassRead,
		OpPurge:      opmodel.ClassDestructive,
	}, classes)
	purge, _ := reg.Get(OpPurge)
	assert.Equal(t, opmodel.OwnerTeam, purge.Owner, "a pipeline's or a team's logs are always the team's")
	info, ok := reg.Lookup(OpPurge)
	require.True(t, ok)
	assert.Equal(t, "team", info.Args[0].Name)
	assert.True(t, info.Args[0].Required)
}

func TestOps_TargetWithoutDatabase(t *testing.T) {
	p, err := New(Options{Databases: map[string]DatabaseConfig{"other": {DSN: "postgres://u@h/db"}}})
	require.NoError(t, err)
	defer p.Close()
	ctx := context.Background()
	c := opmodel.Call{Target: "infra-prd", Args: opmodel.Args{"team": "main", "pipeline": "demo"}}
	errs := map[string]error{}
	_, errs[OpPing] = opByName(t, p, OpPing).Do(ctx, c)
	_, errs[OpTableSizes] = opByName(t, p, OpTableSizes).Do(ctx, c)
	_, errs[OpPurge] = opByName(t, p, OpPurge).Plan(ctx, c)
	_, errs[OpPurge+" apply"] = opByName(t, p, OpPurge).Apply(ctx, c, opmodel.Plan{Op: OpPurge, Target: "infra-prd",
		Items: []opmodel.PlanItem{{Kind: "table", ID: "pipeline_build_events_1",
			Attrs: map[string]string{"scope": "pipeline", "team": "main", "pipeline": "demo", "pipeline_id": "1", "mode": "truncate"}}}})
	for name, err := range errs {
		t.Run(name, func(t *testing.T) {
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrNoDatabase))
			assert.Equal(t, "target infra-prd has no database configured: set targets.infra-prd.database.dsn_file", err.Error())
		})
	}
}

func TestPing(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	p := db.provider(t, DatabaseConfig{})
	res, err := opByName(t, p, OpPing).Do(context.Background(), call(nil))
	require.NoError(t, err)
	data, ok := res.Data.(PingResult)
	require.True(t, ok)
	assert.Equal(t, db.name, data.Database)
	assert.Equal(t, "postgres", data.User)
	assert.False(t, data.InRecovery)
	assert.True(t, data.ConcourseSchema)
	assert.Positive(t, data.DatabaseBytes)
	assert.NotEmpty(t, data.ServerVersion)
	assert.False(t, res.Warn)
	assert.Contains(t, res.Summary, "connected to postgres@")
	assert.Contains(t, res.Summary, "/"+db.name+" (PostgreSQL ")
	_, err = json.Marshal(res.Data)
	require.NoError(t, err)

	t.Run("not a Concourse database", func(t *testing.T) {
		u := testServerURL(t)
		p := mustProvider(t, DatabaseConfig{DSN: u.String()})
		res, err := opByName(t, p, OpPing).Do(context.Background(), call(nil))
		require.NoError(t, err)
		assert.True(t, res.Warn)
		assert.Contains(t, res.Summary, "has no Concourse tables")
	})
}

func mustProvider(t *testing.T, cfg DatabaseConfig) *Provider {
	t.Helper()
	p, err := New(Options{Databases: map[string]DatabaseConfig{testTarget: cfg}})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func TestPing_ConnectionFailures(t *testing.T) {
	t.Parallel()
	server := testServerURL(t)
	with := func(mod func(u *url.URL)) string {
		u := *server
		mod(&u)
		return u.String()
	}
	// A listener that accepts and never answers: connect_timeout must fire.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	// A port nothing listens on.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedAddr := closed.Addr().String()
	require.NoError(t, closed.Close())

	cases := []struct {
		name string
		dsn  string
		kind error
		want string
	}{
		{"unknown role", with(func(u *url.URL) { u.User = url.UserPassword("no_such_role_gc", secretPW) }),
			ErrAuth, `database ping on infra-prd: PostgreSQL at ` + server.Host + ` refused user "no_such_role_gc"`},
		{"missing database", with(func(u *url.URL) { u.Path = "/no_such_db_gc" }),
			ErrDatabaseMissing, `database "no_such_db_gc" does not exist on ` + server.Host},
		{"connection refused", with(func(u *url.URL) { u.Host = refusedAddr; u.User = url.UserPassword("postgres", secretPW) }),
			ErrUnreachable, "nothing accepts connections at " + refusedAddr + " (connection refused)"},
		{"connect timeout", with(func(u *url.URL) { u.Host = silent.Addr().String(); u.User = url.UserPassword("postgres", secretPW) }),
			ErrConnectTimeout, "no answer from " + silent.Addr().String() + " within connect_timeout 300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := mustProvider(t, DatabaseConfig{DSN: tc.dsn, ConnectTimeout: 300 * time.Millisecond})
			start := time.Now()
			_, err := opByName(t, p, OpPing).Do(context.Background(), call(nil))
			require.Error(t, err)
			assert.Less(t, time.Since(start), 5*time.Second)
			assert.True(t, errors.Is(err, tc.kind), "got %v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), secretPW)
		})
	}
}
