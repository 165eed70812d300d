package concourse

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Sentinel errors. A *StatusError matches the one that fits its status code
// through errors.Is, so callers never look at codes or strings:
//
//	if errors.Is(err, concourse.ErrNotFound) { … }
var (
	// ErrNotFound: the object does not exist (HTTP 404), or a lookup such as
	// Worker found nothing.
	ErrNotFound = errors.New("not found")
	// ErrUnauthorized: the token was refused (HTTP 401) or the login failed;
	// its message says "login failed for target X as user Y: check password_file".
	ErrUnauthorized = errors.New("not authorized")
	// ErrForbidden: the user lacks the role the action needs (HTTP 403).
	ErrForbidden = errors.New("forbidden")
	// ErrConflict: the action is not allowed in the object's state (HTTP 409,
	// which Concourse returns for archived pipelines).
	ErrConflict = errors.New("conflict")
	// ErrStop may be returned by an EachBuild callback to end the iteration
	// early without an error.
	ErrStop = errors.New("stop iteration")
)

// StatusError is a non-2xx answer from Concourse. Its message names the
// target, the action and the object, the status and the server's reason, and
// for the common cases what to do next:
//
//	infra-prd: prune worker "w-0": 400 cannot prune running worker
type StatusError struct {
	Target string // target name ("infra-prd")
	Action string // what was attempted (`prune worker "w-0"`)
	Method string
	Path   string
	Code   int
	// Body is the response body (at most 4 KiB), as received.
	Body string
	// Username is the Concourse user the bot acted as; used in hints.
	Username string
}

// Error implements error.
func (e *StatusError) Error() string {
	var b strings.Builder
	if e.Code == http.StatusUnauthorized && e.Path == tokenPath {
		// a refused login is a credentials problem, not an outage
		fmt.Fprintf(&b, "login failed for target %s as user %s: %d %s: check password_file (and that the user exists in Concourse)",
			e.Target, e.Username, e.Code, e.Reason())
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %s: %d %s", e.Target, e.Action, e.Code, e.Reason())
	if h := e.hint(); h != "" {
		b.WriteString(": ")
		b.WriteString(h)
	}
	return b.String()
}

// Reason extracts the server's explanation from the body: the `stderr` of a
// prune refusal, the `detail` of a JSON:API error, an OAuth error
// description, or the plain text. An empty body gives the status text.
func (e *StatusError) Reason() string {
	body := strings.TrimSpace(e.Body)
	if body == "" || body == "null" {
		return strings.ToLower(http.StatusText(e.Code))
	}
	var doc struct {
		Stderr      string `json:"stderr"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
		Errors      []struct {
			Title  string `json:"title"`
			Detail string `json:"detail"`
		} `json:"errors"`
	}
	if strings.HasPrefix(body, "{") && json.Unmarshal([]byte(body), &doc) == nil {
		switch {
		case doc.Stderr != "":
			return doc.Stderr
		case len(doc.Errors) > 0 && doc.Errors[0].Detail != "":
			return doc.Errors[0].Detail
		case doc.Description != "":
			return doc.Description
		case doc.Error != "":
			return doc.Error
		}
	}
	const max = 200
	if len(body) > max {
		body = body[:max] + "…"
	}
	return body
}

func (e *StatusError) hint() string {
	switch {
	case e.Code == http.StatusUnauthorized:
		if e.Username == "" {
			return fmt.Sprintf("target %s has no credentials: set username and password_file", e.Target)
		}
		return fmt.Sprintf("login failed for target %s as user %s: check password_file", e.Target, e.Username)
	case e.Code == http.StatusForbidden:
		who := "the bot's user"
		if e.Username != "" {
			who = fmt.Sprintf("user %q", e.Username)
		}
		return fmt.Sprintf("%s lacks the role this needs; give it member or pipeline-operator on the owning team, or use an admin account", who)
	case e.Code == http.StatusConflict:
		return "the pipeline is archived; set it again with fly set-pipeline before acting on it"
	case e.Code >= 500:
		return "the Concourse web node failed; retry later or check its logs"
	}
	return ""
}

// LoginRefused reports a credentials problem (401): the digest and other
// consumers then say so instead of "unreachable".
func (e *StatusError) LoginRefused() bool { return e.Code == http.StatusUnauthorized }

// Is maps the status code to the package's sentinel errors.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.Code == http.StatusNotFound
	case ErrUnauthorized:
		return e.Code == http.StatusUnauthorized
	case ErrForbidden:
		return e.Code == http.StatusForbidden
	case ErrConflict:
		return e.Code == http.StatusConflict
	}
	return false
}

// Retryable reports whether repeating the same request may succeed: server
// errors and rate limiting. The client retries only idempotent GETs.
func (e *StatusError) Retryable() bool {
	return e.Code >= 500 || e.Code == http.StatusTooManyRequests
}

// notFoundError is returned by lookups that filter a list (Worker).
func notFoundError(target, what string) error {
	return fmt.Errorf("%s: %s not found: %w", target, what, ErrNotFound)
}
