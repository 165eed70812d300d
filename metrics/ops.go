package metrics

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// Provider wraps an operation provider: every call of its operations is
// counted by operation, target, phase and outcome, and timed. Errors of
// postgres.* operations also count as PostgreSQL API errors.
func (m *Metrics) Provider(p opmodel.Provider) opmodel.Provider { return provider{m: m, p: p} }

type provider struct {
	m *Metrics
	p opmodel.Provider
}

func (p provider) Ops() []opmodel.Op {
	ops := p.p.Ops()
	out := make([]opmodel.Op, 0, len(ops))
	for _, op := range ops {
		name := op.Name
		if do := op.Do; do != nil {
			op.Do = func(ctx context.Context, c opmodel.Call) (opmodel.Result, error) {
				defer p.m.observeOp(name, c.Target, "do", time.Now())
				r, err := do(ctx, c)
				p.m.opDone(name, c.Target, "do", err)
				return r, err
			}
		}
		if plan := op.Plan; plan != nil {
			op.Plan = func(ctx context.Context, c opmodel.Call) (opmodel.Plan, error) {
				defer p.m.observeOp(name, c.Target, "plan", time.Now())
				r, err := plan(ctx, c)
				p.m.opDone(name, c.Target, "plan", err)
				return r, err
			}
		}
		if apply := op.Apply; apply != nil {
			op.Apply = func(ctx context.Context, c opmodel.Call, pl opmodel.Plan) (opmodel.Result, error) {
				defer p.m.observeOp(name, c.Target, "apply", time.Now())
				r, err := apply(ctx, c, pl)
				p.m.opDone(name, c.Target, "apply", err)
				return r, err
			}
		}
		out = append(out, op)
	}
	return out
}

func (m *Metrics) observeOp(op, target, phase string, start time.Time) {
	m.opDuration.WithLabelValues(op, m.target(target), phase).Observe(time.Since(start).Seconds())
}

func (m *Metrics) opDone(op, target, phase string, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, context.Canceled):
		outcome = "cancelled"
	case err != nil:
		outcome = "error"
	}
	t := m.target(target)
	m.opCalls.WithLabelValues(op, t, phase, outcome).Inc()
	if outcome == "error" && strings.HasPrefix(op, "postgres.") {
		m.apiErrors.WithLabelValues("postgres", t, "error").Inc()
	}
}

// Transport counts the HTTP requests of api ("concourse", "slack",
// "mattermost") to target ("" for chat) through next: errors by reason
// (transport, 4xx, 5xx) and 429 answers.
func (m *Metrics) Transport(api, target string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	t := m.target(target)
	for _, r := range []string{"transport", "4xx", "5xx"} {
		m.apiErrors.WithLabelValues(api, t, r)
	}
	m.apiThrottled.WithLabelValues(api, t)
	return transport{m: m, api: api, target: t, next: next}
}

type transport struct {
	m           *Metrics
	api, target string
	next        http.RoundTripper
}

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	t.m.apiRequests.WithLabelValues(t.api, t.target).Inc()
	switch {
	case err != nil:
		if req.Context().Err() == nil {
			t.m.apiErrors.WithLabelValues(t.api, t.target, "transport").Inc()
		}
	case resp.StatusCode == http.StatusTooManyRequests:
		t.m.apiThrottled.WithLabelValues(t.api, t.target).Inc()
		t.m.apiErrors.WithLabelValues(t.api, t.target, "4xx").Inc()
	case resp.StatusCode >= 500:
		t.m.apiErrors.WithLabelValues(t.api, t.target, "5xx").Inc()
	case resp.StatusCode >= 400:
		t.m.apiErrors.WithLabelValues(t.api, t.target, "4xx").Inc()
	}
	return resp, err
}

// HTTPClient returns a copy of c (nil: a client with timeout) whose
// transport is counted as api.
func (m *Metrics) HTTPClient(api string, c *http.Client, timeout time.Duration) *http.Client {
	var h http.Client
	if c != nil {
		h = *c
	} else {
		h.Timeout = timeout
	}
	h.Transport = m.Transport(api, "", h.Transport)
	return &h
}
