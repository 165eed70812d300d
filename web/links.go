package web

import (
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Links makes the addresses of pages, signed when a key is configured:
// what the engine puts in a run's thread root, the incident manager in an
// incident's, and the pages in their own links. It is safe for
// concurrent use.
type Links struct {
	base   atomic.Pointer[string]
	signer *Signer // nil: no signed links (the pages are behind an auth proxy)
	ttl    time.Duration
	now    func() time.Time
}

// DefaultLinkTTL is how long a signed link lasts when web.link_ttl is not set.
const DefaultLinkTTL = 7 * 24 * time.Hour

// NewLinks returns links under base (the pages' external address,
// "https://groundcrew.example.com"; it may be set later with SetBase),
// signed by signer (nil: unsigned, for an auth proxy) and valid for ttl.
func NewLinks(base string, signer *Signer, ttl time.Duration, now func() time.Time) *Links {
	if ttl <= 0 {
		ttl = DefaultLinkTTL
	}
	if now == nil {
		now = time.Now
	}
	l := &Links{signer: signer, ttl: ttl, now: now}
	l.SetBase(base)
	return l
}

// SetBase sets the external address of the pages (the demo learns its
// port only once it listens).
func (l *Links) SetBase(base string) {
	b := strings.TrimRight(base, "/")
	l.base.Store(&b)
}

// Base is the external address of the pages ("" when unknown).
func (l *Links) Base() string {
	if l == nil {
		return ""
	}
	return *l.base.Load()
}

// Signed reports whether links carry a token.
func (l *Links) Signed() bool { return l != nil && l.signer != nil }

// TTL is how long a signed link lasts.
func (l *Links) TTL() time.Duration { return l.ttl }

// expiry is a link's expiry for something that started at start: start
// plus a whole number of TTLs, the first that is at least half a TTL
// away. The link in a thread root is therefore the same at every edit of
// the root (no edit changes it for nothing), and a link given later (a
// summary asked for days after) still has at least half a TTL to live.
func (l *Links) expiry(start time.Time) time.Time {
	now := l.now()
	if start.IsZero() || start.After(now) {
		start = now
	}
	exp := start.Add(l.ttl)
	if min := now.Add(l.ttl / 2); exp.Before(min) {
		n := min.Sub(start)/l.ttl + 1
		exp = start.Add(n * l.ttl)
	}
	return exp
}

// Run is the address of run id's page (started at started), "" when the
// pages' address is not known.
func (l *Links) Run(id string, started time.Time) string {
	return l.link("/runs/"+strings.ToLower(id), RunScope(id), l.expiryOrZero(started))
}

// Incident is the address of incident id's page (opened at opened).
func (l *Links) Incident(id string, opened time.Time) string {
	return l.link("/incidents/"+strings.ToLower(id), IncidentScope(id), l.expiryOrZero(opened))
}

// Site is the address of the index page, with a token for every page
// valid for the TTL from now (the demo, `groundcrew web link`).
func (l *Links) Site() string {
	return l.link("/", ScopeSite, l.expiryOrZero(time.Time{}))
}

// Make is the address of path opened with a token for scope valid until
// exp (`groundcrew web link`: a link asked for by hand, from now). It is
// "" when the pages' address is not known, and unsigned without a key.
func (l *Links) Make(path, scope string, exp time.Time) string {
	if l.signer == nil {
		exp = time.Time{}
	}
	return l.link(path, scope, exp)
}

func (l *Links) expiryOrZero(start time.Time) time.Time {
	if l == nil || l.signer == nil {
		return time.Time{}
	}
	return l.expiry(start)
}

// link is base+path, with ?t=<token for scope until exp> when signed.
func (l *Links) link(path, scope string, exp time.Time) string {
	base := l.Base()
	if base == "" {
		return ""
	}
	return base + signedPath(l.signer, path, scope, exp, nil)
}

// signedPath is path with the token for scope until exp (none without a
// signer or with a zero exp) and extra query parameters.
func signedPath(s *Signer, path, scope string, exp time.Time, extra url.Values) string {
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	if s != nil && !exp.IsZero() {
		q.Set("t", s.Sign(scope, exp))
	}
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
