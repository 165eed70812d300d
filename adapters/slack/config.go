package slack

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/groundcrew/groundcrew/internal/secret"
)

// Transport modes.
const (
	// ModeSocket receives events over a Socket Mode WebSocket (no public URL).
	ModeSocket = "socket"
	// ModeHTTP receives slash commands, events and interactions as signed
	// HTTP requests on HTTPHandler.
	ModeHTTP = "http"
)

// Defaults applied by New.
const (
	DefaultUsergroupCacheTTL = 5 * time.Minute
)

// Environment variables that override the secrets of Config.
const (
	EnvBotToken      = "GROUNDCREW_SLACK_BOT_TOKEN"
	EnvAppToken      = "GROUNDCREW_SLACK_APP_TOKEN"
	EnvSigningSecret = "GROUNDCREW_SLACK_SIGNING_SECRET"
)

// ErrInvalidConfig is wrapped by every configuration error of New.
var ErrInvalidConfig = errors.New("invalid slack configuration")

// Config is the chat.slack section of groundcrew.yaml. Each secret is given
// inline, as a file (<name>_file) or through its GROUNDCREW_SLACK_* variable.
type Config struct {
	// Mode is "socket" (default) or "http".
	Mode string `yaml:"mode"`
	// AppToken is the app-level token (xapp-…, scope connections:write),
	// needed in socket mode only.
	AppToken     secret.Secret `yaml:"app_token"`
	AppTokenFile string        `yaml:"app_token_file"`
	// BotToken is the bot user OAuth token (xoxb-…), always needed.
	BotToken     secret.Secret `yaml:"bot_token"`
	BotTokenFile string        `yaml:"bot_token_file"`
	// SigningSecret verifies inbound requests in http mode.
	SigningSecret     secret.Secret `yaml:"signing_secret"`
	SigningSecretFile string        `yaml:"signing_secret_file"`
	// UsergroupCacheTTL is how long usergroup handles are cached here and
	// members by the engine (its one group cache) (default 5m).
	UsergroupCacheTTL time.Duration `yaml:"usergroup_cache_ttl"`
}

// resolve returns c with its secrets read and defaults applied, or an error
// naming the config key at fault. Errors never contain secret values.
func (c Config) resolve() (Config, error) {
	const prefix = "chat.slack."
	var err error
	if c.BotToken, err = secret.Resolve(prefix+"bot_token", c.BotToken, c.BotTokenFile, EnvBotToken); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.AppToken, err = secret.Resolve(prefix+"app_token", c.AppToken, c.AppTokenFile, EnvAppToken); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.SigningSecret, err = secret.Resolve(prefix+"signing_secret", c.SigningSecret, c.SigningSecretFile, EnvSigningSecret); err != nil {
		return c, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.Mode == "" {
		c.Mode = ModeSocket
	}
	if c.UsergroupCacheTTL == 0 {
		c.UsergroupCacheTTL = DefaultUsergroupCacheTTL
	}
	return c, c.validate()
}

func (c Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: chat.slack.%s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch c.Mode {
	case ModeSocket, ModeHTTP:
	default:
		return bad("mode: %q is not socket or http", c.Mode)
	}
	switch {
	case !c.BotToken.IsSet():
		return bad("bot_token: required (the xoxb- bot token; set bot_token_file or %s)", EnvBotToken)
	case !strings.HasPrefix(c.BotToken.Value(), "xoxb-"):
		return bad("bot_token: not a bot token (it must start with xoxb-)")
	}
	if c.Mode == ModeSocket {
		switch {
		case !c.AppToken.IsSet():
			return bad("app_token: required in socket mode (an xapp- app-level token with connections:write; set app_token_file or %s)", EnvAppToken)
		case !strings.HasPrefix(c.AppToken.Value(), "xapp-"):
			return bad("app_token: not an app-level token (it must start with xapp-)")
		}
	}
	if c.Mode == ModeHTTP && !c.SigningSecret.IsSet() {
		return bad("signing_secret: required in http mode (Basic Information → Signing Secret; set signing_secret_file or %s)", EnvSigningSecret)
	}
	if c.UsergroupCacheTTL < 0 {
		return bad("usergroup_cache_ttl: %s is negative", c.UsergroupCacheTTL)
	}
	return nil
}
