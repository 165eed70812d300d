package config

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const storeTargets = "targets:\n  infra-prd: {url: https://ci.example.com, username: gc, password: x}\n"

func TestStore_PathIsBbolt(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(write(t, dir, "g.yaml", "store: data/gc.db\n"+storeTargets))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "data/gc.db"), c.Store)
	assert.False(t, c.PostgresStore())
	assert.Equal(t, c.Store+".sock", c.Server.AdminSocket)

	c, err = Load(write(t, dir, "h.yaml", storeTargets))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "groundcrew.db"), c.Store, "the embedded default is unchanged")
}

func TestStore_PostgresFromFileOrEnv(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "store-dsn", "postgres://gc:s3cret@db:5432/groundcrew\n")
	c, err := Load(write(t, dir, "g.yaml", "store:\n  postgres: {dsn_file: store-dsn}\n"+storeTargets))
	require.NoError(t, err)
	require.True(t, c.PostgresStore())
	assert.Equal(t, "postgres://gc:s3cret@db:5432/groundcrew", c.StorePostgres.DSN.Value())
	assert.Equal(t, "off", c.Server.AdminSocket, "commands read PostgreSQL directly")
	assert.NotContains(t, fmt.Sprintf("%+v %+v", c, *c.StorePostgres), "s3cret")

	t.Setenv(EnvStoreDSN, "postgres://gc@env/groundcrew")
	c, err = Load(write(t, dir, "h.yaml", storeTargets))
	require.NoError(t, err)
	require.True(t, c.PostgresStore(), "GROUNDCREW_STORE_DSN alone selects PostgreSQL")
	assert.Equal(t, "postgres://gc@env/groundcrew", c.StorePostgres.DSN.Value())
}

func TestStore_PostgresErrors(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"no dsn":       "store: {postgres: {}}\n",
		"missing file": "store: {postgres: {dsn_file: nope}}\n",
		"unknown key":  "store: {postgres: {dsn_fil: x}}\n",
		"both":         "store: {path: a.db, postgres: {dsn_file: x}}\n",
		"a list":       "store: [a]\n",
	} {
		_, err := Load(write(t, dir, "g.yaml", body+storeTargets))
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "store", name)
	}
}

// store: postgres://… (and GROUNDCREW_STORE=postgres://…) is a PostgreSQL
// store, not a bbolt file called "postgres:"; its password is never printed.
func TestStore_PostgresURLAsScalar(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{"postgres://gc:s3cret@db:5432/groundcrew", "postgresql://gc:s3cret@db/groundcrew?sslmode=require"} {
		c, err := Load(write(t, dir, "g.yaml", "store: "+v+"\n"+storeTargets))
		require.NoError(t, err, v)
		require.True(t, c.PostgresStore(), v)
		assert.Equal(t, v, c.StorePostgres.DSN.Value())
		assert.Equal(t, "off", c.Server.AdminSocket)
		assert.NotContains(t, c.Store, "postgres", "no bbolt file is named after the URL")
		assert.NotContains(t, fmt.Sprintf("%+v %+v", c, *c.StorePostgres), "s3cret")
	}

	t.Setenv("GROUNDCREW_STORE", "postgres://gc:s3cret@env/groundcrew")
	c, err := Load(write(t, dir, "h.yaml", storeTargets))
	require.NoError(t, err)
	require.True(t, c.PostgresStore())
	assert.Equal(t, "postgres://gc:s3cret@env/groundcrew", c.StorePostgres.DSN.Value())
}

// What serve would refuse at start, config check refuses: a DSN that does
// not parse (without printing its password), and a URL of another scheme
// (a typo) that would otherwise become a bbolt file named after it.
func TestStore_BadURLsAreRefused(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(write(t, dir, "g.yaml", "store: postgres://gc:s3cret@db/groundcrew?sslmode=bogus\n"+storeTargets))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "store.postgres.dsn")
	assert.Contains(t, err.Error(), "sslmode is invalid")
	assert.NotContains(t, err.Error(), "s3cret")

	_, err = Load(write(t, dir, "h.yaml", "store: postgress://gc:s3cret@db/groundcrew\n"+storeTargets))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `line 1: `)
	assert.Contains(t, err.Error(), `store: "postgress://…" is neither a bbolt file path nor a postgres://`)
	assert.NotContains(t, err.Error(), "s3cret")
}
