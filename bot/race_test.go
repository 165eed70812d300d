package bot_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
)

// TestEngine_AnswerTheMomentAMessageAppears: a click or reaction that
// arrives while the post of its message has not returned yet (the
// platform shows a message before its API call answers) counts (#19.4).
func TestEngine_AnswerTheMomentAMessageAppears(t *testing.T) {
	for _, kind := range []chatmodel.EventKind{chatmodel.EventButton, chatmodel.EventReaction} {
		t.Run(string(kind), func(t *testing.T) {
			h := newHarness(t, stalledWorld(), nil)
			// answers are the answers in flight; a WaitGroup would be
			// Add-ed from zero while the test Waits on it (a data race).
			var (
				mu      sync.Mutex
				answers []chan struct{}
			)
			wait := func() { // until no answer is in flight
				for {
					mu.Lock()
					pending := answers
					answers = nil
					mu.Unlock()
					if len(pending) == 0 {
						return
					}
					for _, ch := range pending {
						<-ch
					}
				}
			}
			answer := func(u chatmodel.User, ref chatmodel.MessageRef, m chatmodel.Message, intent chatmodel.Intent) {
				done := make(chan struct{})
				mu.Lock()
				answers = append(answers, done)
				mu.Unlock()
				go func() {
					defer close(done)
					ev := chatmodel.Event{Kind: kind, User: u, Message: ref, Intent: intent, Value: m.RunID + "|x",
						Conversation: chatmodel.Conversation{Channel: ref.Channel, Thread: ref.Thread}}
					assert.NoError(t, h.eng.Handle(h.ctx, ev))
				}()
				time.Sleep(20 * time.Millisecond) // let the answer overtake the post
			}
			h.chat.OnPost = func(ref chatmodel.MessageRef, m chatmodel.Message) {
				switch m.Role {
				case chatmodel.RoleStep:
					if len(m.Buttons) > 0 {
						answer(bob, ref, m, chatmodel.IntentDone)
					}
				case chatmodel.RoleGate:
					answer(bob, ref, m, chatmodel.IntentApprove)
				}
			}
			h.cmd(alice, "run prune target=infra-prd worker=w-0")
			for range 3 {
				wait()
				h.idle()
			}
			r := h.onlyRun()
			require.Equal(t, runmodel.RunSucceeded, r.State, h.chat.Transcript())
			assert.Equal(t, []chatmodel.User{bob}, r.Steps[2].ApprovedBy)
			assert.Empty(t, h.chat.Ephemerals("bob"), "no 'replaced' or 'not waiting' answer")
		})
	}
}

// TestEngine_RefusalListedOnce: one person's refused vote, by reaction and
// then by button, is one line on the gate, shown by name (#19.8).
func TestEngine_RefusalListedOnce(t *testing.T) {
	h := newHarness(t, stalledWorld(), nil)
	h.cmd(alice, "run prune target=infra-prd worker=w-0")
	h.react(bob, h.stepRef("check"), chatmodel.IntentApprove)
	h.react(alice, h.gateRef(), chatmodel.IntentApprove)
	r := h.onlyRun()
	require.NoError(t, h.eng.Handle(h.ctx, chatmodel.Event{Kind: chatmodel.EventButton, User: alice, Message: h.gateRef(), Intent: chatmodel.IntentApprove, Value: r.ID + "|" + r.Gate.ID}))
	h.idle()
	r = h.onlyRun()
	require.Len(t, r.Gate.Refusals, 1, h.chat.Transcript())
	gate, ok := h.chat.Find("Approval needed")
	require.True(t, ok)
	assert.Equal(t, 1, strings.Count(gate.Msg.Text, "@alice — not counted"), gate.Msg.Text)
}
