package runbooks

import (
	"errors"
	"testing"

	"github.com/groundcrew/groundcrew/model/runbookmodel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func paramsRunbook() *runbookmodel.Runbook {
	return &runbookmodel.Runbook{Name: "prune", Params: []runbookmodel.Param{
		{Name: "worker", Description: "the worker to prune", Required: true, Pattern: "worker-[0-9]+"},
		{Name: "mode", Enum: []string{"soft", "hard"}, Default: "soft"},
		{Name: "reason"},
	}}
}

func TestValidateParams(t *testing.T) {
	tests := []struct {
		name  string
		given map[string]string
		want  map[string]string
	}{
		{"defaults applied", map[string]string{"worker": "worker-1"},
			map[string]string{"worker": "worker-1", "mode": "soft", "reason": ""}},
		{"all given", map[string]string{"worker": "worker-1", "mode": "hard", "reason": "stuck"},
			map[string]string{"worker": "worker-1", "mode": "hard", "reason": "stuck"}},
		{"target is ignored", map[string]string{"worker": "worker-1", "target": "infra-prd"},
			map[string]string{"worker": "worker-1", "mode": "soft", "reason": ""}},
		{"empty counts as not given", map[string]string{"worker": "worker-1", "mode": " "},
			map[string]string{"worker": "worker-1", "mode": "soft", "reason": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValidateParams(paramsRunbook(), tt.given)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateParams_Errors(t *testing.T) {
	tests := []struct {
		name  string
		given map[string]string
		want  []string
	}{
		{"unknown with hint", map[string]string{"worker": "worker-1", "wroker": "x"},
			[]string{`unknown parameter "wroker"; did you mean "worker"? params: worker, mode, reason, target`}},
		{"missing required", map[string]string{},
			[]string{`missing required parameter "worker" (the worker to prune); add worker=…`}},
		{"pattern is anchored", map[string]string{"worker": "my-worker-1"},
			[]string{`parameter "worker": "my-worker-1" does not match the pattern worker-[0-9]+`}},
		{"enum", map[string]string{"worker": "worker-1", "mode": "herd"},
			[]string{`parameter "mode": "herd" is not one of soft, hard; did you mean "hard"?`}},
		{"all at once", map[string]string{"mode": "x", "a": "1", "b": "2"},
			[]string{
				`unknown parameter "a"; params: worker, mode, reason, target`,
				`unknown parameter "b"; params: worker, mode, reason, target`,
				`missing required parameter "worker" (the worker to prune); add worker=…`,
				`parameter "mode": "x" is not one of soft, hard`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ValidateParams(paramsRunbook(), tt.given)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.True(t, errors.Is(err, ErrInvalidParams))
			var pe *ParamError
			assert.True(t, errors.As(err, &pe))
			var msgs []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				msgs = append(msgs, e.Error())
			}
			assert.Equal(t, tt.want, msgs)
		})
	}
}
