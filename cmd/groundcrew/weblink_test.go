package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/incident"
	"github.com/groundcrew/groundcrew/model/runmodel"
	"github.com/groundcrew/groundcrew/store"
	"github.com/groundcrew/groundcrew/web"
)

const (
	webLinkKey = "fedcba9876543210fedcba9876543210"
	webOldKey  = "0123456789abcdef0123456789abcdef"
)

// webLinkConfig writes a config with web: (extra added to it) and a store
// holding run r-web0000001 and incident i-3f2a9c.
func webLinkConfig(t *testing.T, extra string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "link-key"), []byte(webLinkKey+"\n"), 0o600))
	p := filepath.Join(dir, "groundcrew.yaml")
	require.NoError(t, os.WriteFile(p, []byte("store: gc.db\nserver: {admin_socket: gc.sock}\nchat: {platform: console}\n"+
		"targets:\n  infra-prd: {simulator: {}, vars: {zone: infra-prd, target: infra}}\n"+
		"web: {url: \"https://gc.example.com\", link_ttl: 3d"+extra+"}\n"), 0o600))
	db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, db.CreateRun(context.Background(), &runmodel.Run{ID: "r-web0000001", Runbook: "worker-stalled", Target: "infra-prd",
		State: runmodel.RunSucceeded, CreatedAt: now, UpdatedAt: now, FinishedAt: now}, nil))
	in := &incident.Incident{ID: "i-3f2a9c", Key: "k", State: incident.StateOpen, OpenedAt: now, UpdatedAt: now}
	_, err = db.UpsertIncident(context.Background(), "k", func(*incident.Incident) (*incident.Incident, error) { return in, nil })
	require.NoError(t, err)
	require.NoError(t, db.Close())
	return p
}

// linkOf returns the link a web link printed, its token and the line
// after it.
func linkOf(t *testing.T, out string) (*url.URL, string, string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	u, err := url.Parse(lines[0])
	require.NoError(t, err, out)
	return u, u.Query().Get("t"), lines[1]
}

func TestWebLink_SignsTheIndexRunsIncidentsAndTargets(t *testing.T) {
	cfg := webLinkConfig(t, ", link_key_file: link-key")
	signer, err := web.NewSigner([]byte(webLinkKey))
	require.NoError(t, err)

	out, err := run(t, "", "web", "link", "--config", cfg)
	require.NoError(t, err, out)
	u, tok, said := linkOf(t, out)
	assert.Equal(t, "https://gc.example.com/", u.Scheme+"://"+u.Host+u.Path)
	exp, err := signer.Verify(web.ScopeSite, tok, time.Now())
	require.NoError(t, err, "a link for every page, with the configured key")
	assert.WithinDuration(t, time.Now().Add(3*24*time.Hour), exp, time.Minute, "web.link_ttl from now")
	assert.Regexp(t, `^Valid until \d{4}-\d\d-\d\d \d\d:\d\d UTC \(3 days\); opens every page: the index, every run, incident and target\.$`, said)
	assert.Contains(t, said, exp.UTC().Format("2006-01-02 15:04 UTC"))

	out, err = run(t, "", "web", "link", "run", "R-WEB0000001", "--config", cfg, "--ttl", "12h")
	require.NoError(t, err, out)
	u, tok, said = linkOf(t, out)
	assert.Equal(t, "/runs/r-web0000001", u.Path)
	exp, err = signer.Verify(web.RunScope("r-web0000001"), tok, time.Now())
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(12*time.Hour), exp, time.Minute)
	_, err = signer.Verify(web.ScopeSite, tok, time.Now())
	assert.ErrorIs(t, err, web.ErrTokenInvalid, "a run's link opens that run only")
	assert.Contains(t, said, "(12 h); opens run r-web0000001's page, its Markdown and live updates.")

	out, err = run(t, "", "web", "link", "incident", "i-3f2a9c", "--config", cfg)
	require.NoError(t, err, out)
	u, tok, _ = linkOf(t, out)
	assert.Equal(t, "/incidents/i-3f2a9c", u.Path)
	_, err = signer.Verify(web.IncidentScope("i-3f2a9c"), tok, time.Now())
	require.NoError(t, err)

	out, err = run(t, "", "web", "link", "target", "infra-prd", "--config", cfg)
	require.NoError(t, err, out)
	u, tok, said = linkOf(t, out)
	assert.Equal(t, "/targets/infra-prd", u.Path)
	_, err = signer.Verify(web.ScopeSite, tok, time.Now())
	require.NoError(t, err)
	assert.Contains(t, said, "a target's page needs a link for every page")

	// without a look-up, for an id the store does not have
	out, err = run(t, "", "web", "link", "run", "r-notyet00001", "--no-check", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "/runs/r-notyet00001?t=")
}

