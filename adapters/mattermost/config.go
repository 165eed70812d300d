package mattermost

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/secret"
)

// Config is the mattermost section of groundcrew.yaml (chat.mattermost).
// Each secret may be given inline, as a file (<name>_file) or through the
// environment (GROUNDCREW_MATTERMOST_BOT_TOKEN, …_COMMAND_TOKEN,
// …_ACTION_HMAC_KEY), which wins.
type Config struct {
	// URL is the Mattermost server's root URL ("https://chat.example.com"),
	// without /api/v4.
	URL string `yaml:"url"`
	// BotToken is the bot account's access token.
	BotToken     secret.Secret `yaml:"bot_token"`
	BotTokenFile string        `yaml:"bot_token_file"`
	// CommandToken is the verification token Mattermost generated for the
	// /runbook slash command. Optional with RegisterCommand: the token of
	// the registered command is then used (both are accepted if both exist).
	CommandToken     secret.Secret `yaml:"command_token"`
	CommandTokenFile string        `yaml:"command_token_file"`
	// ActionHMACKey signs the context of interactive buttons (Mattermost
	// does not sign button callbacks). At least 16 bytes; required when
	// CallbackURL is set.
	ActionHMACKey     secret.Secret `yaml:"action_hmac_key"`
	ActionHMACKeyFile string        `yaml:"action_hmac_key_file"`
	// Team is the team name ("ops") used to register the command, resolve
	// "#channel" names and look up team admins.
	Team string `yaml:"team"`
	// CallbackURL is how Mattermost reaches groundcrew's HTTP server
	// ("https://groundcrew.internal:8080"); the command URL is
	// <callback_url>/mattermost/command and buttons call
	// <callback_url>/mattermost/action. Without it no buttons are shown
	// (users react instead).
	CallbackURL string `yaml:"callback_url"`
	// RegisterCommand makes the adapter create (or fix) the /runbook command
	// in Team on start-up. Needs a bot allowed to manage slash commands.
	RegisterCommand bool `yaml:"register_command"`
	// AllowedSources lists the addresses (CIDRs like 10.0.4.0/24, or
	// single IPs) allowed to call /mattermost/*: the Mattermost server's.
	// Requests from anywhere else are refused with 403 and logged. The
	// address is the TCP peer's: behind a reverse proxy, list the proxy and
	// let only the Mattermost server through it. Empty: no check (then keep
	// the endpoints reachable only from the Mattermost server by network
	// policy).
	AllowedSources []string `yaml:"allowed_sources"`
}

// Options are the adapter's non-config dependencies.
type Options struct {
	// Logger defaults to a logger that discards everything.
	Logger *slog.Logger
	// HTTPClient is used for REST calls; defaults to a client with a 30 s
	// timeout.
	HTTPClient *http.Client
	// ReactionWindow is how long a posted message is watched so that its
	// reactions are re-read after a WebSocket reconnect (default 24h).
	ReactionWindow time.Duration
}

// Environment variables that override the secrets of Config.
const (
	EnvBotToken      = "GROUNDCREW_MATTERMOST_BOT_TOKEN"
	EnvCommandToken  = "GROUNDCREW_MATTERMOST_COMMAND_TOKEN"
	EnvActionHMACKey = "GROUNDCREW_MATTERMOST_ACTION_HMAC_KEY"
)

// ErrConfig is wrapped by every configuration error New returns.
var ErrConfig = errors.New("invalid mattermost config")

// resolved is Config after secrets were read and values checked.
type resolved struct {
	url          string // without trailing slash
	wsURL        string
	botToken     string
	commandToken string
	hmacKey      []byte
	team         string
	callbackURL  string // without trailing slash
	register     bool
	sources      []netip.Prefix
}

func (c Config) resolve() (resolved, error) {
	var r resolved
	bad := func(format string, args ...any) (resolved, error) {
		return resolved{}, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	u, err := url.Parse(strings.TrimSpace(c.URL))
	if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("chat.mattermost.url: %q is not an http(s) URL like https://chat.example.com", c.URL)
	}
	r.url = strings.TrimRight(u.String(), "/")
	r.url = strings.TrimSuffix(r.url, "/api/v4")
	r.wsURL = "ws" + strings.TrimPrefix(r.url, "http") // http→ws, https→wss

	tok, err := secret.Resolve("chat.mattermost.bot_token", c.BotToken, c.BotTokenFile, EnvBotToken)
	if err != nil {
		return resolved{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !tok.IsSet() {
		return bad("chat.mattermost.bot_token is required (or bot_token_file, or %s)", EnvBotToken)
	}
	r.botToken = tok.Value()

	ct, err := secret.Resolve("chat.mattermost.command_token", c.CommandToken, c.CommandTokenFile, EnvCommandToken)
	if err != nil {
		return resolved{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	r.commandToken = ct.Value()
	r.register = c.RegisterCommand
	if r.commandToken == "" && !r.register {
		return bad("chat.mattermost.command_token is required unless register_command is true")
	}

	key, err := secret.Resolve("chat.mattermost.action_hmac_key", c.ActionHMACKey, c.ActionHMACKeyFile, EnvActionHMACKey)
	if err != nil {
		return resolved{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	r.hmacKey = []byte(key.Value())

	r.team = strings.TrimSpace(c.Team)
	if c.CallbackURL != "" {
		cu, err := url.Parse(c.CallbackURL)
		if err != nil || (cu.Scheme != "http" && cu.Scheme != "https") || cu.Host == "" {
			return bad("chat.mattermost.callback_url: %q is not an http(s) URL", c.CallbackURL)
		}
		r.callbackURL = strings.TrimRight(cu.String(), "/")
		if len(r.hmacKey) < 16 {
			return bad("chat.mattermost.action_hmac_key must be at least 16 characters when callback_url is set (buttons are signed with it); generate one with `openssl rand -hex 32`")
		}
	}
	for i, src := range c.AllowedSources {
		src = strings.TrimSpace(src)
		p, err := netip.ParsePrefix(src)
		if err != nil {
			a, aerr := netip.ParseAddr(src)
			if aerr != nil {
				return bad("chat.mattermost.allowed_sources[%d]: %q is neither a CIDR (10.0.4.0/24) nor an IP address", i, src)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		r.sources = append(r.sources, p.Masked())
	}
	if r.register {
		if r.team == "" {
			return bad("chat.mattermost.team is required with register_command")
		}
		if r.callbackURL == "" {
			return bad("chat.mattermost.callback_url is required with register_command (the command URL is <callback_url>/mattermost/command)")
		}
	}
	return r, nil
}
