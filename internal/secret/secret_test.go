package secret

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSecret_NeverPrints(t *testing.T) {
	s := Secret("hunter2")
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v %s %#v", s, s, s), fmt.Sprintf("%+v", struct{ P Secret }{s})} {
		assert.NotContains(t, out, "hunter2")
	}
	b, err := json.Marshal(struct{ P Secret }{s})
	require.NoError(t, err)
	assert.NotContains(t, string(b), "hunter2")
	assert.Equal(t, "hunter2", s.Value())
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(f, []byte("from-file\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))

	got, err := Resolve("password", "", f, "")
	require.NoError(t, err)
	assert.Equal(t, "from-file", got.Value())

	got, err = Resolve("password", "inline", "", "")
	require.NoError(t, err)
	assert.Equal(t, "inline", got.Value())

	_, err = Resolve("password", "inline", f, "")
	assert.ErrorIs(t, err, ErrConflict)

	_, err = Resolve("password", "", filepath.Join(dir, "missing"), "")
	assert.ErrorContains(t, err, "password_file")

	_, err = Resolve("password", "", empty, "")
	assert.ErrorContains(t, err, "is empty")

	t.Setenv("GC_TEST_PW", "from-env")
	got, err = Resolve("password", "", f, "GC_TEST_PW")
	require.NoError(t, err)
	assert.Equal(t, "from-env", got.Value())
}
