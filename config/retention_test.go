package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetention(t *testing.T) {
	base := "chat: {platform: console}\ntargets: {sim: {simulator: {}}}\n"
	c, err := Parse("g.yaml", []byte(base+"retention: 30d\n"))
	require.NoError(t, err)
	assert.Equal(t, 30*24*time.Hour, time.Duration(c.Retention))
	c, err = Parse("g.yaml", []byte(base+"retention: 720h\n"))
	require.NoError(t, err)
	assert.Equal(t, 720*time.Hour, time.Duration(c.Retention))
	_, err = Parse("g.yaml", []byte(base+"retention: 3x\n"))
	require.ErrorContains(t, err, `"3x" is not a duration`)
}

func TestLoad_RefusesHugeFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "g.yaml")
	require.NoError(t, os.WriteFile(p, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600))
	_, err := Load(p)
	require.ErrorContains(t, err, "larger than 1024 KiB")
}
