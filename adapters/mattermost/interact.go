package mattermost

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// interactions collects the ephemeral replies the engine sends to a user
// while the adapter is still answering that user's slash command or button
// click, so they can go into the HTTP answer: Mattermost then shows them as
// real ephemeral messages, which a plain bot account cannot post otherwise.
type interactions struct {
	mu   sync.Mutex
	open []*interaction
}

type interaction struct {
	user, channel string
	// withButtons: the answer can carry buttons (a slash command's
	// attachments; a button click's or a dialog's answer cannot).
	withButtons bool
	texts       []string
	buttons     []chatmodel.Button
	thread      string // of the replies with buttons
}

func (s *interactions) begin(user, channel string, withButtons bool) *interaction {
	it := &interaction{user: user, channel: channel, withButtons: withButtons}
	s.mu.Lock()
	s.open = append(s.open, it)
	s.mu.Unlock()
	return it
}

// captured is what the engine answered during an interaction.
type captured struct {
	texts   []string
	buttons []chatmodel.Button
	thread  string
}

// end closes it and returns what was captured.
func (s *interactions) end(it *interaction) captured {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.open {
		if o == it {
			s.open = append(s.open[:i], s.open[i+1:]...)
			break
		}
	}
	return captured{texts: it.texts, buttons: it.buttons, thread: it.thread}
}

// capture adds text (and its buttons) to the newest open interaction of
// user in channel; false when there is none, or the buttons cannot go
// into its answer.
func (s *interactions) capture(user, channel, thread, text string, buttons []chatmodel.Button) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.open) - 1; i >= 0; i-- {
		if it := s.open[i]; it.user == user && it.channel == channel {
			if len(buttons) > 0 && !it.withButtons {
				return false
			}
			it.texts = append(it.texts, text)
			if len(buttons) > 0 {
				it.buttons = append(it.buttons, buttons...)
				it.thread = thread
			}
			return true
		}
	}
	return false
}

// interact runs fn (which hands an event to the engine) and waits up to
// ackWait for it. Ephemeral replies sent to user in channel meanwhile are
// returned (with their buttons when withButtons: the answer can carry
// them); later ones are posted normally. done reports whether fn
// finished in time, err is its error then.
func (a *Adapter) interact(user, channel string, withButtons bool, fn func() error) (got captured, done bool, err error) {
	it := a.interactions.begin(user, channel, withButtons && a.buttonsEnabled())
	result := make(chan error, 1)
	go func() { result <- fn() }()
	t := time.NewTimer(a.ackWait)
	defer t.Stop()
	select {
	case err = <-result:
		done = true
		// The engine may answer from its own goroutine just after Handle
		// returns; give it a moment to land in the HTTP answer.
		sleepCtx(context.Background(), a.ackGrace)
	case <-t.C:
	}
	return a.interactions.end(it), done, err
}

func joinTexts(texts []string) string {
	return strings.Join(texts, "\n\n")
}
