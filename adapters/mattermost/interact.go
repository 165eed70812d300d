package mattermost

import (
	"context"
	"strings"
	"sync"
	"time"
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
	texts         []string
}

func (s *interactions) begin(user, channel string) *interaction {
	it := &interaction{user: user, channel: channel}
	s.mu.Lock()
	s.open = append(s.open, it)
	s.mu.Unlock()
	return it
}

// end closes it and returns what was captured.
func (s *interactions) end(it *interaction) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, o := range s.open {
		if o == it {
			s.open = append(s.open[:i], s.open[i+1:]...)
			break
		}
	}
	return it.texts
}

// capture adds text to the newest open interaction of user in channel.
func (s *interactions) capture(user, channel, text string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.open) - 1; i >= 0; i-- {
		if it := s.open[i]; it.user == user && it.channel == channel {
			it.texts = append(it.texts, text)
			return true
		}
	}
	return false
}

// interact runs fn (which hands an event to the engine) and waits up to
// ackWait for it. Ephemeral replies sent to user in channel meanwhile are
// returned; later ones are posted normally. done reports whether fn
// finished in time, err is its error then.
func (a *Adapter) interact(user, channel string, fn func() error) (texts []string, done bool, err error) {
	it := a.interactions.begin(user, channel)
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