func TestWebLink_Refusals(t *testing.T) {
	cfg := webLinkConfig(t, ", link_key_file: link-key")
	cases := map[string][]string{
		`no run "r-nothere0001" in `:                           {"run", "r-nothere0001"},
		`no incident "i-nothere" in `:                          {"incident", "i-nothere"},
		`no target "infra-prod" in `:                           {"target", "infra-prod"},
		`(did you mean "infra-prd"?)`:                          {"target", "infra-prod"},
		`"rn" is not a page (did you mean "run"?)`:             {"rn", "r-web0000001"},
		"say what it is: groundcrew web link run r-web0000001": {"r-web0000001"},
		"run needs its id":                                     {"run"},
		`"r-1/../x" is not a run id`:                           {"run", "r-1/../x"},
		"is longer than web.link_ttl (3 days)":                 {"--ttl", "4d"},
		`--ttl "soon": write hours ("12h") or days ("3d")`:     {"--ttl", "soon"},
	}
	for want, args := range cases {
		t.Run(want, func(t *testing.T) {
			out, err := run(t, "", append([]string{"web", "link", "--config", cfg}, args...)...)
			require.Error(t, err, out)
			assert.Contains(t, err.Error(), want)
		})
	}

	bare := filepath.Join(t.TempDir(), "groundcrew.yaml")
	require.NoError(t, os.WriteFile(bare, []byte("store: gc.db\nchat: {platform: console}\ntargets: {infra-prd: {simulator: {}}}\n"), 0o600))
	_, err := run(t, "", "web", "link", "--config", bare)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "web: is not configured in "+bare)

	// an authenticating proxy only: the address, and who lets people in
	proxy := webLinkConfig(t, ", trusted_header: X-Forwarded-User, trusted_proxies: [10.0.0.0/8]")
	out, err := run(t, "", "web", "link", "--config", proxy)
	require.NoError(t, err, out)
	assert.Equal(t, "https://gc.example.com/\nNo link key (web.link_key_file): this address is opened through the proxy (web.trusted_header X-Forwarded-User), which signs people in.\n", out)
}

// TestWebLink_LooksUpThroughTheAdminSocketWhileServeRuns: serve holds the
// store; the look-up goes through its admin socket.
func TestWebLink_LooksUpThroughTheAdminSocketWhileServeRuns(t *testing.T) {
	cfg := webLinkConfig(t, ", link_key_file: link-key")
	dir := filepath.Dir(cfg)
	db, err := store.Open(filepath.Join(dir, "gc.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	ln, err := net.Listen("unix", filepath.Join(dir, "gc.sock"))
	require.NoError(t, err)
	srv := &http.Server{Handler: adminHandler(db, nil)}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	out, err := run(t, "", "web", "link", "incident", "I-3F2A9C", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "/incidents/i-3f2a9c?t=")
	out, err = run(t, "", "web", "link", "run", "r-web0000001", "--config", cfg)
	require.NoError(t, err, out)
	assert.Contains(t, out, "/runs/r-web0000001?t=")
	_, err = run(t, "", "web", "link", "incident", "i-nothere", "--config", cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `no incident "i-nothere"`)
}

func TestWebLink_DuringARotationSignsWithTheNewKey(t *testing.T) {
	cfg := webLinkConfig(t, ", link_key_file: link-key, previous_link_key: "+webOldKey)
	out, err := run(t, "", "web", "link", "--config", cfg)
	require.NoError(t, err, out)
	_, tok, _ := linkOf(t, out)
	old, _ := web.NewSigner([]byte(webOldKey))
	_, err = old.Verify(web.ScopeSite, tok, time.Now())
	assert.ErrorIs(t, err, web.ErrTokenInvalid, "never signed with the previous key")
}

func TestWebLink_Help(t *testing.T) {
	out, err := run(t, "", "web", "link", "--help")
	require.NoError(t, err)
	assert.Regexp(t, regexp.MustCompile(`groundcrew web link \[/ \| run <id> \| incident <id> \| target <name>\]`), out)
	for _, want := range []string{"--ttl", "--no-check", "web.link_ttl", "opens every page"} {
		assert.Contains(t, out, want)
	}
}
