package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A signed link carries a token: the link's expiry and an HMAC-SHA256
// (truncated to 128 bits) over a scope — the page it opens ("run:r-7f3a…",
// "incident:i-3f2a…", or "site" for every page) — and that expiry, with
// the key of web.link_key_file (verified with web.previous_link_key_file
// too, while a key is being rotated). It is written "<expiry>-<mac>": the expiry
// in unix seconds, base 36, and the MAC in lower-case base32, so a token is
// made of [0-9a-z-] only and survives every chat's Markdown and
// auto-linking. Nothing else is in it: who opened a link is not known (a
// link is a bearer credential, like a chat message's link), which is why
// it expires.

// Errors of Verify. Both refuse the request (403); they differ in what
// the refusal page says.
var (
	// ErrTokenInvalid: no token, a malformed one, or one not signed with
	// this key for this page (tampered, or a key that changed).
	ErrTokenInvalid = errors.New("the link's token is not valid for this page")
	// ErrTokenExpired: a well-signed token past its expiry.
	ErrTokenExpired = errors.New("the link has expired")
)

// macBytes is the length of the truncated MAC (128 bits, as RFC 2104
// allows: at least half the hash).
const macBytes = 16

// maxTokenLen bounds what ParseToken reads (a real token is ~35 bytes).
const maxTokenLen = 64

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Scopes of tokens.
const (
	ScopeSite = "site"
)

// RunScope is the scope of a run's page (and its .md and live updates).
func RunScope(id string) string { return "run:" + strings.ToLower(id) }

// IncidentScope is the scope of an incident's page.
func IncidentScope(id string) string { return "incident:" + strings.ToLower(id) }

// Signer signs link tokens with one key and verifies them with it and
// with the previous keys it was given (a key rotation: the links signed
// before it keep opening until they expire or the previous key is
// removed).
type Signer struct {
	key      []byte
	previous [][]byte
}

// MinKeyBytes is the shortest key a Signer accepts.
const MinKeyBytes = 16

// NewSigner returns a signer for key (at least MinKeyBytes) that also
// accepts the tokens of the previous keys.
func NewSigner(key []byte, previous ...[]byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the link key has %d bytes; it needs at least %d (e.g. head -c 32 /dev/urandom | base64 > link-key)", len(key), MinKeyBytes)
	}
	s := &Signer{key: append([]byte(nil), key...)}
	for _, p := range previous {
		if len(p) < MinKeyBytes {
			return nil, fmt.Errorf("the previous link key has %d bytes; it needs at least %d", len(p), MinKeyBytes)
		}
		if hmac.Equal(p, key) {
			continue // the same key twice: nothing to accept in addition
		}
		s.previous = append(s.previous, append([]byte(nil), p...))
	}
	return s, nil
}

// Previous is how many previous keys the signer accepts.
func (s *Signer) Previous() int { return len(s.previous) }

func (s *Signer) mac(scope string, exp int64) []byte { return mac(s.key, scope, exp) }

func mac(key []byte, scope string, exp int64) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("groundcrew web link v1\x00"))
	m.Write([]byte(scope))
	m.Write([]byte{0})
	m.Write([]byte(strconv.FormatInt(exp, 10)))
	return m.Sum(nil)[:macBytes]
}

// Sign returns the token for scope, valid until exp.
func (s *Signer) Sign(scope string, exp time.Time) string {
	e := exp.Unix()
	return strconv.FormatInt(e, 36) + "-" + b32.EncodeToString(s.mac(scope, e))
}

// Verify checks tok for scope at now: ErrTokenInvalid when it is not
// the token of this key (or of a previous key) for scope, ErrTokenExpired
// (wrapped, with when) when it is but its time is over. The MAC is
// checked first, so an expired token whose expiry was edited reads as
// invalid, not expired.
func (s *Signer) Verify(scope, tok string, now time.Time) (time.Time, error) {
	exp, got, err := ParseToken(tok)
	if err != nil {
		return time.Time{}, ErrTokenInvalid
	}
	ok := hmac.Equal(got, s.mac(scope, exp.Unix()))
	for _, k := range s.previous {
		ok = ok || hmac.Equal(got, mac(k, scope, exp.Unix()))
	}
	if !ok {
		return time.Time{}, ErrTokenInvalid
	}
	if !now.Before(exp) {
		return exp, fmt.Errorf("%w (at %s)", ErrTokenExpired, exp.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return exp, nil
}

// ParseToken splits a token into its expiry and MAC without checking the
// MAC. It refuses anything that is not exactly "<base36 seconds>-<26
// base32 characters>" with a positive expiry.
func ParseToken(tok string) (time.Time, []byte, error) {
	if len(tok) > maxTokenLen {
		return time.Time{}, nil, errors.New("token too long")
	}
	e, m, ok := strings.Cut(tok, "-")
	if !ok || e == "" || len(e) > 12 {
		return time.Time{}, nil, errors.New("token: no expiry")
	}
	for _, c := range e {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return time.Time{}, nil, errors.New("token: bad expiry")
		}
	}
	exp, err := strconv.ParseInt(e, 36, 64)
	if err != nil || exp <= 0 || exp > maxExpiry || strconv.FormatInt(exp, 36) != e {
		return time.Time{}, nil, errors.New("token: bad expiry")
	}
	if len(m) != b32.EncodedLen(macBytes) {
		return time.Time{}, nil, errors.New("token: bad MAC length")
	}
	mac, err := b32.DecodeString(m)
	if err != nil || len(mac) != macBytes || b32.EncodeToString(mac) != m {
		return time.Time{}, nil, errors.New("token: bad MAC")
	}
	return time.Unix(exp, 0), mac, nil
}

// maxExpiry is the year 9999: no token expires later.
const maxExpiry = 253402300799
