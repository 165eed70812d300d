package slack

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/groundcrew/groundcrew/internal/httpguard"
)

// HTTP endpoint paths served by HTTPHandler (the manifest's request URLs).
const (
	PathCommands      = "/slack/commands"
	PathEvents        = "/slack/events"
	PathInteractivity = "/slack/interactivity"
)

// maxBody bounds a request body; Slack's payloads are a few KB.
const maxBody = 1 << 20

// HTTPHandler serves Slack's requests in http mode: slash commands on
// /slack/commands, the Events API on /slack/events and interactivity
// (buttons) on /slack/interactivity. Every request's signature is verified
// on the raw body first (signing secret, 5-minute window): a request that
// fails is answered 401 and the reason logged. Accepted requests are
// acknowledged at once with 200 and their events queued for Run's
// dispatcher. Without a signing secret (socket mode) every path is 404.
func (a *Adapter) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST "+PathCommands, a.verified(a.serveCommand))
	mux.Handle("POST "+PathEvents, a.verified(a.serveEvents))
	mux.Handle("POST "+PathInteractivity, a.verified(a.serveInteraction))
	return mux
}

// verified checks a request's signature on its raw body, then calls next with
// the body restored on r and also given as bytes.
func (a *Adapter) verified(next func(w http.ResponseWriter, r *http.Request, body []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !a.cfg.SigningSecret.IsSet() {
			http.Error(w, "slack http endpoints are off: no signing_secret configured (socket mode)", http.StatusNotFound)
			return
		}
		// The body is read within a deadline before the signature can be
		// checked: an unsigned client trickling bytes is cut off (#19.7).
		body, err := httpguard.ReadBody(w, r, maxBody, a.bodyTimeout)
		if err != nil {
			a.reject(w, r, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
		sv, err := slackapi.NewSecretsVerifier(r.Header, a.cfg.SigningSecret.Value())
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil {
			a.reject(w, r, a.verifyReason(r, err), http.StatusUnauthorized)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next(w, r, body)
	})
}

// verifyReason explains a failed verification for the log. It never includes
// the signing secret or the computed signature.
func (a *Adapter) verifyReason(r *http.Request, err error) string {
	ts := r.Header.Get("X-Slack-Request-Timestamp")
	switch {
	case errors.Is(err, slackapi.ErrMissingHeaders):
		return "missing X-Slack-Signature or X-Slack-Request-Timestamp header (not a Slack request?)"
	case errors.Is(err, slackapi.ErrExpiredTimestamp):
		skew := "?"
		if sec, perr := strconv.ParseInt(ts, 10, 64); perr == nil {
			skew = a.now().Sub(time.Unix(sec, 0)).Round(time.Second).String()
		}
		return fmt.Sprintf("request timestamp %s is more than 5 minutes from local time (skew %s): a replayed request, or the clock is wrong", ts, skew)
	case errors.Is(err, slackapi.ErrInvalidSignature):
		return "signature does not match: wrong signing_secret, or the body was altered in transit"
	}
	if _, ok := errors.AsType[*strconv.NumError](err); ok {
		return fmt.Sprintf("malformed X-Slack-Request-Timestamp %q", ts)
	}
	if _, ok := errors.AsType[hex.InvalidByteError](err); ok || errors.Is(err, hex.ErrLength) {
		return "malformed X-Slack-Signature"
	}
	return "signature check failed: " + err.Error()
}

func (a *Adapter) reject(w http.ResponseWriter, r *http.Request, reason string, code int) {
	a.log.Warn("slack: request rejected", "path", r.URL.Path, "remote", r.RemoteAddr, "status", code, "reason", reason)
	http.Error(w, http.StatusText(code), code)
}

// serveCommand acks a slash command with an empty 200 (nothing shown; the
// engine answers in the channel or ephemerally) and queues it.
func (a *Adapter) serveCommand(w http.ResponseWriter, r *http.Request, _ []byte) {
	if err := r.ParseForm(); err != nil {
		a.reject(w, r, "malformed form body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if r.PostForm.Get("ssl_check") == "1" {
		w.WriteHeader(http.StatusOK)
		return
	}
	cmd, err := slackapi.SlashCommandParse(r)
	if err != nil || cmd.UserID == "" || cmd.ChannelID == "" {
		a.reject(w, r, "not a slash command payload", http.StatusBadRequest)
		return
	}
	a.inbox.push(a.commandEvent(cmd))
	w.WriteHeader(http.StatusOK)
}

// serveEvents answers url_verification with the challenge, acks event
// callbacks with 200 and queues reactions. A retry (X-Slack-Retry-Num) is
// queued like the first delivery: it carries the same event_id, and the
// engine drops the ones it has handled.
func (a *Adapter) serveEvents(w http.ResponseWriter, r *http.Request, body []byte) {
	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	if err != nil {
		// An event type we do not subscribe to: ack it so Slack does not retry.
		a.log.Debug("slack: unparsed event acknowledged", "err", err)
		w.WriteHeader(http.StatusOK)
		return
	}
	switch ev.Type {
	case slackevents.URLVerification:
		uv, ok := ev.Data.(*slackevents.EventsAPIURLVerificationEvent)
		if !ok {
			a.reject(w, r, "malformed url_verification", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(slackevents.ChallengeResponse{Challenge: uv.Challenge})
		return
	case slackevents.AppRateLimited:
		a.log.Warn("slack: Events API deliveries to this app are being rate limited by Slack")
	case slackevents.CallbackEvent:
		if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
			a.log.Info("slack: event redelivered", "retry", n, "reason", r.Header.Get("X-Slack-Retry-Reason"))
		}
		a.inbox.push(a.callbackEvents(ev)...)
	}
	w.WriteHeader(http.StatusOK)
}

// serveInteraction acks a block_actions payload with 200 and queues its
// button presses.
func (a *Adapter) serveInteraction(w http.ResponseWriter, r *http.Request, _ []byte) {
	cb, err := slackapi.InteractionCallbackParse(r)
	if err != nil {
		a.reject(w, r, "malformed interaction payload: "+err.Error(), http.StatusBadRequest)
		return
	}
	if resp := a.submissionErrors(r.Context(), cb); resp != nil {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	a.inbox.push(a.interactionEvents(cb)...)
	w.WriteHeader(http.StatusOK)
}
