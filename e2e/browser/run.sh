#!/usr/bin/env bash
# Runs the browser end-to-end test: installs Debian's chromium (and an
# emoji font, for the screenshots) when it is missing, then runs `go test`
# in this module, which builds groundcrew, starts `groundcrew serve`
# (console chat, simulated Concourse, web: with signed links), runs a
# runbook through the console and reads its page in headless Chromium.
# Extra arguments go to `go test`.
#
# Environment:
#   GROUNDCREW_E2E_CHROMIUM      use this browser binary
#   GROUNDCREW_E2E_SCREENSHOTS   also copy the screenshots to this directory
#   GROUNDCREW_E2E_VERBOSE=1     print groundcrew's output
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
browser="${GROUNDCREW_E2E_CHROMIUM:-$(command -v chromium || true)}"
if [[ -z "$browser" ]]; then
	echo "== installing chromium (Debian package)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null
	apt-get install -y -qq chromium fonts-noto-color-emoji >/dev/null
	browser="$(command -v chromium)"
fi
if ! fc-list 2>/dev/null | grep -qi "emoji"; then
	# the pages use emoji for states; without a font the screenshots show boxes
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-color-emoji >/dev/null 2>&1 || true
fi
export GROUNDCREW_E2E_CHROMIUM="$browser"

echo "== browser end-to-end test ($("$browser" --version 2>/dev/null || echo chromium))"
cd "$here"
GOFLAGS=-mod=mod GOWORK=off go test -count=1 -timeout 8m "$@" ./...
