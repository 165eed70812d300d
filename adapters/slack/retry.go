package slack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// retryPolicy says which failures a Web API call may repeat. A 429 is always
// waited out (Slack did not process the call), until ctx ends.
type retryPolicy int

const (
	// retryRateLimitOnly repeats a call only after a 429: for writes that are
	// not idempotent (chat.postMessage), where repeating after a timeout or a
	// 5xx could post twice. The engine's outbox decides about those.
	retryRateLimitOnly retryPolicy = iota
	// retryTransient also repeats idempotent calls (reads, chat.update) after
	// 5xx, network errors and Slack's internal errors, a few times.
	retryTransient
	// retryForever repeats transient failures until ctx ends (auth.test at
	// start-up, so a Slack outage delays start-up instead of failing it).
	retryForever
)

const (
	transientRetries = 3
	// defaultRetryAfter is used for a 429 without a Retry-After header.
	defaultRetryAfter = 5 * time.Second
	minRetryAfter     = time.Second
	maxBackoff        = time.Minute
)

// retrier runs Web API calls under a retryPolicy.
type retrier struct {
	log *slog.Logger
	// sleep waits d or until ctx ends; tests replace it to record waits.
	sleep func(ctx context.Context, d time.Duration) error
	// timeout is the deadline of one try (callTimeout by default); server
	// names the Web API in errors.
	timeout time.Duration
	server  string
}

// callTimeout is the deadline of one Web API try: a Slack that takes the
// request and does not answer holds the caller no longer.
const callTimeout = 10 * time.Second

func newRetrier(log *slog.Logger, server string) *retrier {
	return &retrier{log: log, sleep: sleepCtx, timeout: callTimeout, server: server}
}

// unreachableError is a call Slack did not answer: no answer within the
// try's deadline, or no connection. Nothing is wrong with the request or
// the configuration.
type unreachableError struct {
	method, server string
	timeout        time.Duration // set when the try ran out of its deadline
	err            error
}

func (e *unreachableError) Error() string {
	if e.timeout > 0 {
		return fmt.Sprintf("%s: slack at %s did not answer within %s (%v)", e.method, e.server, e.timeout, e.err)
	}
	return fmt.Sprintf("%s: slack at %s is unreachable: %v", e.method, e.server, e.err)
}

func (e *unreachableError) Unwrap() []error { return []error{e.err, chatmodel.ErrUnreachable} }

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do runs fn under policy p, honouring every 429 Retry-After. method names
// the call in logs. When ctx ends while waiting out a 429, the error is a
// *chatmodel.RateLimitedError carrying the wait Slack asked for.
//
// Each try has a deadline of its own (r.timeout). A try that ran out of it
// is not repeated (Slack took the request and does not answer: the caller
// — the outbox — retries later), except under retryForever; it and a
// failed connection are said as such, wrapping chatmodel.ErrUnreachable.
func (r *retrier) do(ctx context.Context, method string, p retryPolicy, fn func(context.Context) error) error {
	backoff := 500 * time.Millisecond
	tries := 0
	for {
		timeout := r.timeout
		if timeout <= 0 {
			timeout = callTimeout
		}
		tctx, cancel := context.WithTimeout(ctx, timeout)
		err := fn(tctx)
		timedOut := err != nil && tctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		if timedOut {
			err = &unreachableError{method: method, server: r.server, timeout: timeout, err: err}
			if p != retryForever {
				return err
			}
		} else if unreachable(err) {
			err = &unreachableError{method: method, server: r.server, err: err}
		}
		if wait, ok := rateLimitWait(err); ok {
			r.log.Warn("slack: rate limited, waiting", "method", method, "retry_after", wait)
			if serr := r.sleep(ctx, wait); serr != nil {
				return &chatmodel.RateLimitedError{Platform: Platform, RetryAfter: wait, Err: fmt.Errorf("%s: %w", method, err)}
			}
			continue
		}
		if p == retryRateLimitOnly || !(transient(err) || timedOut) || (p == retryTransient && tries >= transientRetries) {
			return err
		}
		tries++
		r.log.Warn("slack: call failed, retrying", "method", method, "attempt", tries, "backoff", backoff, "err", err)
		if serr := r.sleep(ctx, backoff); serr != nil {
			return err
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// unreachable reports whether err is a failed connection (no answer).
func unreachable(err error) bool {
	_, ok := errors.AsType[net.Error](err)
	return ok
}

// rateLimitWait reports whether err is a 429 and how long to wait.
func rateLimitWait(err error) (time.Duration, bool) {
	if rl, ok := errors.AsType[*slackapi.RateLimitedError](err); ok {
		return max(rl.RetryAfter, minRetryAfter), true
	}
	if sc, ok := errors.AsType[slackapi.StatusCodeError](err); ok && sc.Code == http.StatusTooManyRequests {
		return defaultRetryAfter, true
	}
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok && se.Err == "ratelimited" {
		return defaultRetryAfter, true
	}
	return 0, false
}

// transient reports whether repeating the call may succeed.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// A per-call timeout of the HTTP client is a net.Error, not this.
		return false
	}
	if sc, ok := errors.AsType[slackapi.StatusCodeError](err); ok {
		return sc.Retryable()
	}
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok {
		switch se.Err {
		case "internal_error", "fatal_error", "service_unavailable", "request_timeout":
			return true
		}
		return false
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return false
}

// slackErrorCode returns Slack's error string ("channel_not_found") for an
// ok:false response, or "".
func slackErrorCode(err error) string {
	if se, ok := errors.AsType[slackapi.SlackErrorResponse](err); ok {
		return se.Err
	}
	return ""
}
