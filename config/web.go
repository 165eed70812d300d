package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/secret"
)

// Web configures the pages of runs and incidents (package web), served on
// server.listen or on their own listener. There is no anonymous access:
// pages open with a signed link (link_key_file) or through an
// authenticating proxy (trusted_header from trusted_proxies), or both.
type Web struct {
	// URL is the pages' external address ("https://groundcrew.example.com"):
	// the links in chat start with it.
	URL string `yaml:"url"`
	// Listen, when set, serves the pages on their own address (only
	// them); otherwise on server.listen.
	Listen string `yaml:"listen"`
	// LinkKey (or link_key_file, or GROUNDCREW_WEB_LINK_KEY) is the HMAC
	// key of signed links: at least 16 bytes, random.
	LinkKey     secret.Secret `yaml:"link_key"`
	LinkKeyFile string        `yaml:"link_key_file"`
	// PreviousLinkKey (or previous_link_key_file, or
	// GROUNDCREW_WEB_PREVIOUS_LINK_KEY) is the key being rotated out: the
	// links it signed still open (until they expire), none is signed
	// with it. Remove it once link_ttl has passed since the rotation.
	PreviousLinkKey     secret.Secret `yaml:"previous_link_key"`
	PreviousLinkKeyFile string        `yaml:"previous_link_key_file"`
	// LinkTTL is how long a signed link lasts (default 7d).
	LinkTTL Days `yaml:"link_ttl"`
	// TrustedHeader names the header an authenticating proxy sets to the
	// user ("X-Forwarded-User"), believed only from TrustedProxies
	// (addresses or CIDR ranges of the proxy).
	TrustedHeader  string   `yaml:"trusted_header"`
	TrustedProxies []string `yaml:"trusted_proxies"`

	// Proxies are TrustedProxies parsed (by Parse).
	Proxies []netip.Prefix `yaml:"-"`
}

// MinLinkKey is the shortest link key accepted, in bytes.
const MinLinkKey = 16

// Enabled reports whether the pages are configured.
func (w Web) Enabled() bool {
	return w.URL != "" || w.Listen != "" || w.LinkKey.IsSet() || w.LinkKeyFile != "" || w.PreviousLinkKey.IsSet() || w.PreviousLinkKeyFile != "" ||
		w.TrustedHeader != "" || len(w.TrustedProxies) > 0
}

// validateWeb checks web: and resolves its key.
func (c *Config) validateWeb() Errors {
	var errs Errors
	add := func(path, format string, args ...any) {
		errs = append(errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	w := &c.Web
	if w.LinkKeyFile != "" && !filepath.IsAbs(w.LinkKeyFile) && c.Path != "" {
		w.LinkKeyFile = filepath.Join(filepath.Dir(c.Path), w.LinkKeyFile)
	}
	key, err := secret.Resolve("web.link_key", w.LinkKey, w.LinkKeyFile, EnvKey("web", "link_key"))
	if err != nil {
		add("web.link_key", "%v", err)
	}
	w.LinkKey, w.LinkKeyFile = key, ""
	if w.PreviousLinkKeyFile != "" && !filepath.IsAbs(w.PreviousLinkKeyFile) && c.Path != "" {
		w.PreviousLinkKeyFile = filepath.Join(filepath.Dir(c.Path), w.PreviousLinkKeyFile)
	}
	prev, err := secret.Resolve("web.previous_link_key", w.PreviousLinkKey, w.PreviousLinkKeyFile, EnvKey("web", "previous_link_key"))
	if err != nil {
		add("web.previous_link_key", "%v", err)
	}
	w.PreviousLinkKey, w.PreviousLinkKeyFile = prev, ""
	if !w.Enabled() && !prev.IsSet() {
		return errs
	}
	if key.IsSet() && len(key.Value()) < MinLinkKey {
		add("web.link_key", "is %d bytes; a link key needs at least %d random bytes (head -c 32 /dev/urandom | base64 > link-key)", len(key.Value()), MinLinkKey)
	}
	switch {
	case !prev.IsSet():
	case !key.IsSet():
		add("web.previous_link_key", "is set without web.link_key: to rotate, put the new key in link_key_file and the old one in previous_link_key_file")
	case prev.Value() == key.Value():
		add("web.previous_link_key", "is the same as web.link_key: nothing is rotated; put a new key in link_key_file (head -c 32 /dev/urandom | base64)")
	case len(prev.Value()) < MinLinkKey:
		add("web.previous_link_key", "is %d bytes; a link key has at least %d", len(prev.Value()), MinLinkKey)
	}
	switch u, err := url.Parse(w.URL); {
	case w.URL == "":
		add("web.url", "is not set: the links in chat need the pages' external address (https://groundcrew.example.com)")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "":
		add("web.url", "%q is not an http(s) address without query (https://groundcrew.example.com)", w.URL)
	}
	if w.Listen != "" {
		if _, _, err := net.SplitHostPort(w.Listen); err != nil {
			add("web.listen", "%q is not host:port (0.0.0.0:8081)", w.Listen)
		} else if w.Listen == c.Server.Listen {
			add("web.listen", "is server.listen; leave it out to serve the pages there")
		}
	}
	if w.LinkTTL < 0 || time.Duration(w.LinkTTL) > 400*24*time.Hour {
		add("web.link_ttl", "must be between 1m and 400d")
	}
	w.Proxies = nil
	for i, p := range w.TrustedProxies {
		pf, err := netip.ParsePrefix(strings.TrimSpace(p))
		if err != nil {
			a, aerr := netip.ParseAddr(strings.TrimSpace(p))
			if aerr != nil {
				add(fmt.Sprintf("web.trusted_proxies[%d]", i), "%q is not an address or CIDR range (10.0.0.0/8, 192.0.2.7)", p)
				continue
			}
			pf = netip.PrefixFrom(a, a.BitLen())
		}
		w.Proxies = append(w.Proxies, pf.Masked())
	}
	switch {
	case w.TrustedHeader != "" && len(w.TrustedProxies) == 0:
		add("web.trusted_proxies", "is empty: name the proxy's addresses; the header %q is believed only from them (anyone else could send it)", w.TrustedHeader)
	case w.TrustedHeader == "" && len(w.TrustedProxies) > 0:
		add("web.trusted_header", "is not set: name the header the proxy puts the user in (X-Forwarded-User, X-Auth-Request-User)")
	case w.TrustedHeader != "" && !validHeader(w.TrustedHeader):
		add("web.trusted_header", "%q is not a header name", w.TrustedHeader)
	}
	if !key.IsSet() && w.TrustedHeader == "" {
		add("web", "has no way in: set link_key_file (signed links in chat) or trusted_header and trusted_proxies (an authenticating proxy), or both; there is no anonymous access")
	}
	return errs
}

func validHeader(h string) bool {
	for _, c := range h {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return h != ""
}
