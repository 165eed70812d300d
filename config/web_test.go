package config

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const webBase = `
chat: {platform: console}
targets: {infra-prd: {simulator: {}}}
`

func TestParse_WebReadsTheKeyAndTheProxies(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "link-key", "0123456789abcdef0123456789abcdef\n")
	p := write(t, dir, "groundcrew.yaml", webBase+`
web:
  url: https://groundcrew.example.com
  link_key_file: link-key
  link_ttl: 3d
  trusted_header: X-Forwarded-User
  trusted_proxies: [10.0.0.0/8, 192.0.2.7]
`)
	c, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", c.Web.LinkKey.Value())
	assert.Equal(t, 3*24*time.Hour, time.Duration(c.Web.LinkTTL))
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32")}, c.Web.Proxies)
	assert.NotContains(t, c.Web.LinkKey.String(), "0123", "the key never prints")
}

func TestParse_WebReadsThePreviousKeyOfARotation(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "link-key", "fedcba9876543210fedcba9876543210\n")
	write(t, dir, "old-link-key", "0123456789abcdef0123456789abcdef\n")
	p := write(t, dir, "groundcrew.yaml", webBase+`
web:
  url: https://groundcrew.example.com
  link_key_file: link-key
  previous_link_key_file: old-link-key
`)
	c, err := Load(p)
	require.NoError(t, err)
	assert.Equal(t, "fedcba9876543210fedcba9876543210", c.Web.LinkKey.Value())
	assert.Equal(t, "0123456789abcdef0123456789abcdef", c.Web.PreviousLinkKey.Value())
	t.Setenv("GROUNDCREW_WEB_PREVIOUS_LINK_KEY", "abcdefabcdefabcdefabcdef")
	c, err = Load(p)
	require.NoError(t, err)
	assert.Equal(t, "abcdefabcdefabcdefabcdef", c.Web.PreviousLinkKey.Value(), "the variable wins, as for every secret")
}

func TestParse_WebErrors(t *testing.T) {
	cases := map[string]string{
		"url:\n    https://gc.example.com\n":                                                                                            "",
		`{url: "https://gc.example.com", link_key: short}`:                                                                              "web.link_key: is 5 bytes; a link key needs at least 16",
		`{link_key: 0123456789abcdef0123}`:                                                                                              "web.url: is not set",
		`{url: "ftp://x", link_key: 0123456789abcdef0123}`:                                                                              `web.url: "ftp://x" is not an http(s) address`,
		`{url: "https://gc.example.com"}`:                                                                                               "web: has no way in",
		`{url: "https://gc.example.com", trusted_header: X-Forwarded-User}`:                                                             "web.trusted_proxies: is empty",
		`{url: "https://gc.example.com", trusted_proxies: [10.0.0.0/8]}`:                                                                "web.trusted_header: is not set",
		`{url: "https://gc.example.com", trusted_header: X-User, trusted_proxies: [ten.zero]}`:                                          `web.trusted_proxies[0]: "ten.zero" is not an address or CIDR range`,
		`{url: "https://gc.example.com", link_key: 0123456789abcdef0123, listen: "127.0.0.1:8080"}`:                                     "web.listen: is server.listen",
		`{url: "https://gc.example.com", link_key: 0123456789abcdef0123, link_ttl: 900d}`:                                               "web.link_ttl: must be between",
		`{url: "https://gc.example.com", link_key: 0123456789abcdef0123, trusted_header: "X User", trusted_proxies: [10.0.0.1]}`:        `web.trusted_header: "X User" is not a header name`,
		`{url: "https://gc.example.com", trusted_header: X-User, trusted_proxies: [10.0.0.1], previous_link_key: 0123456789abcdef0123}`: "web.previous_link_key: is set without web.link_key",
		`{url: "https://gc.example.com", link_key: 0123456789abcdef0123, previous_link_key: 0123456789abcdef0123}`:                      "web.previous_link_key: is the same as web.link_key",
		`{url: "https://gc.example.com", link_key: 0123456789abcdef0123, previous_link_key: short}`:                                     "web.previous_link_key: is 5 bytes",
		`{url: "https://gc.example.com", link_key: 0123456789abcdef0123, previous_link_key_file: /nonexistent/old-key}`:                 "web.previous_link_key_file: reading /nonexistent/old-key",
		`{previous_link_key: 0123456789abcdef0123}`:                                                                                     "web.previous_link_key: is set without web.link_key",
	}
	for web, want := range cases {
		if want == "" {
			continue
		}
		t.Run(want, func(t *testing.T) {
			p := write(t, t.TempDir(), "groundcrew.yaml", webBase+"server: {listen: 127.0.0.1:8080}\nweb: "+web+"\n")
			_, err := Load(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), want)
		})
	}
}
