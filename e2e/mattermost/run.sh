#!/usr/bin/env bash
# Runs the Mattermost end-to-end tests: builds (once, cached) a real
# Mattermost server and its mmctl from the Go module proxy, makes sure PostgreSQL answers
# on 127.0.0.1:5432, then runs `go test` in this module. Extra arguments go
# to `go test` (e.g. -run TestAdapterAgainstServer -v).
#
# Environment:
#   GROUNDCREW_E2E_MATTERMOST_BINARY  use this server binary instead of building
#   GROUNDCREW_E2E_MMCTL              use this mmctl binary instead of building
#   GROUNDCREW_E2E_ALERTMANAGER_BINARY use this Alertmanager (TestHungMattermost…; default:
#                                     e2e/alertmanager's cached build, built when missing)
#   GROUNDCREW_E2E_POSTGRES           admin DSN (default postgres://postgres@127.0.0.1:5432/postgres)
#   GROUNDCREW_E2E_VERBOSE=1          print the adapter's debug log
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
version="11.1.0"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/groundcrew/mattermost-${version}"
bin="${GROUNDCREW_E2E_MATTERMOST_BINARY:-$cache/mattermost}"

if [[ ! -x "$bin" ]]; then
	echo "== building Mattermost ${version} into ${bin} (2-3 min the first time)"
	mkdir -p "$(dirname "$bin")"
	(cd "$here/server" && GOFLAGS=-mod=mod GOWORK=off go build -o "$bin.tmp" github.com/mattermost/mattermost/server/v8/cmd/mattermost)
	mv "$bin.tmp" "$bin"
fi
export GROUNDCREW_E2E_MATTERMOST_BINARY="$bin"

mmctl="${GROUNDCREW_E2E_MMCTL:-$cache/mmctl}"
if [[ ! -x "$mmctl" ]]; then
	echo "== building mmctl ${version} into ${mmctl} (1-2 min after the server)"
	mkdir -p "$(dirname "$mmctl")"
	(cd "$here/server" && GOFLAGS=-mod=mod GOWORK=off go build -o "$mmctl.tmp" github.com/mattermost/mattermost/server/v8/cmd/mmctl)
	mv "$mmctl.tmp" "$mmctl"
fi
export GROUNDCREW_E2E_MMCTL="$mmctl"

if [[ -z "${GROUNDCREW_E2E_POSTGRES:-}" ]] && command -v pg_isready >/dev/null; then
	if ! pg_isready -q -h 127.0.0.1 -p 5432; then
		echo "== PostgreSQL is not answering on 127.0.0.1:5432; trying to start it"
		if command -v pg_ctlcluster >/dev/null; then
			pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
		fi
		for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
	fi
fi

echo "== Mattermost end-to-end tests"
cd "$here"
GOFLAGS=-mod=mod GOWORK=off go test -count=1 -timeout 10m "$@" ./...
