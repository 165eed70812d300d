package mattermost

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/groundcrew/groundcrew/internal/secret"
)

func TestNew_Config(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "bot")
	require.NoError(t, os.WriteFile(tokenFile, []byte("from-file\n"), 0o600))
	valid := Config{URL: "https://chat.example.com/", BotToken: "tok", CommandToken: "ct"}

	tests := []struct {
		name    string
		mod     func(c *Config)
		wantErr string // substring; "" means valid
	}{
		{name: "minimal", mod: func(c *Config) {}},
		{name: "missing url", mod: func(c *Config) { c.URL = "" }, wantErr: "chat.mattermost.url"},
		{name: "url without scheme", mod: func(c *Config) { c.URL = "chat.example.com" }, wantErr: "chat.mattermost.url"},
		{name: "missing bot token", mod: func(c *Config) { c.BotToken = "" }, wantErr: "bot_token is required"},
		{name: "token inline and file", mod: func(c *Config) { c.BotTokenFile = tokenFile }, wantErr: "both inline and as a file"},
		{name: "token from file", mod: func(c *Config) { c.BotToken, c.BotTokenFile = "", tokenFile }},
		{name: "no command token without registration", mod: func(c *Config) { c.CommandToken = "" }, wantErr: "command_token is required"},
		{name: "callback without key", mod: func(c *Config) { c.CallbackURL = "http://gc:8080" }, wantErr: "action_hmac_key"},
		{name: "callback with short key", mod: func(c *Config) { c.CallbackURL, c.ActionHMACKey = "http://gc:8080", "short" }, wantErr: "at least 16"},
		{name: "bad callback", mod: func(c *Config) { c.CallbackURL, c.ActionHMACKey = "gc:8080", testKey }, wantErr: "callback_url"},
		{name: "register without team", mod: func(c *Config) {
			c.RegisterCommand, c.CallbackURL, c.ActionHMACKey = true, "http://gc:8080", testKey
		}, wantErr: "team is required"},
		{name: "register without callback", mod: func(c *Config) { c.RegisterCommand, c.Team = true, "ops" }, wantErr: "callback_url is required"},
		{name: "register without command token", mod: func(c *Config) {
			c.RegisterCommand, c.Team, c.CallbackURL, c.ActionHMACKey, c.CommandToken = true, "ops", "http://gc:8080", testKey, ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := valid
			tt.mod(&cfg)
			a, err := New(cfg, Options{})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrConfig), "errors.Is(err, ErrConfig): %v", err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "https://chat.example.com", a.cfg.url)
			assert.Equal(t, "wss://chat.example.com", a.cfg.wsURL)
		})
	}
}

func TestNew_SecretFromFileAndEnv(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "bot")
	require.NoError(t, os.WriteFile(tokenFile, []byte("from-file\n"), 0o600))
	cfg := Config{URL: "http://mm:8065", BotTokenFile: tokenFile, CommandToken: "ct"}

	a, err := New(cfg, Options{})
	require.NoError(t, err)
	assert.Equal(t, "from-file", a.cfg.botToken)
	assert.Equal(t, "ws://mm:8065", a.cfg.wsURL)

	t.Setenv(EnvBotToken, "from-env")
	a, err = New(cfg, Options{})
	require.NoError(t, err)
	assert.Equal(t, "from-env", a.cfg.botToken)
}

func TestConfig_SecretsAreRedacted(t *testing.T) {
	cfg := Config{BotToken: secret.Secret("very-secret")}
	assert.NotContains(t, cfg.BotToken.String(), "very-secret")
}
