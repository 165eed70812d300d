package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/groundcrew/groundcrew/model/chatmodel"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/policy"
)

// channelIDs has one concern: which binding of `channels:` the channel of
// a command has. A binding written with a channel's name ("#payments-ci")
// is turned into the platform's id through the chat adapter, once; ids
// are compared, never names (a channel renamed to a bound name does not
// get its binding). A name not resolved yet is asked again at the next
// command; when the platform cannot answer, the command is refused (it
// cannot be told whether its channel is bound).
type channelIDs struct {
	resolver chatmodel.ChannelResolver
	log      *slog.Logger
	mu       sync.Mutex
	ids      map[string]string // binding key → channel id
}

// scope returns what the channel with platform id channel may act on
// under bindings.
func (c *channelIDs) scope(ctx context.Context, bindings policy.Channels, channel string) (policy.Scope, error) {
	if !bindings.Configured() {
		return policy.Scope{}, nil
	}
	var failed error
	idOf := func(key string) string {
		if c.resolver == nil || !strings.HasPrefix(key, "#") {
			return key
		}
		c.mu.Lock()
		id, ok := c.ids[key]
		c.mu.Unlock()
		if ok {
			return id
		}
		id, err := c.resolver.ChannelID(ctx, key)
		switch {
		case errors.Is(err, chatmodel.ErrNotFound):
			c.log.Warn("a channel bound under channels: does not exist on the chat platform; it binds nothing", "channel", key, "err", err)
			return ""
		case err != nil:
			failed = errors.Join(failed, fmt.Errorf("%s: %w", key, err))
			return ""
		}
		c.mu.Lock()
		c.ids[key] = id
		c.mu.Unlock()
		return id
	}
	s := bindings.ScopeOf(channel, idOf)
	if !s.Bound() && failed != nil {
		// Maybe it is bound under a name the platform did not answer for:
		// refuse rather than grant an unbound channel's rights.
		return policy.Scope{}, fmt.Errorf("could not tell whether this channel is bound under channels: (%w); try again in a minute", failed)
	}
	return s, nil
}

// sees returns which runs the channel with platform id channel is shown
// (policy.Scope.SeesRun); when its binding cannot be told now, only the
// runs started in it.
func (c *channelIDs) sees(ctx context.Context, bindings policy.Channels, channel string) func(*runmodel.Run) bool {
	s, err := c.scope(ctx, bindings, channel)
	if err != nil {
		return func(r *runmodel.Run) bool { return r.Conversation.Channel == channel }
	}
	return func(r *runmodel.Run) bool { return s.SeesRun(r, channel) }
}

// forget drops the resolved ids (a reload may bind other names).
func (c *channelIDs) forget() {
	c.mu.Lock()
	c.ids = map[string]string{}
	c.mu.Unlock()
}

// scopeLine says, above /runbook list and help, what the channel may act
// on ("" for an unbound channel under the default allow).
func scopeLine(s policy.Scope, err error) string {
	switch {
	case err != nil:
		return "⚠️ " + chatmodel.UserMessage(err)
	case s.Denied:
		return "⛔ " + s.Refusal("", nil)
	case s.Bound():
		return fmt.Sprintf("📌 This channel acts on %s (`channels.%s`).", s.What(), s.Key)
	}
	return ""
}
