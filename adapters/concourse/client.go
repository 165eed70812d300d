package concourse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Client talks to one Concourse target. It is safe for concurrent use.
type Client struct {
	cfg     TargetConfig
	base    *url.URL
	http    *http.Client
	log     *slog.Logger
	retry   RetryPolicy
	timeout time.Duration
	sleep   func(ctx context.Context, d time.Duration) error
	now     func() time.Time
	lim     *limiter // per-target limit for bulk operations
	poll    time.Duration
	wrap    func(http.RoundTripper) http.RoundTripper

	oauth  oauth2.Config
	authMu sync.Mutex
	token  *oauth2.Token
	expiry time.Time // of token, on the client's clock
	gen    int       // incremented on every login
	naming *naming   // worker IDs ↔ names and hosts
	// memory remembers what the worker lists showed (since when a worker
	// is stalled), shared by the target's clients (WithWorkerMemory).
	memory *WorkerMemory
}

// RetryPolicy bounds the retries of idempotent GETs.
type RetryPolicy struct {
	// Attempts is the total number of tries (1 = no retry). Default 4.
	Attempts int
	// BaseDelay is the first backoff; it doubles per attempt, with full
	// jitter. Default 250ms.
	BaseDelay time.Duration
	// MaxDelay caps one backoff. Default 5s.
	MaxDelay time.Duration
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient replaces the HTTP client (tests, proxies). The TLS settings
// of TargetConfig are then the caller's business.
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithTransport wraps the client's transport (after the TLS settings are
// applied), e.g. to count requests and errors for metrics.
func WithTransport(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(c *Client) { c.wrap = wrap }
}

// WithLogger sets the logger (default: discard). Only methods, paths,
// statuses and durations are logged; never tokens or passwords.
func WithLogger(l *slog.Logger) Option { return func(c *Client) { c.log = l } }

// WithRetry sets the GET retry policy.
func WithRetry(p RetryPolicy) Option { return func(c *Client) { c.retry = p } }

// WithConcurrency fixes the per-target limit of concurrent requests in
// bulk operations (AbortBuilds, AbortAndWait, scans) at n: no adaptation
// (tests, benchmarks of fixed settings). Without it the limit adapts (see
// limit.go) up to TargetConfig.MaxInFlight.
func WithConcurrency(n int) Option {
	return func(c *Client) {
		if n > 0 {
			c.lim = newFixedLimiter(n)
		}
	}
}

// WithRequestTimeout bounds each non-streaming request attempt. Default 30s.
func WithRequestTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// WithPollInterval sets how often AbortAndWait re-reads build statuses.
// Default 1s.
func WithPollInterval(d time.Duration) Option { return func(c *Client) { c.poll = d } }

// WithClock replaces time.Now (ages in results, token expiry).
func WithClock(now func() time.Time) Option { return func(c *Client) { c.now = now } }

// New returns a client for the target. It does not contact the server; the
// first call logs in (or call Login to check credentials at startup).
func New(cfg TargetConfig, opts ...Option) (*Client, error) {
	cfg, base, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	nm, err := compileNaming(cfg.Name, cfg.Vars, cfg.Workers)
	if err != nil {
		return nil, err
	}
	c := &Client{
		cfg:     cfg,
		naming:  nm,
		base:    base,
		log:     slog.New(slog.DiscardHandler),
		retry:   RetryPolicy{Attempts: 4, BaseDelay: 250 * time.Millisecond, MaxDelay: 5 * time.Second},
		timeout: 30 * time.Second,
		sleep:   sleepCtx,
		now:     time.Now,
		lim:     newAdaptiveLimiter(cfg.MaxInFlight),
		poll:    time.Second,
		memory:  NewWorkerMemory(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		h, err := httpClientFor(cfg)
		if err != nil {
			return nil, err
		}
		c.http = h
	}
	if c.wrap != nil {
		h := *c.http
		if h.Transport == nil {
			h.Transport = http.DefaultTransport
		}
		h.Transport = c.wrap(h.Transport)
		c.http = &h
	}
	if c.retry.Attempts < 1 {
		c.retry.Attempts = 1
	}
	c.oauth = oauth2.Config{
		ClientID:     "fly",
		ClientSecret: "Zmx5",
		Endpoint: oauth2.Endpoint{
			TokenURL:  base.String() + "/sky/issuer/token",
			AuthStyle: oauth2.AuthStyleInHeader,
		},
		Scopes: []string{"openid", "profile", "email", "federated:id", "groups"},
	}
	return c, nil
}

func httpClientFor(cfg TargetConfig) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 32
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // operator's explicit choice
	if cfg.CACert != "" {
		pem, err := os.ReadFile(cfg.CACert)
		if err != nil {
			return nil, fmt.Errorf("target %q: reading ca_cert: %w", cfg.Name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("target %q: ca_cert %q contains no PEM certificate", cfg.Name, cfg.CACert)
		}
		tlsCfg.RootCAs = pool
	}
	tr.TLSClientConfig = tlsCfg
	return &http.Client{Transport: tr}, nil
}

// Name returns the target name.
func (c *Client) Name() string { return c.cfg.Name }

// FlyTarget returns the target's name in fly's config (`fly -t`).
func (c *Client) FlyTarget() string { return c.cfg.FlyTarget }

// Team returns the target's default team.
func (c *Client) Team() string { return c.cfg.Team }

// Config returns the target configuration (with defaults applied). Print it
// freely: its formatting redacts the password.
func (c *Client) Config() TargetConfig { return c.cfg }

// URL returns the target's base URL.
func (c *Client) URL() string { return c.base.String() }

func (c *Client) team(t string) string {
	if t == "" {
		return c.cfg.Team
	}
	return t
}

// acquire takes a slot of the per-target bulk limit.
func (c *Client) acquire(ctx context.Context) error { return c.lim.acquire(ctx) }

func (c *Client) release() { c.lim.release() }

// backoff returns the jittered delay before attempt n (n >= 1).
func (c *Client) backoff(n int) time.Duration {
	d := c.retry.BaseDelay << (n - 1)
	if d <= 0 || d > c.retry.MaxDelay {
		d = c.retry.MaxDelay
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1) //nolint:gosec // jitter, not crypto
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drain discards the rest of a body so the connection can be reused.
func drain(rc io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(rc, 64<<10))
	_ = rc.Close()
}
