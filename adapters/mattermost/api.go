package mattermost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mattermost/mattermost/server/public/model"

	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// ErrRateLimited is wrapped by the error returned when Mattermost kept
// answering 429 Too Many Requests until the adapter gave up; that error is
// a *chatmodel.RateLimitedError with the server's Retry-After.
var ErrRateLimited = errors.New("rate limited by mattermost")

// APIError is a failed Mattermost API call. It carries the HTTP status (0 for
// transport errors) and, for 429 answers, the server's Retry-After.
type APIError struct {
	Op         string        // what the adapter was doing ("creating post in channel x")
	StatusCode int           // HTTP status, 0 when the request never got an answer
	ID         string        // Mattermost's error id ("api.post.create_post.root_id.app_error"), if any
	RetryAfter time.Duration // from the Retry-After header of a 429
	Err        error
	// Server is the server's URL, said when it did not answer.
	Server string
	// Timeout is set when the server took the request and did not answer
	// within the call's deadline (a server that hangs).
	Timeout time.Duration
}

// Error implements error. A server that did not answer is said as such,
// with its URL: nothing is wrong with the request or the configuration.
func (e *APIError) Error() string {
	switch {
	case e.StatusCode == 0 && e.Timeout > 0:
		return fmt.Sprintf("%s: mattermost at %s did not answer within %s (%v)", e.Op, e.Server, e.Timeout, e.Err)
	case e.StatusCode == 0 && e.Server != "":
		return fmt.Sprintf("%s: mattermost at %s is unreachable: %v", e.Op, e.Server, e.Err)
	case e.StatusCode == 0:
		return fmt.Sprintf("%s: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("%s: HTTP %d: %v", e.Op, e.StatusCode, e.Err)
}

// Unwrap returns the underlying error, and chatmodel.ErrUnreachable when
// the server did not answer.
func (e *APIError) Unwrap() []error {
	if e.StatusCode == 0 && e.Server != "" {
		return []error{e.Err, chatmodel.ErrUnreachable}
	}
	return []error{e.Err}
}

// Retryable reports whether trying the same call again later may succeed.
func (e *APIError) Retryable() bool {
	switch e.StatusCode {
	case 0, http.StatusTooManyRequests, http.StatusInternalServerError,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// apiError wraps a Client4 failure into an *APIError.
func apiError(op string, resp *model.Response, err error) *APIError {
	e := &APIError{Op: op, Err: err}
	if resp != nil {
		e.StatusCode = resp.StatusCode
		if resp.StatusCode == http.StatusTooManyRequests {
			e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"))
		}
	}
	var appErr *model.AppError
	if errors.As(err, &appErr) {
		e.ID = appErr.Id
		if e.StatusCode == 0 {
			e.StatusCode = appErr.StatusCode
		}
	}
	return e
}

// errorID returns Mattermost's error id of err, if it has one.
func errorID(err error) string {
	var e *APIError
	if errors.As(err, &e) {
		return e.ID
	}
	return ""
}

// statusOf returns the HTTP status of a failed call (0 when unknown).
func statusOf(err error) int {
	var e *APIError
	if errors.As(err, &e) {
		return e.StatusCode
	}
	return 0
}

func parseRetryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// retryPolicy bounds how the adapter retries one API call.
type retryPolicy struct {
	attempts     int           // total tries for a call, the first included
	minWait      time.Duration // wait after a 429 without Retry-After, and first backoff
	maxWait      time.Duration // cap for any single wait
	channelSpace time.Duration // minimum gap between two writes to one channel
	callTimeout  time.Duration // deadline of one try
}

var defaultRetry = retryPolicy{
	attempts:     6,
	minWait:      500 * time.Millisecond,
	maxWait:      60 * time.Second,
	channelSpace: 100 * time.Millisecond,
	callTimeout:  10 * time.Second,
}

// call runs fn, retrying on 429 (always: the server refused the request
// before doing anything) and, for idempotent calls, on transport errors and
// 5xx. Each try has a deadline of its own (callTimeout); a try that ran out
// of it is not repeated here — the server took the request and does not
// answer, and the caller (the outbox) retries later rather than wait
// again. It returns the last error, wrapped in *APIError.
func (a *Adapter) call(ctx context.Context, op string, idempotent bool, fn func(ctx context.Context) (*model.Response, error)) error {
	var last *APIError
	wait := a.retry.minWait
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if last != nil && last.StatusCode == http.StatusTooManyRequests {
				return rateLimited(fmt.Errorf("%w: %w (gave up: %w)", ErrRateLimited, last, err), last)
			}
			if last != nil {
				return fmt.Errorf("%w (gave up: %w)", last, err)
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		tctx, cancel := context.WithTimeout(ctx, a.callTimeout())
		resp, err := fn(tctx)
		timedOut := err != nil && tctx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		last = apiError(op, resp, err)
		if last.StatusCode == 0 && ctx.Err() == nil {
			last.Server = a.cfg.url
			if timedOut {
				last.Timeout = a.callTimeout()
			}
		}
		retry := last.StatusCode == http.StatusTooManyRequests ||
			(idempotent && last.Retryable() && ctx.Err() == nil && !timedOut)
		if !retry || attempt >= a.retry.attempts {
			if last.StatusCode == http.StatusTooManyRequests {
				return rateLimited(fmt.Errorf("%w: %w", ErrRateLimited, last), last)
			}
			return last
		}
		d := wait
		if last.RetryAfter > 0 {
			d = last.RetryAfter
		}
		d = min(d, a.retry.maxWait)
		a.log.Warn("mattermost call failed, retrying", "op", op, "status", last.StatusCode, "wait", d, "attempt", attempt)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		wait = min(wait*2, a.retry.maxWait)
	}
}

// callTimeout is the deadline of one try of a call.
func (a *Adapter) callTimeout() time.Duration {
	if a.retry.callTimeout > 0 {
		return a.retry.callTimeout
	}
	return defaultRetry.callTimeout
}

// rateLimited is the chat vocabulary's typed rate-limit error around err,
// with the server's Retry-After, so callers (the outbox) can honour it.
func rateLimited(err error, last *APIError) error {
	return &chatmodel.RateLimitedError{Platform: Platform, RetryAfter: last.RetryAfter, Err: err}
}

// channelQueue serialises writes per channel and spaces them out, so a burst
// of step replies neither trips the server's rate limiter nor reorders.
type channelQueue struct {
	mu    sync.Mutex
	lanes map[string]*lane
}

// lane is one channel's turn: a one-slot semaphore a waiter can give up on
// when its context ends (a write stuck on a server that hangs holds the
// lane until its deadline; nobody waits longer than their own).
type lane struct {
	turn chan struct{}
	last time.Time // guarded by holding the turn
}

// do runs fn while holding the channel's lane, after the minimum spacing.
// A 429 inside fn keeps the lane, so later messages wait behind it.
func (q *channelQueue) do(ctx context.Context, channel string, space time.Duration, fn func() error) error {
	q.mu.Lock()
	if q.lanes == nil {
		q.lanes = map[string]*lane{}
	}
	l := q.lanes[channel]
	if l == nil {
		l = &lane{turn: make(chan struct{}, 1)}
		q.lanes[channel] = l
	}
	q.mu.Unlock()

	select {
	case l.turn <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("waiting for an earlier write to channel %s: %w", channel, ctx.Err())
	}
	defer func() { <-l.turn }()
	if d := time.Until(l.last.Add(space)); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	defer func() { l.last = time.Now() }()
	return fn()
}
