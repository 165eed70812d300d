package runbooks

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestError_Format(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"full", &Error{File: "a.yaml", Line: 3, Column: 5, Msg: "bad"}, "a.yaml:3:5: bad"},
		{"line only", &Error{File: "a.yaml", Line: 3, Msg: "bad"}, "a.yaml:3: bad"},
		{"file only", &Error{File: "a.yaml", Msg: "bad"}, "a.yaml: bad"},
		{"message only", &Error{Msg: "bad"}, "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestErrorList(t *testing.T) {
	var empty ErrorList
	assert.NoError(t, empty.Err(), "an empty list is no error")

	list := ErrorList{
		{File: "b.yaml", Line: 1, Column: 1, Msg: "third"},
		{File: "a.yaml", Line: 9, Column: 1, Msg: "second"},
		{File: "a.yaml", Line: 2, Column: 7, Msg: "first"},
	}
	list.Sort()
	assert.Equal(t, "a.yaml:2:7: first\na.yaml:9:1: second\nb.yaml:1:1: third", list.Error())

	var got ErrorList
	require.True(t, errors.As(list.Err(), &got))
	assert.Len(t, got, 3)
}
