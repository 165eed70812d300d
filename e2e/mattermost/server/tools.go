//go:build tools

// Package server pins the Mattermost server module used by the end-to-end tests.
package server

import _ "github.com/mattermost/mattermost/server/v8/cmd/mattermost"
