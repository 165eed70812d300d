package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// socketPingInterval is how long the connection may stay without a ping from
// Slack before it is considered dead and reopened (slack-go's default).
const socketPingInterval = 30 * time.Second

// runSocket keeps a Socket Mode connection open until ctx ends, acking every
// envelope as it arrives and queueing its events for the dispatcher.
func (a *Adapter) runSocket(ctx context.Context) error {
	client := socketmode.New(a.api,
		socketmode.OptionLog(slogOutput{a.log}),
		socketmode.OptionPingInterval(socketPingInterval),
	)
	errc := make(chan error, 1)
	go func() { errc <- a.keepConnected(ctx, client) }()
	for {
		select {
		case err := <-errc:
			return err
		case evt := <-client.Events:
			a.handleSocketEvent(ctx, client, evt)
		}
	}
}

// keepConnected runs the slack-go client, which reconnects by itself on
// Slack's disconnect requests and network errors; it returns only on fatal
// connect errors, which this loop retries with backoff unless Slack rejected
// the tokens. It returns nil when ctx ends.
func (a *Adapter) keepConnected(ctx context.Context, client *socketmode.Client) error {
	backoff := time.Second
	for {
		err := client.RunContext(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if fatalAuth(err) {
			return fmt.Errorf("slack socket mode: %w (check app_token: an xapp- token with connections:write, and that Socket Mode is on)", err)
		}
		wait := backoff + rand.N(backoff/2+1)
		a.log.Warn("slack: socket mode connection failed, reconnecting", "err", err, "in", wait)
		if sleepCtx(ctx, wait) != nil {
			return nil
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// fatalAuth reports whether err means the tokens are wrong: reconnecting
// cannot help.
func fatalAuth(err error) bool {
	switch slackErrorCode(err) {
	case "invalid_auth", "account_inactive", "not_authed", "token_revoked", "not_allowed_token_type":
		return true
	}
	if sc, ok := errors.AsType[slackapi.StatusCodeError](err); ok && sc.Code == http.StatusNotFound {
		return true
	}
	return false
}

func (a *Adapter) handleSocketEvent(ctx context.Context, client *socketmode.Client, evt socketmode.Event) {
	switch evt.Type {
	case socketmode.EventTypeConnecting:
		a.log.Debug("slack: socket mode connecting")
		a.connected.Store(false)
	case socketmode.EventTypeConnected:
		a.log.Info("slack: socket mode connected")
		a.connected.Store(true)
	case socketmode.EventTypeConnectionError:
		if ce, ok := evt.Data.(*slackapi.ConnectionErrorEvent); ok {
			a.log.Warn("slack: socket mode connection error", "attempt", ce.Attempt, "backoff", ce.Backoff, "err", ce.ErrorObj)
		}
		a.connected.Store(false)
	case socketmode.EventTypeInvalidAuth:
		a.log.Error("slack: socket mode rejected the app token")
	case socketmode.EventTypeDisconnect:
		a.log.Info("slack: socket mode disconnect requested by Slack, reconnecting")
		a.connected.Store(false)
	case socketmode.EventTypeIncomingError:
		// Read errors end the connection, and slack-go reconnects.
		a.log.Debug("slack: socket mode read error", "err", errorOf(evt.Data))
	case socketmode.EventTypeErrorWriteFailed:
		a.log.Warn("slack: socket mode write failed", "err", errorOf(evt.Data))
	case socketmode.EventTypeErrorBadMessage:
		a.log.Warn("slack: socket mode message not understood", "err", errorOf(evt.Data))
		// Still ack it when it has an envelope, or Slack redelivers it.
		if bad, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
			var env struct {
				EnvelopeID string `json:"envelope_id"`
			}
			if json.Unmarshal(bad.Message, &env) == nil && env.EnvelopeID != "" {
				a.ack(ctx, client, &socketmode.Request{EnvelopeID: env.EnvelopeID})
			}
		}
	case socketmode.EventTypeEventsAPI:
		a.ack(ctx, client, evt.Request)
		if ev, ok := evt.Data.(slackevents.EventsAPIEvent); ok {
			if evt.Request != nil && evt.Request.RetryAttempt > 0 {
				a.log.Info("slack: event redelivered", "retry", evt.Request.RetryAttempt, "reason", evt.Request.RetryReason)
			}
			a.inbox.push(a.callbackEvents(ev)...)
		}
	case socketmode.EventTypeSlashCommand:
		a.ack(ctx, client, evt.Request)
		if cmd, ok := evt.Data.(slackapi.SlashCommand); ok {
			a.inbox.push(a.commandEvent(cmd))
		}
	case socketmode.EventTypeInteractive:
		cb, ok := evt.Data.(slackapi.InteractionCallback)
		if ok {
			if resp := a.submissionErrors(ctx, cb); resp != nil {
				// The ack's payload is the answer: errors on their fields.
				a.ackWith(ctx, client, evt.Request, resp)
				return
			}
		}
		a.ack(ctx, client, evt.Request)
		if ok {
			a.inbox.push(a.interactionEvents(cb)...)
		}
	}
}

func (a *Adapter) ack(ctx context.Context, client *socketmode.Client, req *socketmode.Request) {
	a.ackWith(ctx, client, req, nil)
}

// ackWith acks an envelope with a payload (nil: none).
func (a *Adapter) ackWith(ctx context.Context, client *socketmode.Client, req *socketmode.Request, payload any) {
	if req == nil || req.EnvelopeID == "" {
		return
	}
	if err := client.AckCtx(ctx, req.EnvelopeID, payload); err != nil && ctx.Err() == nil {
		a.log.Warn("slack: socket mode ack failed", "envelope", req.EnvelopeID, "err", err)
	}
}

// errorOf extracts the cause of socketmode's error events for logging
// (never the payload, which may hold user data).
func errorOf(data any) error {
	switch d := data.(type) {
	case *slackapi.IncomingEventError:
		return d.ErrorObj
	case *socketmode.ErrorBadMessage:
		return d.Cause
	case *socketmode.ErrorWriteFailed:
		return d.Cause
	}
	return nil
}
