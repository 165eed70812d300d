package concourse

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildEvents_RecordedStreams(t *testing.T) {
	rs := newReplayServer(t, "build_events_succeeded", "build_events_failed", "build_events_no_workers", "build_events_aborted")
	c := anonClient(t, rs.URL)
	tests := []struct {
		id     int
		types  []string
		status string
	}{
		{1, []string{"status", "initialize-task", "selected-worker", "start-task", "log", "log", "finish-task", "status"}, "succeeded"},
		{2, []string{"status", "initialize-task", "selected-worker", "start-task", "finish-task", "status"}, "failed"},
		{846, []string{"status", "initialize-task", "error", "status"}, "errored"},
		{3, []string{"status"}, "aborted"},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			evs, err := c.AllBuildEvents(context.Background(), tt.id)
			require.NoError(t, err)
			var types []string
			for i, e := range evs {
				types = append(types, e.Type)
				assert.Equal(t, i, e.Seq)
			}
			assert.Equal(t, tt.types, types)
			assert.Equal(t, tt.status, evs[len(evs)-1].Status)
		})
	}

	t.Run("typed fields", func(t *testing.T) {
		evs, err := c.AllBuildEvents(context.Background(), 1)
		require.NoError(t, err)
		assert.Equal(t, "worker-0", evs[2].SelectedWorker)
		assert.Equal(t, "hello from houdini\r\n", evs[4].Payload)
		assert.Equal(t, Origin{ID: "6b0c76e1", Source: "stdout"}, evs[4].Origin)
		require.NotNil(t, evs[6].ExitStatus)
		assert.Equal(t, 0, *evs[6].ExitStatus)
		evs, err = c.AllBuildEvents(context.Background(), 846)
		require.NoError(t, err)
		assert.Equal(t, "no workers satisfying: platform 'linux', version: '3.0'", evs[2].Message)
	})
}

func TestScanBuildEvents_RecordedStreams(t *testing.T) {
	rs := newReplayServer(t, "build_events_failed", "build_events_no_workers")
	c := anonClient(t, rs.URL)
	ms, err := c.ScanBuildEvents(context.Background(), 2, regexp.MustCompile(regexp.QuoteMeta("image fetching failed")), 4)
	require.NoError(t, err)
	assert.Empty(t, ms, "the text is only in the task's config, not in its output")

	ms, err = c.ScanBuildEvents(context.Background(), 846, regexp.MustCompile("no workers"), 2)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, 846, ms[0].BuildID)
	assert.Equal(t, "6b0c7d2b", ms[0].Line.Origin.ID)
	assert.Empty(t, ms[0].Before)
	assert.Equal(t, []string{"errored"}, ms[0].After)
}

func logEvent(origin, payload string) Event {
	return Event{Type: EventLog, Origin: Origin{ID: origin, Source: "stdout"}, Payload: payload}
}

func TestScanEvents_SplitsAndJoinsLogChunks(t *testing.T) {
	evs := []Event{
		{Type: EventStatus, Status: StatusStarted},
		logEvent("a", "fetching image\r\nERRO[0000] download "),
		logEvent("a", "failed: MANIFEST_UNKNOWN\n"),
		{Type: EventError, Message: "image fetching failed", Origin: Origin{ID: "a"}},
		{Type: EventStatus, Status: StatusErrored},
	}
	re := regexp.MustCompile("download failed")
	ms := ScanEvents(7, evs, re, 1)
	require.Len(t, ms, 1)
	assert.Equal(t, "ERRO[0000] download failed: MANIFEST_UNKNOWN", ms[0].Line.Text)
	assert.Equal(t, []string{"fetching image"}, ms[0].Before)
	assert.Equal(t, []string{"image fetching failed"}, ms[0].After)

	ms = ScanEvents(7, evs, regexp.MustCompile("errored"), 3)
	assert.Empty(t, ms, "status lines are context, never matches")

	ms = ScanEvents(7, []Event{logEvent("a", "no newline at the end: image fetching failed")}, regexp.MustCompile("image fetching"), 0)
	require.Len(t, ms, 1)
	assert.Empty(t, ms[0].Before)
}

func TestParseEvent_RejectsBadData(t *testing.T) {
	_, err := parseEvent("3", []byte("{not json"))
	assert.ErrorContains(t, err, "parsing build event 3")
	raw, _ := json.Marshal(map[string]any{"event": "log", "version": "5.1", "data": "oops"})
	_, err = parseEvent("4", raw)
	assert.ErrorContains(t, err, "parsing log event 4")
}

func TestTaskSteps_NestedPlans(t *testing.T) {
	var jc JobConfig
	require.NoError(t, json.Unmarshal([]byte(`{"name":"deploy","plan":[
		{"get":"src"},
		{"task":"unit"},
		{"in_parallel":[{"task":"lint"},{"do":[{"task":"build"},{"task":"unit"}]}]},
		{"in_parallel":{"steps":[{"task":"package"}],"limit":2}},
		{"aggregate":[{"task":"legacy"}]},
		{"try":{"task":"smoke"}},
		{"put":"release","on_failure":{"task":"notify"},"ensure":{"do":[{"task":"cleanup"}]}},
		{"task":"apply","on_success":{"task":"announce"},"on_error":{"task":"page"},"on_abort":{"task":"unlock"}}
	]}`), &jc))
	assert.Equal(t, []string{"unit", "lint", "build", "package", "legacy", "smoke", "notify", "cleanup", "apply", "announce", "page", "unlock"}, jc.TaskSteps())
}
