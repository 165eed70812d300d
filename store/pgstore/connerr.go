package pgstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrRefused marks a connection the server refused for a reason no retry
// mends: a wrong password, a role it does not know (or pg_hba.conf does
// not let in), a database that does not exist. serve exits with it rather
// than wait for the store (errors.Is).
var ErrRefused = errors.New("the database refused the connection")

// connError is a failed connection said once. pgx tries each address,
// and under sslmode=prefer each again without TLS, and lists every
// attempt: the same failure twice ("connection refused", the same
// FATAL), or a TLS refusal before the answer that matters, one line each.
// Unwrap keeps pgx's error for errors.As.
type connError struct {
	msg     string
	err     error
	refused bool
}

func (e *connError) Error() string { return e.msg }

func (e *connError) Unwrap() error { return e.err }

// Is makes errors.Is(err, ErrRefused) true for a refusal no retry mends.
func (e *connError) Is(target error) bool { return e.refused && target == ErrRefused }

// connectError says a connection failure once and, when the server
// refused it for good, what to fix. Other errors are returned as they are.
func connectError(err error) error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) {
		return err
	}
	var kept []string
	for _, line := range strings.Split(ce.Unwrap().Error(), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || said(kept, line) {
			continue
		}
		kept = append(kept, line)
	}
	if len(kept) > 1 {
		// Under sslmode=prefer a server without TLS refuses it and pgx
		// tries again without: what that try says is the news.
		kept = slices.DeleteFunc(kept, func(l string) bool { return strings.HasSuffix(l, "tls error: server refused TLS connection") })
	}
	msg := fmt.Sprintf("failed to connect to `user=%s database=%s`: %s", ce.Config.User, ce.Config.Database, strings.Join(kept, "; "))
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return &connError{msg: msg, err: err}
	}
	var fix string
	switch pe.Code {
	case "28P01": // invalid_password
		fix = fmt.Sprintf("the password of role %q is wrong: fix the store's DSN", ce.Config.User)
	case "28000": // invalid_authorization_specification
		fix = fmt.Sprintf("the server does not let role %q in (no such role, or pg_hba.conf refuses it): create the role or fix the DSN", ce.Config.User)
	case "3D000": // invalid_catalog_name
		fix = fmt.Sprintf("database %q does not exist: create it (empty, owned by the role; groundcrew creates its schema) or fix the DSN", ce.Config.Database)
	default:
		return &connError{msg: msg, err: err}
	}
	return &connError{msg: fix + " — " + msg, err: err, refused: true}
}

// said reports whether line repeats one of kept: the same text, or the
// end of a line that already says it ("hostname resolving error: lookup
// db: no such host", then "lookup db: no such host").
func said(kept []string, line string) bool {
	for _, k := range kept {
		if strings.HasSuffix(k, line) {
			return true
		}
	}
	return false
}

// Unreachable reports whether err (from Open) means the store could not
// be reached or is not taking connections yet — the server down or
// restarting, the network or DNS not ready, too many connections — which
// waiting mends. A refusal (ErrRefused), a store newer than this binary,
// a DSN that does not parse or a failed migration are not.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, ErrRefused) || errors.Is(err, ErrTooNew) {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), // connection exception
			strings.HasPrefix(pe.Code, "53"),       // insufficient resources (too many connections)
			pe.Code == "57P01", pe.Code == "57P02", // terminated by an administrator, crash shutdown
			pe.Code == "57P03": // cannot connect now (starting up, in recovery)
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}
