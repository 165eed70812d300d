package opmodel

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnchangedKeepsTheErrorAndMatchesErrUnchanged(t *testing.T) {
	notFound := errors.New("not found")
	err := Unchanged(fmt.Errorf("pipeline main/nope: %w", notFound))
	assert.EqualError(t, err, "pipeline main/nope: not found")
	assert.ErrorIs(t, err, notFound)
	assert.ErrorIs(t, err, ErrUnchanged)
	assert.NotErrorIs(t, notFound, ErrUnchanged)
	assert.NoError(t, Unchanged(nil))
}
