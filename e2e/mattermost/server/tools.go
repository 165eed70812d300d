//go:build tools

// Package server pins the Mattermost server module used by the end-to-end
// tests: the server itself and mmctl, its admin CLI (the adapter README's
// setup commands are run with it).
package server

import (
	_ "github.com/mattermost/mattermost/server/v8/cmd/mattermost"
	_ "github.com/mattermost/mattermost/server/v8/cmd/mmctl"
)
