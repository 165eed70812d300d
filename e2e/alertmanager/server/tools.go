//go:build tools

// Package server pins the Alertmanager module used by the end-to-end tests.
package server

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
