// Package chatplatform is the one registry of chat platforms: the chat
// section of groundcrew.yaml (Config), and for each platform how to build
// its adapter and where its HTTP endpoints go. config validates platform
// names against it; cmd/groundcrew builds the adapter from it (serve,
// demo, config check). Adding a platform is an adapter package, a field in
// Config and an entry in Platforms.
package chatplatform

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/adapters/console"
	"github.com/groundcrew/groundcrew/adapters/mattermost"
	"github.com/groundcrew/groundcrew/adapters/slack"
	"github.com/groundcrew/groundcrew/model/chatmodel"
)

// Config is the chat section of groundcrew.yaml: which platform, and each
// platform's settings.
type Config struct {
	Platform   string            `yaml:"platform"` // see Platforms
	Console    console.Config    `yaml:"console"`
	Slack      slack.Config      `yaml:"slack"`
	Mattermost mattermost.Config `yaml:"mattermost"`
}

// Deps are what an adapter needs from the process. All are optional: a
// zero Deps builds an adapter that only checks its settings (config check).
type Deps struct {
	Logger *slog.Logger
	// HTTPClient returns the client for a platform's API calls.
	HTTPClient func(platform string) *http.Client
	// Console's terminal.
	In      io.Reader
	Out     io.Writer
	Console console.Options
}

// Chat is what every chat adapter offers the binary.
type Chat interface {
	chatmodel.Chat
	// Run receives events for h until ctx ends.
	Run(ctx context.Context, h chatmodel.Handler) error
}

// Adapter is a built chat adapter.
type Adapter struct {
	Chat Chat
	// Path and Handler: the HTTP endpoints to mount on groundcrew's server
	// (Path "" for none).
	Path    string
	Handler http.Handler
	// Console is true for the terminal chat.
	Console bool
	// GroupTTL is how long the engine caches group members (0: its
	// default), from the platform's settings.
	GroupTTL time.Duration
}

// Platform builds one platform's adapter.
type Platform struct {
	Open func(c Config, d Deps) (Adapter, error)
}

// Platforms is the registry, by the name used in chat.platform.
var Platforms = map[string]Platform{
	"console": {Open: func(c Config, d Deps) (Adapter, error) {
		out := d.Out
		if out == nil {
			out = io.Discard
		}
		return Adapter{Chat: console.New(c.Console, d.In, out, d.Console), Console: true}, nil
	}},
	"slack": {Open: func(c Config, d Deps) (Adapter, error) {
		s, err := slack.New(c.Slack, slack.Options{Logger: d.Logger, HTTPClient: client(d, "slack")})
		if err != nil {
			return Adapter{}, err
		}
		return Adapter{Chat: s, Path: "/slack/", Handler: s.HTTPHandler(), GroupTTL: c.Slack.UsergroupCacheTTL}, nil
	}},
	"mattermost": {Open: func(c Config, d Deps) (Adapter, error) {
		m, err := mattermost.New(c.Mattermost, mattermost.Options{Logger: d.Logger, HTTPClient: client(d, "mattermost")})
		if err != nil {
			return Adapter{}, fmt.Errorf("chat.mattermost: %w", err)
		}
		return Adapter{Chat: m, Path: "/mattermost/", Handler: m.HTTPHandler()}, nil
	}},
}

func client(d Deps, platform string) *http.Client {
	if d.HTTPClient == nil {
		return nil
	}
	return d.HTTPClient(platform)
}

// Names returns the registered platform names, sorted.
func Names() []string {
	out := make([]string, 0, len(Platforms))
	for n := range Platforms {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Known reports whether name is a registered platform.
func Known(name string) bool {
	_, ok := Platforms[name]
	return ok
}

// Open builds the adapter of c.Platform.
func Open(c Config, d Deps) (Adapter, error) {
	p, ok := Platforms[c.Platform]
	if !ok {
		return Adapter{}, fmt.Errorf("chat.platform: %q is not a platform: use %s", c.Platform, strings.Join(Names(), ", "))
	}
	return p.Open(c, d)
}
