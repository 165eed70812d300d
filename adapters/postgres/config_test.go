package postgres

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const secretPW = "s3cr3t-Pa55"

func TestDatabaseConfig_RedactsPassword(t *testing.T) {
	cases := []struct {
		name string
		dsn  string
		want string
	}{
		{"url", "postgres://concourse:" + secretPW + "@db.infra:5432/concourse?sslmode=require", "concourse@db.infra:5432/concourse"},
		{"key value", "host=db.infra port=5433 user=concourse password=" + secretPW + " dbname=atc", "concourse@db.infra:5433/atc"},
		{"invalid", "postgres://concourse:" + secretPW + "@db.infra:notaport/concourse", "<invalid dsn>"},
		{"empty", "", "<none>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DatabaseConfig{DSN: tc.dsn, LockTimeout: 2 * time.Second}
			var logs bytes.Buffer
			slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "db", cfg)
			for _, out := range []string{
				cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg),
				//lint:ignore S1025 every formatting path of the config is what is tested
				fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s", &cfg), logs.String(),
			} {
				assert.NotContains(t, out, secretPW)
				assert.Contains(t, out, tc.want)
			}
			assert.Contains(t, cfg.String(), "lock_timeout:2s")
			assert.Contains(t, cfg.String(), "statement_timeout:30s", "defaults shown")
		})
	}
}

func TestDatabaseConfig_Validate(t *testing.T) {
	good := "postgres://concourse:" + secretPW + "@db:5432/concourse"
	cases := []struct {
		name    string
		cfg     DatabaseConfig
		wantErr string
	}{
		{"ok", DatabaseConfig{DSN: good}, ""},
		{"ok with timeouts", DatabaseConfig{DSN: good, StatementTimeout: time.Minute, LockTimeout: time.Second}, ""},
		{"empty", DatabaseConfig{}, "dsn is empty"},
		{"unparsable", DatabaseConfig{DSN: "postgres://concourse:" + secretPW + "@db:port/x"}, "not a valid PostgreSQL connection string"},
		{"negative", DatabaseConfig{DSN: good, LockTimeout: -time.Second}, "lock_timeout: -1s is negative"},
		{"too small", DatabaseConfig{DSN: good, StatementTimeout: time.Microsecond}, "statement_timeout: 1µs is below 1ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), secretPW)
			for e := err; e != nil; e = errors.Unwrap(e) {
				assert.NotContains(t, e.Error(), secretPW, "no wrapped error may carry the DSN")
			}
		})
	}
}

func TestDatabaseConfig_YAMLAndDefaults(t *testing.T) {
	var cfg DatabaseConfig
	require.NoError(t, yaml.Unmarshal([]byte("dsn: postgres://u@h/db\nstatement_timeout: 1m\nlock_timeout: 2s\n"), &cfg))
	assert.Equal(t, "postgres://u@h/db", cfg.DSN)
	assert.Equal(t, time.Minute, cfg.StatementTimeout)
	assert.Equal(t, 2*time.Second, cfg.LockTimeout)
	assert.Zero(t, cfg.ConnectTimeout)

	d := cfg.WithDefaults()
	assert.Equal(t, time.Minute, d.StatementTimeout, "set values stay")
	assert.Equal(t, DefaultConnectTimeout, d.ConnectTimeout)
	assert.Equal(t, DefaultLockTimeout, DatabaseConfig{}.WithDefaults().LockTimeout)
	assert.Equal(t, DefaultStatementTimeout, DatabaseConfig{}.WithDefaults().StatementTimeout)
}

func TestDatabaseConfig_PoolConfig(t *testing.T) {
	t.Run("defaults applied", func(t *testing.T) {
		pc, err := DatabaseConfig{DSN: "postgres://u@h/db"}.poolConfig()
		require.NoError(t, err)
		assert.Equal(t, DefaultConnectTimeout, pc.ConnConfig.ConnectTimeout)
		assert.Equal(t, "groundcrew", pc.ConnConfig.RuntimeParams["application_name"])
	})
	t.Run("dsn wins", func(t *testing.T) {
		pc, err := DatabaseConfig{DSN: "postgres://u@h/db?connect_timeout=9&application_name=ops", ConnectTimeout: time.Second}.poolConfig()
		require.NoError(t, err)
		assert.Equal(t, 9*time.Second, pc.ConnConfig.ConnectTimeout)
		assert.Equal(t, "ops", pc.ConnConfig.RuntimeParams["application_name"])
	})
}

func TestNew_ValidatesEveryTarget(t *testing.T) {
	_, err := New(Options{Databases: map[string]DatabaseConfig{
		"ok":     {DSN: "postgres://u@h/db"},
		"broken": {DSN: "postgres://u:" + secretPW + "@h:x/db"},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "targets.broken.database: dsn is not a valid")
	assert.NotContains(t, err.Error(), secretPW)
}

func TestMS(t *testing.T) {
	assert.Equal(t, "5000", ms(5*time.Second))
	assert.Equal(t, "1", ms(time.Microsecond), "never 0, which would disable the timeout")
	assert.Equal(t, "0", ms(0))
}

func TestReadDSNFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "dsn")
	require.NoError(t, os.WriteFile(good, []byte("  postgres://u:"+secretPW+"@h/db\n"), 0o600))
	dsn, err := ReadDSNFile(good)
	require.NoError(t, err)
	assert.Equal(t, "postgres://u:"+secretPW+"@h/db", dsn)

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	_, err = ReadDSNFile(empty)
	assert.ErrorContains(t, err, "is empty")

	_, err = ReadDSNFile(filepath.Join(dir, "missing"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))
}
