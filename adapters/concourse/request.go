package concourse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/groundcrew/groundcrew/model/opmodel"
)

// request is one API call.
type request struct {
	method string
	path   string // absolute path below the base URL, without query
	query  url.Values
	body   []byte // nil sends no body
	// action names the call in errors: `prune worker "w-0"`.
	action string
	// stream disables the per-attempt timeout; the caller reads and closes.
	stream bool
}

// tokenExpiryMargin makes the client log in again shortly before the token
// expires rather than receive a 401.
const tokenExpiryMargin = time.Minute

// tokenPath is Concourse's password-grant endpoint.
const tokenPath = "/sky/issuer/token"

// Login logs in now (password grant), replacing any token. Use it at startup
// to report bad credentials early; other methods log in on demand.
func (c *Client) Login(ctx context.Context) error {
	if c.cfg.Username == "" {
		return nil
	}
	c.authMu.Lock()
	defer c.authMu.Unlock()
	return c.loginLocked(ctx)
}

func (c *Client) loginLocked(ctx context.Context) error {
	hctx := context.WithValue(ctx, oauth2.HTTPClient, c.http)
	tok, err := c.oauth.PasswordCredentialsToken(hctx, c.cfg.Username, c.cfg.Password)
	if err != nil {
		c.token = nil
		action := fmt.Sprintf("log in as %q", c.cfg.Username)
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil {
			return &StatusError{
				Target: c.cfg.Name, Action: action, Method: http.MethodPost,
				Path: tokenPath, Code: re.Response.StatusCode,
				Body: string(re.Body), Username: c.cfg.Username,
			}
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %s: %w", c.cfg.Name, action, ctx.Err())
		}
		return fmt.Errorf("%s: %s: cannot reach %s: %w", c.cfg.Name, action, c.base.Host, stripURLError(err))
	}
	c.token = tok
	// measure the lifetime on the client's clock (tests inject one)
	c.expiry = tok.Expiry
	if tok.ExpiresIn > 0 {
		c.expiry = c.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	c.gen++
	c.log.Info("logged in to Concourse", "target", c.cfg.Name, "user", c.cfg.Username, "expires", c.expiry)
	return nil
}

// bearer returns a valid token (logging in if needed) and its generation.
func (c *Client) bearer(ctx context.Context) (string, int, error) {
	if c.cfg.Username == "" {
		return "", 0, nil
	}
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if c.token == nil || (!c.expiry.IsZero() && c.now().Add(tokenExpiryMargin).After(c.expiry)) {
		if err := c.loginLocked(ctx); err != nil {
			return "", 0, err
		}
	}
	return c.token.AccessToken, c.gen, nil
}

// invalidate drops the token of generation gen after a 401, unless another
// goroutine has already logged in again.
func (c *Client) invalidate(gen int) {
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if c.gen == gen {
		c.token = nil
	}
}

// send performs the request and returns a 2xx response whose body the caller
// must close, followed by cancel. GETs are retried on transport errors and
// retryable statuses; every method is repeated once after a 401 and a fresh
// login (a 401 means the server did not act).
func (c *Client) send(ctx context.Context, r request) (*http.Response, context.CancelFunc, error) {
	idempotent := r.method == http.MethodGet || r.method == http.MethodHead
	attempts := 1
	if idempotent {
		attempts = c.retry.Attempts
	}
	reauthed := false
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 && lastErr != nil {
			d := c.backoff(attempt - 1)
			c.log.Warn("retrying Concourse request", "target", c.cfg.Name, "method", r.method,
				"path", r.path, "attempt", attempt, "after", d, "error", lastErr)
			if err := c.sleep(ctx, d); err != nil {
				return nil, nil, fmt.Errorf("%w (gave up waiting to retry: %v)", lastErr, err)
			}
		}
		tok, gen, err := c.bearer(ctx)
		if err != nil {
			return nil, nil, err
		}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if !r.stream && c.timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.timeout)
		}
		if !idempotent {
			// A change is sent only while this process surely holds the
			// leader lease for longer than the request may take, and the
			// request ends when the lease would (opmodel.Guard; no-op
			// unless the call is fenced).
			gctx, gcancel, err := opmodel.Guard(actx, c.timeout)
			if err != nil {
				cancel()
				return nil, nil, fmt.Errorf("%s: %s: not sent: %w", c.cfg.Name, r.action, err)
			}
			actx, cancel = gctx, chainCancel(gcancel, cancel)
		}
		req, err := c.newRequest(actx, r, tok)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		start := time.Now()
		resp, err := c.http.Do(req)
		if !r.stream {
			c.lim.observe(start, time.Since(start), err != nil && ctx.Err() == nil ||
				err == nil && (resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests))
		}
		if err != nil {
			cancel()
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("%s: %s: %w", c.cfg.Name, r.action, ctx.Err())
			}
			lastErr = fmt.Errorf("%s: %s: cannot reach %s (check the target's url and that the web node is up): %w",
				c.cfg.Name, r.action, c.base.Host, stripURLError(err))
			continue
		}
		c.log.Debug("concourse request", "target", c.cfg.Name, "method", r.method, "path", r.path,
			"status", resp.StatusCode, "duration", time.Since(start))
		if resp.StatusCode == http.StatusUnauthorized && c.cfg.Username != "" && !reauthed {
			drain(resp.Body)
			cancel()
			reauthed = true
			c.invalidate(gen)
			c.log.Info("token refused, logging in again", "target", c.cfg.Name)
			attempt-- // the re-login does not use up a retry
			lastErr = nil
			continue
		}
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
			drain(resp.Body)
			cancel()
			se := &StatusError{
				Target: c.cfg.Name, Action: r.action, Method: r.method, Path: r.path,
				Code: resp.StatusCode, Body: string(body), Username: c.cfg.Username,
			}
			if se.Retryable() {
				lastErr = se
				continue
			}
			return nil, nil, se
		}
		return resp, cancel, nil
	}
	return nil, nil, lastErr
}

