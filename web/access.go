package web

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/human"
)

// Proxy is access through an authenticating reverse proxy (oauth2-proxy
// and friends): a request from one of From carrying Header is let in as
// that user. The header is believed only from those addresses (the
// connection's, never X-Forwarded-For): anyone else could send it.
type Proxy struct {
	Header string
	From   []netip.Prefix
}

func (p Proxy) enabled() bool { return p.Header != "" && len(p.From) > 0 }

// trusts reports whether the connection comes from a trusted proxy.
func (p Proxy) trusts(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, pf := range p.From {
		if pf.Contains(a) {
			return true
		}
	}
	return false
}

// viewer is who is looking and what they may see.
type viewer struct {
	// User is the proxy's user ("" with a link).
	User string
	// Site: every page (the proxy, or a site link); else only Scope.
	Site  bool
	Scope string
	// Token and Exp are the link's, to sign the links of the page with
	// no longer a life than the link it was opened with.
	Token string
	Exp   time.Time
}

// refusal is why a request is refused, in words for the 403 page.
type refusal struct {
	Title string
	Why   string
	Hint  string
}

// Refusals. The page says which, so a person knows whether to ask for a
// fresh link or to call whoever runs the proxy.
var (
	refuseExpired = refusal{Title: "This link has expired",
		Hint: "Ask groundcrew in the run's thread for a fresh one: `/runbook summary <run>` carries a new link."}
	refuseInvalid = refusal{Title: "This link is not valid",
		Why:  "Its signature does not match this page: it was changed, cut short when it was copied, or signed with a key that has since changed.",
		Hint: "Open the link from the chat message again, whole. If it still fails, the link key was changed without keeping the old one: ask for a fresh link (`/runbook summary <run>` carries one)."}
	refuseNone = refusal{Title: "You need a link to see this page",
		Why:  "Pages are opened from the links groundcrew posts in chat, or through the sign-in proxy.",
		Hint: "Open the link in the run's or incident's thread. Operators: `groundcrew web link` prints a link to every page."}
	refuseUntrusted = refusal{Title: "Not signed in",
		Why:  "This request did not come through the sign-in proxy (its address is not one of web.trusted_proxies), so its user header is not believed.",
		Hint: "Open the page through the proxy's address, or with a link from chat."}
	refuseNoUser = refusal{Title: "Not signed in",
		Why:  "The sign-in proxy sent this request without the user header groundcrew expects.",
		Hint: "Ask whoever runs the proxy to pass the user in web.trusted_header."}
)

// authorize decides who may see a page of scope ("" for pages only a site
// viewer may see: the index, the targets).
func (s *Server) authorize(r *http.Request, scope string) (viewer, *refusal) {
	p := s.o.Proxy
	header := ""
	if p.Header != "" {
		header = strings.TrimSpace(r.Header.Get(p.Header))
	}
	trusted := p.enabled() && p.trusts(r.RemoteAddr)
	if trusted && header != "" {
		return viewer{User: header, Site: true}, nil
	}
	tok := r.URL.Query().Get("t")
	if tok != "" && s.o.Links.Signed() {
		now := s.o.Now()
		signer := s.o.Links.signer
		exp, err := signer.Verify(ScopeSite, tok, now)
		if err == nil {
			return viewer{Site: true, Token: tok, Exp: exp}, nil
		}
		if scope != "" {
			if exp2, err2 := signer.Verify(scope, tok, now); err2 == nil || errors.Is(err2, ErrTokenExpired) {
				exp, err = exp2, err2
			}
			if err == nil {
				return viewer{Scope: scope, Token: tok, Exp: exp}, nil
			}
		}
		if errors.Is(err, ErrTokenExpired) {
			ref := refuseExpired
			ref.Why = "It was valid until " + exp.UTC().Format("2006-01-02 15:04 UTC") + "; links last " + HumanTTL(s.o.Links.TTL()) + "."
			return viewer{}, &ref
		}
		return viewer{}, &refuseInvalid
	}
	switch {
	case trusted:
		return viewer{}, &refuseNoUser
	case header != "" && p.enabled():
		return viewer{}, &refuseUntrusted
	case tok != "":
		return viewer{}, &refuseInvalid
	}
	return viewer{}, &refuseNone
}

// link is the address of a page of scope seen by v: a site viewer's
// links carry their token (the proxy's none); a run or incident viewer
// gets a link to a page linked from theirs (the incident of the run's
// thread, the runs of the incident's thread) signed for that page and no
// longer than their own link.
func (s *Server) link(v viewer, path, scope string, extra map[string]string) string {
	q := map[string][]string{}
	for k, val := range extra {
		q[k] = []string{val}
	}
	switch {
	case v.Token == "":
		return signedPath(nil, path, scope, time.Time{}, q)
	case v.Site:
		q["t"] = []string{v.Token}
		return signedPath(nil, path, scope, time.Time{}, q)
	case v.Scope == scope:
		q["t"] = []string{v.Token}
		return signedPath(nil, path, scope, time.Time{}, q)
	}
	return signedPath(s.o.Links.signer, path, scope, v.Exp, q)
}

// HumanTTL says a link's lifetime in words ("7 days", "12 h").
func HumanTTL(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		if n := int(d / (24 * time.Hour)); n != 1 {
			return fmt.Sprintf("%d days", n)
		}
		return "1 day"
	}
	return human.Duration(d)
}
