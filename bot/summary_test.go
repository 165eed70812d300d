package bot_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/bot"
	"github.com/groundcrew/groundcrew/bot/bottest"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

var update = flag.Bool("update", false, "rewrite golden files")

var runIDs = regexp.MustCompile(`\br-[0-9a-z]{4,}\b`)

// golden compares got with testdata/summaries/<name>.golden; -update rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = runIDs.ReplaceAllString(got, "r-XXXX")
	p := filepath.Join("testdata", "summaries", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test ./bot -run TestSummary -update to create the golden file")
	if string(want) != got {
		_ = os.WriteFile(p+".act", []byte(got), 0o644)
	}
	assert.Equal(t, string(want), got, "golden %s differs (actual written to %s.act)", name, p)
}

func summaryOf(t *testing.T, h *harness) string {
	r := h.onlyRun()
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	m := h.eng.Summary(r, j)
	return m.Text + "\n---\n" + m.Detail + "\n"
}

func TestSummary_Golden(t *testing.T) {
	cases := []struct {
		name  string
		world func() *bottest.World
		opts  func(*bot.Options)
		play  func(h *harness)
	}{
		{"success", stalledWorld, nil, func(h *harness) {
			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			h.clock.Advance(3 * 60e9)
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
			h.react(alice, h.gateRef(), chatmodel.IntentApprove)
			h.clock.Advance(60e9)
			h.react(carol, h.gateRef(), chatmodel.IntentApprove)
		}},
		{"failure", func() *bottest.World {
			w := stalledWorld()
			w.FailApply = errString("infra-prd: prune worker \"w-0\": 500 Internal Server Error")
			return w
		}, nil, func(h *harness) {
			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
			h.react(carol, h.gateRef(), chatmodel.IntentApprove)
		}},
		{"rejection", stalledWorld, nil, func(h *harness) {
			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
			h.cmd(carol, "reject "+h.onlyRun().ID+" worker is being rebuilt")
		}},
		{"drift", stalledWorld, nil, func(h *harness) {
			h.cmd(alice, "run prune target=infra-prd")
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
			h.world.Set("w-1", "stalled")
			h.react(bob, h.gateRef(), chatmodel.IntentApprove)
			h.react(carol, h.gateRef(), chatmodel.IntentApprove)
		}},
		{"moved-first", stalledWorld, nil, func(h *harness) {
			// The worker is removed while the gate is open (Concourse's
			// stalled-worker-timeout): nothing is pruned, and the summary
			// says what was found, not a change.
			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
			h.world.Remove("w-0")
			h.react(carol, h.gateRef(), chatmodel.IntentApprove)
		}},
		{"crash-and-resume", stalledWorld, func(o *bot.Options) {
			var once sync.Once
			o.Hook = func(p string) {
				if p == "before-apply:prune" {
					once.Do(func() { panic("simulated crash") })
				}
			}
		}, func(h *harness) {
			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
			h.react(carol, h.gateRef(), chatmodel.IntentApprove)
			// The call never completed: the step is reconciled, never re-run blindly.
			require.NotNil(h.t, h.onlyRun().Gate)
			require.Contains(h.t, h.onlyRun().Gate.Reason, "stopped while this step was executing")
			h.opts = nil
			h.restart()
			h.react(carol, h.gateRef(), chatmodel.IntentApprove)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.world(), c.opts)
			c.play(h)
			require.True(t, h.onlyRun().State.Terminal(), h.chat.Transcript())
			golden(t, c.name, summaryOf(t, h))
		})
	}
}

func TestSummary_MarkdownExport(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	j, err := h.db.Journal(h.ctx, r.ID)
	require.NoError(t, err)
	md := bot.RunMarkdown(r, j)
	md = regexp.MustCompile(`duration [^)]*\)`).ReplaceAllString(md, "duration D)")
	golden(t, "markdown", md)
}

func TestSummary_PostedAtTheEndAndOnDemand(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	// The end message is the summary: one message, not a summary and an
	// end message saying the same changes.
	s, ok := h.chat.Find("finished after")
	require.True(t, ok)
	assert.Equal(t, h.onlyRun().Root.ID, s.To.Thread, "the summary goes in the run's thread")
	assert.Contains(t, s.Msg.Text, "4 steps: 4 succeeded · `/runbook summary "+h.onlyRun().ID+"`")
	assert.Contains(t, s.Msg.Detail, "Check the worker — done by @bob at 03:00")
	_, twice := h.chat.Find("📋 *Summary*")
	assert.False(t, twice, "no separate summary at the end:\n%s", h.chat.Transcript())
	n := len(h.chat.Posts())
	h.cmd(bob, "summary "+h.onlyRun().ID)
	assert.Len(t, h.chat.Posts(), n+1)
	got, ok := h.chat.Find("📋 *Summary*")
	require.True(t, ok, "on demand")
	assert.Contains(t, got.Msg.Text, "Changes: pruned 1 worker(s) (approved by @carol)")
	h.cmd(bob, "summary")
	assert.Contains(t, last(h.chat.Ephemerals(bob.ID)), "inside the incident thread")
}

type errString string

func (e errString) Error() string { return string(e) }

var _ = strings.TrimSpace

func TestSummary_ThreadOfARun(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(carol, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	h.cmd(bob, "summary thread "+r.ID)
	m, ok := h.chat.Find("Incident summary")
	require.True(t, ok, h.chat.Transcript())
	assert.Equal(t, r.Root.ID, m.To.Thread, "posted in the run's thread")
	assert.Contains(t, m.Msg.Text, "1 run in this thread")
	h.cmd(bob, "summary thread")
	assert.Contains(t, last(h.chat.Ephemerals(bob.ID)), "Usage")
}
