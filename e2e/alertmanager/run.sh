#!/usr/bin/env bash
# Runs the Alertmanager end-to-end test: builds (once, cached) a real
# Alertmanager from the Go module proxy, then runs `go test` in this module,
# which builds groundcrew, starts `groundcrew serve` (console chat, simulated
# Concourse) and Alertmanager on loopback, posts alerts to Alertmanager's API
# and checks the incident thread. Extra arguments go to `go test`.
#
# Environment:
#   GROUNDCREW_E2E_ALERTMANAGER_BINARY  use this Alertmanager binary instead of building
#   GROUNDCREW_E2E_VERBOSE=1            print groundcrew's and Alertmanager's output
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# v0.31.1 is the newest release that builds from the module proxy: from
# v0.32 the UI assets are generated at release time and not in the module.
version="0.31.1"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/groundcrew/alertmanager-${version}"
bin="${GROUNDCREW_E2E_ALERTMANAGER_BINARY:-$cache/alertmanager}"

if [[ ! -x "$bin" ]]; then
	echo "== building Alertmanager ${version} into ${bin} (about a minute the first time)"
	mkdir -p "$(dirname "$bin")"
	(cd "$here/server" && GOFLAGS=-mod=mod GOWORK=off go build -o "$bin.tmp" github.com/prometheus/alertmanager/cmd/alertmanager)
	mv "$bin.tmp" "$bin"
fi
export GROUNDCREW_E2E_ALERTMANAGER_BINARY="$bin"

echo "== Alertmanager end-to-end tests"
cd "$here"
GOFLAGS=-mod=mod GOWORK=off go test -count=1 -timeout 5m "$@" ./...