// chainCancel calls both cancels.
func chainCancel(a, b context.CancelFunc) context.CancelFunc {
	return func() { a(); b() }
}

func (c *Client) newRequest(ctx context.Context, r request, tok string) (*http.Request, error) {
	u := *c.base
	u.Path = strings.TrimRight(c.base.Path, "/") + r.path
	u.RawQuery = r.query.Encode()
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), body)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: building request: %w", c.cfg.Name, r.action, err)
	}
	if r.body != nil || r.method == http.MethodPut {
		req.Header.Set("Content-Type", "application/json")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("User-Agent", "groundcrew")
	return req, nil
}

// call sends the request and decodes a JSON body into out (if non-nil).
// Bodies are decoded whatever their Content-Type: Concourse answers checks
// with JSON labelled text/plain.
func (c *Client) call(ctx context.Context, r request, out any) (http.Header, error) {
	resp, cancel, err := c.send(ctx, r)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer drain(resp.Body)
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return nil, fmt.Errorf("%s: %s: decoding the %d answer: %w", c.cfg.Name, r.action, resp.StatusCode, err)
		}
	}
	return resp.Header, nil
}

func (c *Client) get(ctx context.Context, path, action string, out any) error {
	_, err := c.call(ctx, request{method: http.MethodGet, path: path, action: action}, out)
	return err
}

// stripURLError removes the *url.Error wrapper, whose message repeats the
// method and full URL, keeping the cause.
func stripURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("concourse: marshalling request body: %v", err)) // only static types are passed
	}
	return b
}

// pathEscape escapes one path segment.
func pathEscape(s string) string { return url.PathEscape(s) }

func teamPath(team string) string { return "/api/v1/teams/" + pathEscape(team) }

func pipelinePath(team, pipeline string) string {
	return teamPath(team) + "/pipelines/" + pathEscape(pipeline)
}
