package slack

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/groundcrew/groundcrew/internal/secret"
)

func TestNew_Config(t *testing.T) {
	dir := t.TempDir()
	botFile := filepath.Join(dir, "bot")
	require.NoError(t, os.WriteFile(botFile, []byte("xoxb-from-file\n"), 0o600))

	tests := []struct {
		name    string
		cfg     Config
		env     map[string]string
		wantErr string // substring; "" = valid
		check   func(t *testing.T, a *Adapter)
	}{
		{
			name: "socket by default",
			cfg:  Config{BotToken: "xoxb-1", AppToken: "xapp-1"},
			check: func(t *testing.T, a *Adapter) {
				assert.Equal(t, ModeSocket, a.Mode())
				assert.Equal(t, DefaultUsergroupCacheTTL, a.cfg.UsergroupCacheTTL)
			},
		},
		{
			name: "bot token from file",
			cfg:  Config{BotTokenFile: botFile, AppToken: "xapp-1"},
			check: func(t *testing.T, a *Adapter) {
				assert.Equal(t, "xoxb-from-file", a.cfg.BotToken.Value())
			},
		},
		{
			name: "env wins",
			cfg:  Config{BotToken: "xoxb-inline", AppToken: "xapp-1"},
			env:  map[string]string{EnvBotToken: "xoxb-env"},
			check: func(t *testing.T, a *Adapter) {
				assert.Equal(t, "xoxb-env", a.cfg.BotToken.Value())
			},
		},
		{name: "http mode", cfg: Config{Mode: ModeHTTP, BotToken: "xoxb-1", SigningSecret: "s"}},
		{name: "no bot token", cfg: Config{AppToken: "xapp-1"}, wantErr: "chat.slack.bot_token: required"},
		{name: "swapped tokens", cfg: Config{BotToken: "xapp-1", AppToken: "xoxb-1"}, wantErr: "must start with xoxb-"},
		{name: "socket without app token", cfg: Config{BotToken: "xoxb-1"}, wantErr: "chat.slack.app_token: required in socket mode"},
		{name: "app token of the wrong kind", cfg: Config{BotToken: "xoxb-1", AppToken: "xoxp-1"}, wantErr: "must start with xapp-"},
		{name: "http without signing secret", cfg: Config{Mode: ModeHTTP, BotToken: "xoxb-1"}, wantErr: "chat.slack.signing_secret: required in http mode"},
		{name: "bad mode", cfg: Config{Mode: "rtm", BotToken: "xoxb-1"}, wantErr: `chat.slack.mode: "rtm"`},
		{name: "inline and file", cfg: Config{BotToken: "xoxb-1", BotTokenFile: botFile, AppToken: "xapp-1"}, wantErr: "either"},
		{name: "missing file", cfg: Config{BotTokenFile: filepath.Join(dir, "nope"), AppToken: "xapp-1"}, wantErr: "bot_token_file"},
		{name: "negative ttl", cfg: Config{BotToken: "xoxb-1", AppToken: "xapp-1", UsergroupCacheTTL: -time.Second}, wantErr: "usergroup_cache_ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{EnvBotToken, EnvAppToken, EnvSigningSecret} {
				t.Setenv(k, tt.env[k])
			}
			a, err := New(tt.cfg, Options{})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidConfig)
				assert.Contains(t, err.Error(), tt.wantErr)
				for _, s := range []secret.Secret{tt.cfg.BotToken, tt.cfg.AppToken, tt.cfg.SigningSecret} {
					if len(s) > 6 {
						assert.NotContains(t, err.Error(), s.Value(), "no secret in errors")
					}
				}
				return
			}
			require.NoError(t, err)
			if tt.check != nil {
				tt.check(t, a)
			}
		})
	}
}

func TestConfig_YAML(t *testing.T) {
	src := `
mode: http
bot_token_file: /run/secrets/slack-bot
signing_secret_file: /run/secrets/slack-signing
usergroup_cache_ttl: 2m
`
	var c Config
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&c))
	assert.Equal(t, Config{Mode: ModeHTTP, BotTokenFile: "/run/secrets/slack-bot", SigningSecretFile: "/run/secrets/slack-signing", UsergroupCacheTTL: 2 * time.Minute}, c)
}
