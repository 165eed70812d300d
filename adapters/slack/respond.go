package slack

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	slackapi "github.com/slack-go/slack"
)

// A slash command's response_url answers the user privately in the channel
// the command was typed in, whether or not the bot is a member (Slack
// allows 5 uses within 30 minutes). It is how a refusal reaches someone
// who ran /runbook in a private channel the bot is not in: there
// chat.postEphemeral answers not_in_channel (#22.3).
const (
	responseURLTTL  = 30 * time.Minute
	responseURLUses = 5
	// maxResponseURLs bounds the memory of recent commands.
	maxResponseURLs = 10000
)

type responseURL struct {
	url  string
	at   time.Time
	uses int
}

func responseKey(channel, user string) string { return channel + "/" + user }

// validResponseURL accepts only Slack's own hosts: the URL comes from a
// signed payload, but the bot must never be made to POST elsewhere.
func validResponseURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "hooks.slack.com" || h == "hooks.slack-gov.com" ||
		strings.HasSuffix(h, ".slack.com") || strings.HasSuffix(h, ".slack-gov.com")
}

// rememberResponseURL keeps the response_url of a command, per channel and
// user, for answering that user there.
func (a *Adapter) rememberResponseURL(channel, user, raw string) {
	if channel == "" || user == "" || raw == "" {
		return
	}
	ok := a.responseURLOK
	if ok == nil {
		ok = validResponseURL
	}
	if !ok(raw) {
		a.log.Warn("slack: ignoring a slash command's response_url that is not on a Slack host", "channel", channel, "user", user)
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.responses) >= maxResponseURLs {
		for k, r := range a.responses {
			if now.Sub(r.at) >= responseURLTTL {
				delete(a.responses, k)
			}
		}
		if len(a.responses) >= maxResponseURLs {
			a.responses = map[string]*responseURL{}
		}
	}
	a.responses[responseKey(channel, user)] = &responseURL{url: raw, at: now}
}

// takeResponseURL returns a usable response_url for the user in channel
// and counts the use, or "".
func (a *Adapter) takeResponseURL(channel, user string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.responses[responseKey(channel, user)]
	if r == nil || a.now().Sub(r.at) >= responseURLTTL || r.uses >= responseURLUses {
		return ""
	}
	r.uses++
	return r.url
}

// respond posts msgs privately to user through the response_url of the
// command they ran in channel. It reports false when there is none (no
// recent command there, or its uses are spent).
func (a *Adapter) respond(ctx context.Context, channel, user string, msgs []slackMsg) (bool, error) {
	for i, m := range msgs {
		u := a.takeResponseURL(channel, user)
		if u == "" {
			if i == 0 {
				return false, nil
			}
			return true, fmt.Errorf("answering through response_url: %d of %d parts not sent (its 5 uses are spent)", len(msgs)-i, len(msgs))
		}
		wm := &slackapi.WebhookMessage{ResponseType: slackapi.ResponseTypeEphemeral, Text: m.text}
		if len(m.blocks) > 0 {
			wm.Blocks = &slackapi.Blocks{BlockSet: m.blocks}
		}
		err := a.retry.do(ctx, "response_url", retryRateLimitOnly, func(ctx context.Context) error {
			return slackapi.PostWebhookCustomHTTPContext(ctx, u, a.opts.HTTPClient, wm)
		})
		if err != nil {
			return true, fmt.Errorf("answering through the command's response_url: %w", err)
		}
	}
	return true, nil
}
